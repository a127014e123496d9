"""Generate, then verify (DESIGN §4): every IR kernel is executed by numba on the golden
inputs of its node and compared with torch's own output at sampled points.

The golden run replays the exported graph op by op on real tensors (the model's real
weights, the entry's real inputs), so each op is checked against exactly the values eager
PyTorch produced for it.
"""

from __future__ import annotations

import math
import time
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from solar_lsp.frontend.errors import EntryError, Lowered
from solar_lsp.frontend.torch.trace import Traced, build
from solar_lsp.ir import calls_index, execute
from solar_lsp.ir.core import Kernel, Load, Op, Program
from solar_lsp.ir.validate import recurrence_var
from solar_lsp.source.pragma import dtype_size

DEFAULT_BUDGET = 2 * 1024**3
SAMPLES = 64
FULL_RUN_LIMIT = 1e9  # loop points an op may execute in full before it is left unverified

# Relative tolerance per dtype, scaled by the magnitude of the terms summed (not of the
# result, which can cancel) and by sqrt of the reduction length.
RTOL = {"float64": 1e-10, "float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2,
        "float8_e4m3fn": 1.3e-1, "float8_e5m2": 2.5e-1}


@dataclass
class OpCheck:
    op: str
    line: int | None
    status: str  # verified | mismatch | unverified
    detail: str = ""
    worst: dict | None = None


@dataclass
class Verification:
    status: str
    detail: str
    ops: list[OpCheck] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict:
        d: dict[str, Any] = {"status": self.status, "detail": self.detail}
        bad = [o for o in self.ops if o.status != "verified"]
        d["ops_checked"] = sum(1 for o in self.ops if o.status == "verified")
        d["issues"] = [{"op": o.op, "line": o.line, "status": o.status, "detail": o.detail,
                        **({"worst": o.worst} if o.worst else {})} for o in bad[:20]]
        return d


def golden_bytes(p: Program) -> int:
    """Memory the golden run needs: every tensor once, plus float64 copies for numba."""
    total = 0
    for name, t in p.tensors.items():
        if name in p.views:
            continue
        total += t.numel * (dtype_size(t.dtype) + 8)
    return total


