"""Generate, then verify (docs/architecture.md §4): every IR kernel is executed by numba on the golden
inputs of its node and compared with torch's own output at sampled points.

The golden run replays the exported graph op by op on real tensors (the model's real
weights, the entry's real inputs), so each op is checked against exactly the values eager
PyTorch produced for it.
"""

from __future__ import annotations

import contextlib
import time
import types
from typing import Any

import numpy as np
import torch

from solar_lsp.frontend.errors import EntryError, Lowered
from solar_lsp.frontend.torch.trace import Traced, build
from solar_lsp.units import plural
from solar_lsp.verify.core import (  # noqa: F401  (re-exported: callers import them from here)
    DEFAULT_BUDGET,
    FULL_RUN_LIMIT,
    RTOL,
    SAMPLES,
    OpCheck,
    Verification,
    golden_bytes,
    over_budget,
)
from solar_lsp.verify.counts import check_counts, with_counts
from solar_lsp.verify.counts_torch import NodeFlops, randomize_parameters
from solar_lsp.verify.op_check import check_op


def verify(traced: Traced, lowered: Lowered, module: types.ModuleType,
           budget_bytes: int = DEFAULT_BUDGET, samples: int = SAMPLES, seed: int = 0) -> Verification:
    """Replay the entry's exported graph on real tensors and check every op of its IR."""
    t0 = time.perf_counter()
    p = lowered.program
    refused = over_budget(p, budget_bytes, t0)
    if refused is not None:
        return refused
    flops = NodeFlops()
    try:
        golden = golden_run(traced, lowered, module, seed, flops)
    except EntryError as exc:
        return Verification("unverified", f"golden run failed: {exc}", seconds=time.perf_counter() - t0)
    except Exception as exc:  # user code raising on real tensors
        return Verification("unverified", f"golden run failed: {type(exc).__name__}: {exc}",
                            seconds=time.perf_counter() - t0)
    rng = np.random.default_rng(seed)
    checks = [check_op(p, op, golden, rng, samples) for op in p.ops]
    status = "verified"
    n_ok = sum(c.status == 'verified' for c in checks)
    detail = f"{plural(n_ok, 'op')} checked against torch"
    if any(c.status == "mismatch" for c in checks):
        status = "mismatch"
        bad = next(c for c in checks if c.status == "mismatch")
        detail = f"{bad.op} (line {bad.line}): {bad.detail}"
    elif any(c.status == "unverified" for c in checks):
        status = "unverified"
        bad = next(c for c in checks if c.status == "unverified")
        detail = f"{bad.op} (line {bad.line}): {bad.detail}"
    if lowered.unsupported and status == "verified":
        status = "unverified"
        detail = (f"{plural(len(lowered.unsupported), 'op')} without a lowering; "
                  + (f"{plural(n_ok, 'other op')} verified" if n_ok else "nothing else to verify"))
    counts = check_counts(p, flops.framework({op.id for op in p.ops}))  # docs/sol-model.md
    return with_counts(Verification(status, detail, checks, time.perf_counter() - t0), counts)


def _real_constants(model: torch.nn.Module, inputs: tuple, have: dict | None) -> dict:
    if have is not None:
        return have
    tensors = tuple(t for t in inputs if isinstance(t, torch.Tensor))
    try:
        with torch.no_grad():
            return dict(torch.export.export(model, tensors, strict=False).constants)
    except Exception:  # the value stays unknown; the caller says so
        return {}


def golden_run(traced: Traced, lowered: Lowered, module: types.ModuleType, seed: int,
               flops: NodeFlops | None = None) -> dict[str, torch.Tensor]:
    """Replay the exported graph on real tensors; returns tensor name -> value.

    Constant parameters and buffers (norm weights, running statistics) are redrawn at
    random first; ``flops``, when given, gets FlopCounterMode's count for every node."""
    model, inputs = build(module, traced.entry, traced.path, device="cpu", seed=seed)
    randomize_parameters(model, seed)
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
                # a tensor the forward built from Python values (torch.tensor(x)) was traced on
                # meta: its value exists only in a real export of the CPU model
                real = _real_constants(model, inputs, real)
                c = real.get(traced.targets[node.name])
            if c is None or (isinstance(c, torch.Tensor) and c.device.type == "meta"):
                raise EntryError("verify", f"constant {traced.targets[node.name]} has no value")
            args.append(c)
        else:
            args.append(state[traced.targets[node.name]])
    for node in ep.graph.nodes:  # creation ops were traced on meta: replay them on the CPU
        dev = node.kwargs.get("device") if node.op == "call_function" else None
        if isinstance(dev, torch.device) and dev.type == "meta":
            node.kwargs = {**node.kwargs, "device": torch.device("cpu")}
    values: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            if flops is None or n.op != "call_function":
                out = super().run_node(n)
            else:
                start = flops.before()
                out = super().run_node(n)
                flops.after(n, start, self.map_nodes_to_values(n.args, n))
            values[n.name] = out
            return out

    with torch.no_grad(), (flops.mode if flops is not None else contextlib.nullcontext()):
        Recorder(ep.graph_module, garbage_collect_values=False).run(*args)
    golden: dict[str, torch.Tensor] = {}
    for tensor, node in lowered.node_of_tensor.items():
        v = values.get(node)
        if isinstance(v, (list, tuple)):
            idx = tensor.rsplit("_", 1)[-1]
            v = v[int(idx)] if idx.isdigit() and int(idx) < len(v) else None
        if isinstance(v, torch.Tensor):
            golden[tensor] = v
    return golden
