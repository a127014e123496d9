"""Generate, then verify (docs/architecture.md §4): every IR kernel is executed by numba on the golden
inputs of its node and compared with torch's own output at sampled points.

In train mode the graph replayed is the training step's joint graph (frontend/torch/train.py):
the backward ops, and so the gradients, are checked against the values torch's autograd
computed for them, by the same rules as the forward ops.

The golden run replays the exported graph op by op on real tensors (the model's real
weights, the entry's real inputs), so each op is checked against exactly the values eager
PyTorch produced for it.
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import _disable_current_modes

from solar_lsp.frontend.errors import EntryError, Lowered
from solar_lsp.frontend.torch.devices import device_map
from solar_lsp.frontend.torch.metatrace import without_dynamo_import
from solar_lsp.frontend.torch.trace import Traced, build, constant_values
from solar_lsp.units import plural
from solar_lsp.verify.core import (  # noqa: F401  (re-exported: callers import them from here)
    DEFAULT_BUDGET,
    FULL_RUN_LIMIT,
    LAZY_BYTES,
    RTOL,
    SAMPLES,
    OpCheck,
    Verification,
    golden_bytes,
    lazy_weights,
    over_budget,
)
from solar_lsp.verify.counts import check_counts, with_counts
from solar_lsp.verify.counts_torch import NodeFlops, draw_weight, randomize_parameters
from solar_lsp.verify.op_check import RANDOM_DETAIL, check_op
from solar_lsp.verify.parts import (
    LOOP_DETAIL,
    StepInputs,
    batch_bytes,
    check_with_parts,
    counted_nodes,
    for_check,
    framework_counts,
    full_check_of,
    part_of,
    parts_by_owner,
    stacked_check,
)
from solar_lsp.verify.stream import (
    SCALED_SHARE,
    peak_bytes,
    plan_passes,
    release_memory,
    scaled_passes,
    schedule,
)


def verify(traced: Traced, lowered: Lowered, module: types.ModuleType,
           budget_bytes: int = DEFAULT_BUDGET, samples: int = SAMPLES, seed: int = 0) -> Verification:
    """Replay the entry's exported graph on real tensors and check every op of its IR, each
    as soon as its tensors exist, letting each tensor go after its last use (verify/stream.py);
    when cheap, again with the inputs scaled by each of ``SCALES``."""
    t0 = time.perf_counter()
    p = lowered.program
    # a training step's optimizer update has no node in the graph torch ran (docs/training.md)
    # an op emitted as parts (an RNN layer's loop bodies) is checked whole, as its owner op
    ops = [op for op in p.ops if op.phase != "optimizer" and part_of(op) is None]
    peak = peak_bytes(p, ops) + batch_bytes(lowered)  # (a loop's steps checked in one op)
    refused = over_budget(p, budget_bytes, t0, peak)
    if refused is not None:
        return refused
    # a loop's steps after the first are not counted (entering the mode costs ~0.3 ms a node)
    flops = NodeFlops(counted_nodes(p, ops) if lowered.loop_steps else None)
    low = for_check(lowered)  # a repeated loop's steps, each checked on its own (verify/parts.py)
    checked = [op for op in low.program.ops if op.phase != "optimizer" and part_of(op) is None]
    scaled = traced.mode != "train" and peak * SCALED_SHARE <= budget_bytes  # the second pass fits
    plan_passes(checked, samples, scaled)
    checks = checked_run(traced, low, module, checked, seed, samples, flops)
    if isinstance(checks, str):
        return Verification("unverified", f"golden run failed: {checks}", seconds=time.perf_counter() - t0)
    status, detail = _summary(checks, lowered)
    extra: dict[str, Any] = {}
    if status == "verified" and scaled:
        low = for_check(lowered, middle=False)  # a loop's first and last steps (verify/parts.py)
        checked = [op for op in low.program.ops if op.phase != "optimizer" and part_of(op) is None]
        status, detail, extra = _scaled(traced, low, module, checked, seed, samples, detail)
    if lowered.loop_steps and status == "verified":  # what of a loop's steps was checked
        detail = f"{detail}; {LOOP_DETAIL}"
    counts = check_counts(p, framework_counts(p, flops, ops))
    out = with_counts(Verification(status, detail, checks, time.perf_counter() - t0), counts)
    out.extra = extra
    return out


def _scaled(traced: Traced, lowered: Lowered, module: types.ModuleType, ops: list, seed: int,
            samples: int, detail: str) -> tuple[str, str, dict]:
    """The second pass at each scale of the inputs: the entry's status, detail and the
    ``scaled_inputs`` JSON."""
    return scaled_passes(
        lambda scale: checked_run(traced, lowered, module, ops, seed, samples, scale=scale), detail)


def checked_run(traced: Traced, lowered: Lowered, module: types.ModuleType, ops: list, seed: int,
                samples: int, flops: NodeFlops | None = None, scale: float = 1.0) -> list[OpCheck] | str:
    """One streamed golden run (the float inputs times ``scale``) with every op of ``ops``
    checked on it, in ``ops``' order; or why the golden run failed (the user's code raising)."""
    p = lowered.program
    parts = parts_by_owner(p)
    rng = np.random.default_rng(seed)
    steps = [n.name for n in traced.exported.graph.nodes]
    plan = schedule(ops, lowered.node_of_tensor, steps)
    found: dict[int, OpCheck] = {}
    failed: list[BaseException] = []
    fixed = StepInputs(p)  # what a loop's steps read from outside it, in float64 once

    def check(i: int, golden: dict[str, torch.Tensor]) -> OpCheck:
        if ops[i].id in parts:
            return check_with_parts(p, ops[i], parts[ops[i].id], golden)
        op, values = stacked_check(ops[i], golden) if ops[i].call and ops[i].call[0] == "steps" \
            else (ops[i], fixed.golden(ops[i], golden))  # (a loop's steps in one op: verify/parts.py)
        return check_op(p, op, values, rng, samples, scaled=scale != 1.0, full_check=full_check_of(ops[i]))

    def consume(step: str, golden: dict[str, torch.Tensor], rerun: Callable[[], Any]) -> None:
        try:
            for i in plan.ready.get(step, ()):
                found[i] = check(i, golden)
                if found[i].status == "mismatch" and ops[i].id not in parts:
                    found[i] = _second_run(ops[i], found[i], step, golden, rerun, lowered.node_of_tensor,
                                           lambda again, i=i: check(i, again))
        except Exception as exc:  # a bug of ours, not the user's code: raised after the run
            failed.append(exc)
            raise
        for t in plan.free.get(step, ()):
            golden.pop(t, None)
            fixed.free(t)
        if step in plan.ready:
            release_memory(p, [ops[i] for i in plan.ready[step]])

    try:
        golden = golden_run(traced, lowered, module, seed, flops, consume, scale)
    except Exception as exc:  # user code raising on real tensors
        if failed:
            raise failed[0] from exc
        return str(exc) if isinstance(exc, EntryError) else f"{type(exc).__name__}: {exc}"
    for i in plan.at_end:
        found[i] = check(i, golden)
    return [found[i] for i in range(len(ops))]


RERUN_DETAIL = "torch's result of this op changed when it was run again on the same inputs"


def _second_run(op: Any, first: OpCheck, step: str, golden: dict[str, torch.Tensor], rerun: Callable[[], Any],
                node_of: dict[str, str], check: Callable[[dict], OpCheck]) -> OpCheck:
    """A mismatch of an op its node ``step`` computed alone, judged again against a second run
    of that node on the same inputs when torch's result changes: torch 2.13 on the CPU (MKL, 2
    threads) computed, in about 1 of 4 processes, a tanh after a large matrix product with one
    thread's half 5e-5 off, and its second run was right (docs/sol-model.md, Verification).
    Verified only when the second result agrees with the IR; a result torch repeats stands."""
    if not op.outputs or any(node_of.get(t) != step for t in op.outputs):
        return first
    fresh = rerun()
    again = dict(golden)
    changed = False
    for t in op.outputs:
        v = _pick(t, fresh)
        if isinstance(v, torch.Tensor) and t in golden and v.shape == golden[t].shape \
                and not torch.equal(v, golden[t]):
            again[t], changed = v, True
    if not changed:
        return first
    second = check(again)
    if second.status != "verified":
        return first
    return OpCheck(op.id, op.line, "verified", f"{RERUN_DETAIL} (its first result: {first.detail})",
                   ratio=second.ratio)


def _summary(checks: list[OpCheck], lowered: Lowered) -> tuple[str, str]:
    """The entry's status and detail from its ops' checks."""
    n_ok = sum(c.status == "verified" for c in checks)
    for status in ("mismatch", "unverified"):
        bad = next((c for c in checks if c.status == status), None)
        if bad is not None:
            return status, f"{bad.op} (line {bad.line}): {bad.detail}"
    if lowered.unsupported:
        return "unverified", (f"{plural(len(lowered.unsupported), 'op')} without a lowering; "
                              + (f"{plural(n_ok, 'other op')} verified" if n_ok else "nothing else to verify"))
    drawn = sorted({c.line for c in checks if c.detail == RANDOM_DETAIL and c.line is not None})
    where = f" (line{'s' if len(drawn) > 1 else ''} {', '.join(map(str, drawn))})" if drawn else ""
    notes = f"; random values{where} taken from torch" if any(c.detail == RANDOM_DETAIL for c in checks) else ""
    again = [c for c in checks if c.detail.startswith(RERUN_DETAIL)]
    if again:
        notes += (f"; torch's own result of {', '.join(f'{c.op} (line {c.line})' for c in again)} "
                  "changed when run again on the same inputs: checked against the second run")
    return "verified", f"{plural(n_ok, 'op')} checked against torch{notes}"


def _real_constants(traced: Traced, model: torch.nn.Module, inputs: tuple, have: dict | None) -> dict:
    if have is not None:
        return have
    # GPU requests in the forward stay on the CPU, as in the build (frontend/torch/devices.py)
    with device_map("cpu"):
        return constant_values(traced, model, inputs)


def _graph_args(traced: Traced, model: torch.nn.Module, inputs: tuple) -> list:
    """The real values of the graph's placeholders: the entry's inputs, the model's
    parameters and buffers, the graph's constants."""
    ep = traced.exported
    state = dict(model.state_dict(keep_vars=True))
    real: dict | None = None
    args = []
    user = iter(t for t in inputs if isinstance(t, torch.Tensor))
    for node in ep.graph.nodes:
        if node.op != "placeholder":
            continue
        kind = traced.kinds.get(node.name, "input")
        if kind == "input":
            args.append(next(user))
        elif kind == "constant":
            c = ep.constants.get(traced.targets[node.name])
            if isinstance(c, torch.Tensor) and c.device.type == "meta":
                # a tensor attribute of the model, or one the forward built from Python values
                # (torch.tensor(x)) whose value the trace could not keep: the CPU model has it
                real = _real_constants(traced, model, inputs, real)
                c = real.get(traced.targets[node.name])
            if c is None or (isinstance(c, torch.Tensor) and c.device.type == "meta"):
                raise EntryError("verify", f"constant {traced.targets[node.name]} has no value")
            args.append(c)
        else:
            args.append(state[traced.targets[node.name]])
    return args