def _tol_dtype(p: Program, op: Op) -> str:
    names = [t for t in op.inputs + op.outputs if t in p.tensors]
    order = ["float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
    worst = "float64"
    for t in names:
        d = p.tensors[t].dtype
        if d in order and order.index(d) > order.index(worst):
            worst = d
    if all(p.tensors[t].dtype not in order for t in op.outputs):
        return "exact"
    return worst


def _np(t: torch.Tensor | np.ndarray) -> np.ndarray:
    """Float64 golden value: a copy of a torch tensor, or an array (the JAX golden run)."""
    if isinstance(t, torch.Tensor):
        return np.array(t.detach().to(torch.float64).cpu().numpy(), dtype=np.float64, order="C")
    return np.asarray(t, dtype=np.float64, order="C")  # no copy when already float64


def over_budget(p: Program, budget_bytes: int, t0: float) -> Verification | None:
    """``unverified`` when the golden run would not fit the memory budget (any frontend)."""
    need = golden_bytes(p)
    if need <= budget_bytes:
        return None
    return Verification("unverified", f"golden run needs {need / 1e9:.1f} GB, over the "
                        f"{budget_bytes / 1e9:.1f} GB verification budget; bounds come from "
                        f"shapes alone", seconds=time.perf_counter() - t0)


def verify(traced: Traced, lowered: Lowered, module: types.ModuleType,
           budget_bytes: int = DEFAULT_BUDGET, samples: int = SAMPLES, seed: int = 0) -> Verification:
    t0 = time.perf_counter()
    p = lowered.program
    refused = over_budget(p, budget_bytes, t0)
    if refused is not None:
        return refused
    try:
        golden = golden_run(traced, lowered, module, seed)
    except EntryError as exc:
        return Verification("unverified", f"golden run failed: {exc}", seconds=time.perf_counter() - t0)
    except Exception as exc:  # user code raising on real tensors
        return Verification("unverified", f"golden run failed: {type(exc).__name__}: {exc}",
                            seconds=time.perf_counter() - t0)
    rng = np.random.default_rng(seed)
    checks = [check_op(p, op, golden, rng, samples) for op in p.ops]
    status = "verified"
    detail = f"{sum(c.status == 'verified' for c in checks)} ops checked against torch"
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
        detail = f"{len(lowered.unsupported)} op(s) have no lowering; the rest verified"
    return Verification(status, detail, checks, time.perf_counter() - t0)


def _real_constants(model: torch.nn.Module, inputs: tuple, have: dict | None) -> dict:
    if have is not None:
        return have
    tensors = tuple(t for t in inputs if isinstance(t, torch.Tensor))
    try:
        with torch.no_grad():
            return dict(torch.export.export(model, tensors, strict=False).constants)
    except Exception:  # the value stays unknown; the caller says so
        return {}


def golden_run(traced: Traced, lowered: Lowered, module: types.ModuleType, seed: int) -> dict[str, torch.Tensor]:
    """Replay the exported graph on real tensors; returns tensor name -> value."""
    model, inputs = build(module, traced.entry, traced.path, device="cpu", seed=seed)
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
            out = super().run_node(n)
            values[n.name] = out
            return out

    with torch.no_grad():
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


def _arrays(p: Program, op: Op, golden: dict[str, torch.Tensor]) -> dict[str, np.ndarray] | None:
    arrays: dict[str, np.ndarray] = {}
    for t in op.inputs:
        if t not in golden:
            return None
        arrays[t] = _np(golden[t])
    return arrays


def check_op(p: Program, op: Op, golden: dict[str, torch.Tensor], rng: np.random.Generator,
             samples: int) -> OpCheck:
    if op.kind == "alloc":
        return OpCheck(op.id, op.line, "verified", "allocation")
    arrays = _arrays(p, op, golden)
    if arrays is None or any(o not in golden for o in op.outputs):
        return OpCheck(op.id, op.line, "unverified", "golden values missing for this op")
    if op.kind in ("view", "gather"):
        try:
            got = execute._apply_call(op.call, [arrays[t] for t in op.inputs])
        except Exception as exc:
            return OpCheck(op.id, op.line, "mismatch", f"composition step failed: {exc}")
        gots = got if isinstance(got, tuple) else (got,)  # a call fills outputs in order
        refs = tuple(_np(golden[t]) for t in op.outputs[:len(gots)])
        ins = [arrays[t] for t in op.inputs]
        gots = calls_index.canonical(op.call, tuple(np.asarray(g, dtype=np.float64) for g in gots), ins)
        refs = calls_index.canonical(op.call, refs, ins)
        for t, g, ref in zip(op.outputs, gots, refs):
            if g.shape == ref.shape and np.array_equal(g, ref, equal_nan=True):
                continue
            red = calls_index.accumulation_length(op.call, [p.tensors[i].shape for i in op.inputs],
                                                  [p.tensors[o].shape for o in op.outputs])
            if g.shape == ref.shape and red and p.tensors[t].dtype in RTOL:
                # an accumulating call (scatter_add, embedding_bag) rounds differently in
                # float64: compare within the dtype's tolerance, like a kernel
                w = _compare_full(t, g, ref, _tol_dtype(p, op), rng, samples, reduction=red)
                if not w["bad"]:
                    continue
            return OpCheck(op.id, op.line, "mismatch",
                           f"{op.call} does not reproduce torch's result for {t}")
        return OpCheck(op.id, op.line, "verified")
    for t in set(k.out.tensor for k in op.kernels) | set(op.outputs):
        if t not in arrays:
            arrays[t] = np.zeros(p.tensors[t].shape, dtype=np.float64)
    prefix, last = op.kernels[:-1], op.kernels[-1]
    cost = sum(k.points for k in prefix)
    if cost > FULL_RUN_LIMIT:
        return OpCheck(op.id, op.line, "unverified",
                       f"executing {cost:.2g} loop points on the CPU is over the verification limit")
    tol_dt = _tol_dtype(p, op)
    try:
        for k in prefix:
            execute.run_kernel(k, arrays)
        worst = None
        for t in op.outputs:
            if t != last.out.tensor:
                worst = _worst(worst, _compare_full(t, arrays[t], _np(golden[t]), tol_dt, rng, samples))
        if last.out.tensor in op.outputs:
            # a plain copy adds no rounding of its own: run it in full and judge the copied
            # values like the op's other outputs (tensor-wide scale), not per point
            copy = last.op == "=" and isinstance(last.expr, Load)
            if _injective(last) and not copy:
                pts = execute.random_points(last, samples, rng)
                vals, mags = execute.sample_kernel(last, arrays, pts)
                pos = execute.out_positions(last, pts)
                ref = _np(golden[last.out.tensor])
                worst = _worst(worst, _compare_points(last.out.tensor, pos, vals, mags, ref, tol_dt,
                                                      _red_len(last)))
            else:
                if last.points > FULL_RUN_LIMIT:
                    return OpCheck(op.id, op.line, "unverified",
                                   f"scatter-form kernel of {last.points:.2g} points is over the limit")
                execute.run_kernel(last, arrays)
                worst = _worst(worst, _compare_full(last.out.tensor, arrays[last.out.tensor],
                                                    _np(golden[last.out.tensor]), tol_dt, rng, samples,
                                                    reduction=_red_len(last)))
        else:
            execute.run_kernel(last, arrays)
    except Exception as exc:
        return OpCheck(op.id, op.line, "unverified", f"executing the IR failed: {type(exc).__name__}: {exc}")
    if worst is not None and worst["bad"]:
        w = dict(worst)
        w.pop("bad")
        return OpCheck(op.id, op.line, "mismatch",
                       f"{w['tensor']}{w['index']}: expected {w['expected']:.6g}, got {w['got']:.6g}", w)
    return OpCheck(op.id, op.line, "verified")


def _red_len(k: Kernel) -> int:
    n = max(1, math.prod(n for v, n in k.loops if v in k.reduce_vars))
    carried = recurrence_var(k)  # a scan accumulates along its carried loop too
    return n * (k.extents[carried] + 1) if carried else n


def _injective(k: Kernel) -> bool:
    """Each output position comes from exactly one point of the out vars (mixed radix), so
    a sampled point's value is final. A recurrence never is: it reads its own earlier output."""
    if recurrence_var(k) is not None:
        return False
    ext = k.extents
    seen: set[str] = set()
    for a in k.out.index:
        terms = sorted(((c, v) for v, c in a.terms if c), key=lambda t: abs(t[0]))
        reach = 0
        for c, v in terms:
            if v in seen or abs(c) <= reach:
                return False
            seen.add(v)
            reach += abs(c) * (ext[v] - 1)
    return seen == set(k.out_vars)


def _ok(err: np.ndarray, ref: np.ndarray, scale: np.ndarray, dt: str, red: int) -> np.ndarray:
    if dt == "exact":
        return err <= 0.5
    rtol = RTOL.get(dt, 2e-5) * max(1.0, math.sqrt(red))
    scale = np.nan_to_num(scale, nan=0.0, posinf=0.0)
    return (err <= rtol * (scale + np.nan_to_num(np.abs(ref), posinf=0.0)) + rtol * 1e-3) | (err == 0)


def _compare_points(tensor: str, pos: np.ndarray, vals: np.ndarray, mags: np.ndarray,
                    ref: np.ndarray, dt: str, red: int) -> dict:
    r = ref[tuple(pos.T)] if pos.size else np.zeros(0)
    both_inf = np.isinf(r) & (r == vals)
    err = np.where(both_inf, 0.0, np.abs(vals - r))
    err = np.where(np.isnan(r) & np.isnan(vals), 0.0, err)
    ok = _ok(err, r, mags, dt, red)
    return _worst_of(tensor, pos, vals, r, err, ok)


def _compare_full(tensor: str, got: np.ndarray, ref: np.ndarray, dt: str, rng: np.random.Generator,
                  samples: int, reduction: int = 1) -> dict:
    if got.shape != ref.shape:
        return {"tensor": tensor, "index": [], "expected": float("nan"), "got": float("nan"), "bad": True,
                "detail": f"shape {got.shape} vs {ref.shape}"}
    both_inf = np.isinf(ref) & (ref == got)
    err = np.where(both_inf | (np.isnan(ref) & np.isnan(got)), 0.0, np.abs(got - ref))
    # no per-point magnitude here: scale by the tensor's largest value as well
    scale = np.abs(got) + (float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0.0)) if ref.size else 0.0)
    ok = _ok(err, ref, scale, dt, reduction)
    idx = np.argwhere(np.ones(ref.shape, dtype=bool)) if ref.ndim else np.zeros((1, 0), dtype=np.int64)
    return _worst_of(tensor, idx, got.reshape(-1), ref.reshape(-1), err.reshape(-1), ok.reshape(-1))


def _worst_of(tensor: str, pos: np.ndarray, got: np.ndarray, ref: np.ndarray, err: np.ndarray,
              ok: np.ndarray) -> dict:
    if err.size == 0:
        return {"tensor": tensor, "index": [], "expected": 0.0, "got": 0.0, "bad": False}
    bad = ~ok
    i = int(np.argmax(np.where(bad, err, -1.0))) if bad.any() else int(np.argmax(err))
    return {"tensor": tensor, "index": [int(x) for x in pos[i]] if pos.ndim == 2 and len(pos) > i else [],
            "expected": float(ref[i]), "got": float(got[i]), "bad": bool(bad.any())}


def _worst(a: dict | None, b: dict) -> dict:
    if a is None:
        return b
    if b["bad"] and not a["bad"]:
        return b
    return a
