"""Verify a training step's optimizer update (docs/training.md, "Verification"): the IR of
each parameter's update runs (the numba executor) on random ``p, g, m, v`` and is compared with
one step of ``torch.optim.AdamW(foreach=False)`` / ``torch.optim.SGD`` from the same values,
with the verifier's whole-tensor tolerance (``verify.core.compare_full``, the dtype's RTOL).

The update does not depend on the values the forward computes, so random values check it as
well as golden ones would. The parameters are scaled to the learning rate, so the update is a
large part of each value and the comparison sees it, not only the parameter it is added to.
"""

from __future__ import annotations

import copy
import time

import numpy as np

from solar_lsp.frontend.optimizer import NOTE, SGD, AdamW, Slot, slots
from solar_lsp.ir.core import Program
from solar_lsp.ir.execute import run_program_ops
from solar_lsp.verify.core import RTOL, compare_full, keep_worst

CHECK_ELEMENTS = 1 << 22  # parameter elements checked per entry (the smallest parameters first)


def check_optimizer(program: Program, config, seed: int = 0, hp: AdamW | SGD | None = None,
                    step: int = 1) -> dict:
    """The verification JSON of ``program``'s optimizer ops (``config.optimizer``): status
    verified / mismatch / unverified, a detail, the parameters checked and the worst point.
    ``hp`` and ``step`` must be the ones the update was built with (the defaults of
    ``pipeline.train.finish_train_program``)."""
    t0 = time.perf_counter()
    opt = getattr(config, "optimizer", "adamw")
    found = slots(program)
    if opt == "none" or not found:
        return {"status": "verified", "detail": "no optimizer update in the program",
                "checked": 0, "parameters": 0, "seconds": time.perf_counter() - t0}
    try:
        import torch
    except ImportError:
        return {"status": "unverified", "detail": "torch is not installed: the optimizer update "
                "is checked against torch.optim", "checked": 0, "parameters": len(found)}
    hp = hp or (AdamW() if opt == "adamw" else SGD())
    todo, budget = [], CHECK_ELEMENTS
    for s in sorted(found, key=lambda s: program.tensors[s.param].numel):
        n = program.tensors[s.param].numel
        if todo and n > budget:
            break
        todo.append(s)
        budget -= n
    rng = np.random.default_rng(seed)
    worst = None
    for s in todo:
        worst = keep_worst(worst, _check_slot(program, s, opt, hp, step, rng, torch))
    out = {"checked": len(todo), "parameters": len(found), "seconds": time.perf_counter() - t0,
           "reference": f"torch.optim.{'AdamW' if opt == 'adamw' else 'SGD'}(foreach=False), one step"}
    skipped = f"; {len(found) - len(todo)} larger one(s) not run (same ops, other shapes)" \
        if len(todo) < len(found) else ""
    if worst is not None and worst["bad"]:
        w = {k: v for k, v in worst.items() if k != "bad"}
        return {**out, "status": "mismatch", "worst": w, "detail": (
            f"{w['tensor']}{w['index']}: torch {w['expected']:.6g}, IR {w['got']:.6g}")}
    return {**out, "status": "verified", "detail": (
        f"{len(todo)} parameter update(s) match torch.optim one step{skipped}")}


def _check_slot(program: Program, s: Slot, opt: str, hp, step: int, rng, torch) -> dict:
    """Run one parameter's update in the IR and in torch; the worst comparison of its outputs."""
    tt = program.tensors[s.param]
    dtype = getattr(torch, tt.dtype)
    shape = tt.shape
    gen = lambda a: torch.from_numpy(np.asarray(a, dtype=np.float64)).to(dtype)  # noqa: E731
    p, g = gen(rng.standard_normal(shape) * hp.lr), gen(rng.standard_normal(shape))
    state = ()
    if opt == "adamw":
        state = (gen(rng.standard_normal(shape) * 0.1), gen(rng.uniform(0.0, 1.0, shape)))
    got = _run_ir(program, s, [p, g, *state], torch)
    ref = _run_torch(torch, opt, hp, step, p, g, state)
    dt = tt.dtype if tt.dtype in RTOL else "float32"
    worst = None
    for name, r in zip((s.param_out, *s.state_out), ref):
        worst = keep_worst(worst, compare_full(name, got[name], r, dt, rng, 64))
    return worst


def _run_ir(program: Program, s: Slot, values: list, torch) -> dict[str, np.ndarray]:
    sub = copy.copy(program)
    sub.ops = [op for op in program.ops if op.phase == "optimizer" and op.note == NOTE + s.param]
    arrays = {name: v.to(dtype=torch.float64).numpy().copy()
              for name, v in zip((s.param, s.grad, *s.state), values)}
    run_program_ops(sub, arrays)
    return arrays


def _run_torch(torch, opt: str, hp, step: int, p, g, state) -> list[np.ndarray]:
    """One step of torch.optim from ``p, g`` and the state (``step - 1`` steps taken)."""
    param = torch.nn.Parameter(p.clone())
    param.grad = g.clone()
    if opt == "adamw":
        o = torch.optim.AdamW([param], lr=hp.lr, betas=(hp.beta1, hp.beta2), eps=hp.eps,
                              weight_decay=hp.weight_decay, foreach=False)
        o.state[param] = {"step": torch.tensor(float(step - 1)), "exp_avg": state[0].clone(),
                          "exp_avg_sq": state[1].clone()}
    else:
        o = torch.optim.SGD([param], lr=hp.lr, foreach=False)
    o.step()
    outs = [param.detach()]
    if opt == "adamw":
        outs += [o.state[param]["exp_avg"], o.state[param]["exp_avg_sq"]]
    return [t.to(torch.float64).numpy() for t in outs]