def golden_run(traced: Traced, lowered: Lowered, module: types.ModuleType, seed: int,
               flops: NodeFlops | None = None,
               consume: Callable[[str, dict[str, torch.Tensor], Callable[[], Any]], None] | None = None,
               scale: float = 1.0) -> dict[str, torch.Tensor]:
    """Replay the exported graph on real tensors; returns tensor name -> value.

    Constant parameters and buffers (norm weights, running statistics) are redrawn at
    random first; ``flops``, when given, gets FlopCounterMode's count for every node.
    ``consume``, when given, is called after each node with the values so far (and a function
    running that node again on the same inputs) and may drop some; the interpreter then lets
    each node's value go after its last user. ``scale`` multiplies the entry's float inputs."""
    lazy = _lazy_nodes(traced, lowered)
    model, inputs = build(module, traced.entry, traced.path, device="cpu", seed=seed,
                          lazy_bytes=LAZY_BYTES if lazy else None)
    if scale != 1.0:
        inputs = tuple(x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                       for x in inputs)
    randomize_parameters(model, seed)
    ep = traced.exported
    if traced.mode == "train":  # the joint graph's tensor constants, on the CPU
        from solar_lsp.frontend.torch.train import real_constants
        for name, value in real_constants(traced, model, inputs).items():
            setattr(ep.graph_module, name, value)
    args = _lazy_args(ep, _graph_args(traced, model, inputs), lazy)
    del model  # (a large weight's own values: let go)
    _creation_on_cpu(ep)
    tensors_of: dict[str, list[str]] = {}
    for tensor, node in lowered.node_of_tensor.items():
        tensors_of.setdefault(node, []).append(tensor)
    golden: dict[str, torch.Tensor] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            for a in n.all_input_nodes:
                if a.name in lazy and self.env[a].device.type == "meta":
                    self.env[a] = draw_weight(self.env[a], seed, a.name)
                    for tensor in tensors_of.get(a.name, ()):
                        golden[tensor] = self.env[a]
            if flops is None:
                out = super().run_node(n)
            else:
                out = flops.counted(n, lambda: torch.fx.Interpreter.run_node(self, n),
                                    lambda: self.map_nodes_to_values(n.args, n))
            for tensor in tensors_of.get(n.name, ()):
                v = _pick(tensor, out)
                if isinstance(v, torch.Tensor) and v.device.type != "meta":  # (a weight not drawn yet)
                    golden[tensor] = v
            if consume is not None:
                consume(n.name, golden, lambda: _again(self, n))
            return out

    # without_dynamo_import: FlopCounterMode's dispatch would import torch._dynamo (about 2 s)
    with torch.no_grad(), without_dynamo_import(), \
            (flops.around_run() if flops is not None else contextlib.nullcontext()):
        Recorder(ep.graph_module, garbage_collect_values=consume is not None).run(*args)
    return golden


def _creation_on_cpu(ep: Any) -> None:
    """Creation ops were traced on meta: replay them on the CPU."""
    for node in ep.graph.nodes:
        dev = node.kwargs.get("device") if node.op == "call_function" else None
        if isinstance(dev, torch.device) and dev.type == "meta":
            node.kwargs = {**node.kwargs, "device": torch.device("cpu")}


def _again(interp: torch.fx.Interpreter, n: torch.fx.Node) -> Any:
    """Node ``n`` run once more on the same inputs (still in ``interp``'s env), outside
    FlopCounterMode: ``_second_run``'s second result."""
    if n.op != "call_function":
        return None
    args, kwargs = interp.fetch_args_kwargs_from_env(n)
    with _disable_current_modes():
        return n.target(*args, **kwargs)


def _lazy_nodes(traced: Traced, lowered: Lowered) -> set[str]:
    """The placeholders of the large weights the golden run draws itself (inference only)."""
    if traced.mode == "train":
        return set()
    return {lowered.node_of_tensor[t] for t in lazy_weights(lowered.program) if t in lowered.node_of_tensor}


def _lazy_args(ep: Any, args: list, lazy: set[str]) -> list:
    """``args`` with the placeholders named in ``lazy`` (large weights, verify/core.LAZY_BYTES)
    as meta tensors, drawn at their first use and let go after their last, whether the build
    left them on meta or not: no reference to the model's own values stays."""
    places = [n for n in ep.graph.nodes if n.op == "placeholder"]
    out = list(args)
    for i, node in enumerate(places):
        if node.name in lazy and isinstance(out[i], torch.Tensor):
            t = out[i]
            out[i] = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
    return out


def _pick(tensor: str, out: Any) -> Any:
    """The value of IR tensor ``tensor`` in its node's output (``name_i``: element i)."""
    if isinstance(out, (list, tuple)):
        idx = tensor.rsplit("_", 1)[-1]
        return out[int(idx)] if idx.isdigit() and int(idx) < len(out) else None
    return out
