"""The framework-neutral core of verification: results, the golden run's memory budget,
per-dtype tolerances, and comparing computed values with golden ones (in full or at sampled
points) down to the worst point.

Both verifiers (torch and JAX) and the LLM answer checker build on this; nothing here
imports torch or jax.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solar_lsp.defaults import DEFAULT_BUDGET_BYTES as DEFAULT_BUDGET  # noqa: F401  (re-exported)
from solar_lsp.ir.core import Kernel, Op, Program
from solar_lsp.ir.validate import recurrence_var
from solar_lsp.source.pragma import dtype_size

SAMPLES = 64
FULL_RUN_LIMIT = 1e9  # loop points an op may execute in full before it is left unverified

SAMPLE_BUDGET = 2e7  # loop points the sampled points of one kernel may execute together
FULL_CHECK = 4e6  # loop points under which a kernel is run and compared in full

# Relative tolerance per dtype, scaled by the magnitude of the terms summed (not of the
# result, which can cancel) and by sqrt of the reduction length: the coarse comparison of
# whole tensors without per-point error bounds (loop replays, LLM answers).
RTOL = {"float64": 1e-10, "float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2,
        "float8_e4m3fn": 1.3e-1, "float8_e5m2": 2.5e-1}

# Unit roundoff (half an ulp at 1: |fl(x) - x| <= u·|x|), largest finite value and smallest
# normal value of each float dtype (IEEE 754 binary64/32/16; bfloat16: 8 significant bits, the
# float32 exponent range; float8 formats per OCP 8-bit floating point, v1.0). Subnormals get
# no relative bound: XLA on the CPU flushes them to zero.
UNIT = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8,
        "float8_e4m3fn": 2.0**-4, "float8_e5m2": 2.0**-3}
MAX_FINITE = {"float32": 3.4028234663852886e38, "float16": 65504.0, "bfloat16": 3.3895313892515355e38}
TINY = {"float64": 2.0**-1022, "float32": 2.0**-126, "float16": 2.0**-14, "bfloat16": 2.0**-126,
        "float8_e4m3fn": 2.0**-6, "float8_e5m2": 2.0**-14}
# Factor on the first-order rounding-error bound of the framework's computation (in its
# accumulator's roundoff): a vectorized transcendental is off by up to ~2 ulp (4 u), and a
# sum's rounding grows like sqrt(n) only on average.
C_ACC = 8.0
# float8 e4m3fn has no infinities: torch's conversion to it saturates at its largest value
# (a float32 -3808.9 becomes -448: tests/corpus/ops_dtype_fp8_cast.py at inputs x100).
SATURATES = {"float8_e4m3fn": 448.0}
# A framework result of +-inf where the exact one is finite but within this factor of the
# dtype's largest value is accepted: an intermediate (exp(x) of sinh = exp(x)/2) overflowed.
NEAR_TOP = 2.0**-4


@dataclass
class OpCheck:
    """The verdict on one op: verified, mismatch (with its worst point) or unverified (why)."""

    op: str
    line: int | None
    status: str  # verified | mismatch | unverified
    detail: str = ""
    worst: dict | None = None
    ratio: float | None = None  # largest |difference| / bound over the points checked


@dataclass
class Verification:
    """The verdict on a whole entry, with every op's check and the time it took."""

    status: str
    detail: str
    ops: list[OpCheck] = field(default_factory=list)
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)  # further JSON keys (``scaled_inputs``)

    def to_json(self) -> dict:
        d: dict[str, Any] = {"status": self.status, "detail": self.detail, **self.extra}
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


def over_budget(p: Program, budget_bytes: int, t0: float, need: int | None = None) -> Verification | None:
    """``unverified`` when the golden run would not fit the memory budget (any frontend);
    ``need``: what it takes, when not every tensor at once (``golden_bytes``)."""
    need = golden_bytes(p) if need is None else need
    if need <= budget_bytes:
        return None
    return Verification("unverified", f"golden run needs {need / 1e9:.1f} GB, over the "
                        f"{budget_bytes / 1e9:.1f} GB verification budget; bounds come from "
                        f"shapes alone", seconds=time.perf_counter() - t0)


def tol_dtype(p: Program, op: Op) -> str:
    """The dtype whose tolerance judges ``op``: its least precise float tensor, or ``exact``
    when no output is a float."""
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


def as_float64(t: Any) -> np.ndarray:
    """Float64 golden value: a copy of a torch tensor, or an array (the JAX golden run)."""
    # a torch tensor can only exist once torch is imported: a JAX-only run never imports it
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(t, torch.Tensor):
        out = torch.empty(tuple(t.shape), dtype=torch.float64)  # one copy, C order, never aliased
        out.copy_(t.detach().cpu())
        return out.numpy()
    return np.asarray(t, dtype=np.float64, order="C")  # no copy when already float64


# A float32 golden input of this many elements or more reaches the kernels as it is, not as a
# float64 copy (ir/execute._native): VGG16's first classifier weight, 103 M elements, would
# take 822 MB more. Smaller ones are copied, so that common kernels keep one compiled form.
NATIVE_ELEMENTS = 1 << 22


# A module parameter of this many bytes or more is not built with the model for the golden
# run: it is drawn at the first node that reads it and let go after the last (torch:
# frontend/torch/build.py ``lazy_bytes``, verify/check_torch.py), so a model's large weights
# are never all in memory at once (VGG16's classifier holds 0.48 of its 0.55 GB in two).
LAZY_BYTES = 16 << 20
_FLOATS = ("float64", "float32", "float16", "bfloat16")


def lazy_weights(p: Program) -> set[str]:
    """The parameters of ``p`` the golden run draws at their first use (``LAZY_BYTES``)."""
    return {t for t in p.weights if t in p.tensors and p.tensors[t].dtype in _FLOATS
            and t not in p.views and p.tensors[t].numel * dtype_size(p.tensors[t].dtype) >= LAZY_BYTES}


def native_input(dtype: str, numel: int) -> bool:
    """A golden input of this IR dtype and size is passed to kernels without a float64 copy."""
    return dtype == "float32" and numel >= NATIVE_ELEMENTS


def kernel_input(t: Any) -> np.ndarray:
    """A golden input for the kernels: float64 (``as_float64``), or for a large float32 one
    (``native_input``) its own values, C-contiguous, shared with the framework where they can be."""
    shape, dt = tuple(getattr(t, "shape", ())), str(getattr(t, "dtype", "")).removeprefix("torch.")
    if not native_input(dt, math.prod(shape)):
        return as_float64(t)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(t, torch.Tensor):
        return t.detach().cpu().contiguous().numpy()
    return np.ascontiguousarray(np.asarray(t))


def float64_at(t: Any, pos: np.ndarray) -> np.ndarray:
    """Float64 golden values of ``t`` at positions ``pos`` (rows of indices), without
    converting the whole tensor."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(t, torch.Tensor):
        idx = tuple(torch.from_numpy(np.ascontiguousarray(c, dtype=np.int64)) for c in pos.T)
        return as_float64(t.detach()[idx] if idx else t.detach().reshape(1).expand(len(pos)))
    a = np.asarray(t)
    return np.asarray(a[tuple(pos.T)] if pos.shape[1] else np.broadcast_to(a, (len(pos),)), dtype=np.float64)


def reduction_length(k: Kernel) -> int:
    """How many terms each output value of ``k`` accumulates (scales the tolerance)."""
    n = max(1, math.prod(n for v, n in k.loops if v in k.reduce_vars))
    carried = recurrence_var(k)  # a scan accumulates along its carried loop too
    return n * (k.extents[carried] + 1) if carried else n


def _ok(err: np.ndarray, ref: np.ndarray, scale: np.ndarray, dt: str, red: int) -> np.ndarray:
    if dt == "exact":
        return err <= 0.5
    rtol = RTOL.get(dt, 2e-5) * max(1.0, math.sqrt(red))
    scale = np.nan_to_num(scale, nan=0.0, posinf=0.0)
    return (err <= rtol * (scale + np.nan_to_num(np.abs(ref), posinf=0.0)) + rtol * 1e-3) | (err == 0)


def unit_roundoff(p: Program, op: Op, narrow: bool = False) -> float:
    """Roundoff of the accumulator ``op`` computes in: float64 when all its float tensors
    are, else float32 (torch computes half-precision and float8 types in float32 on the CPU:
    products, sums and functions, rounding only the result). ``narrow``: the framework may
    round each step of an elementwise op to the op's own dtype (XLA on the CPU computes a
    bfloat16 ``x**3`` as two bfloat16 products); its contractions still accumulate in float32."""
    dts = {p.tensors[t].dtype for t in op.inputs + op.outputs if t in p.tensors} & set(UNIT)
    base = UNIT["float64"] if dts <= {"float64"} else UNIT["float32"]
    if narrow and dts and not any(k.unit == "matrix" for k in op.kernels):
        return max([base] + [UNIT[d] for d in dts])
    return base


def unit_range(unit: float) -> float:
    """Largest finite value of the dtype whose roundoff is ``unit`` (float64: none)."""
    if unit < UNIT["float32"]:
        return math.inf
    return next((MAX_FINITE[d] for d in MAX_FINITE if UNIT[d] == unit), MAX_FINITE["float32"])


def out_dtype(p: Program, tensor: str) -> str:
    """The dtype whose rounding judges values of ``tensor``, or ``exact`` (not a float)."""
    dt = p.tensors[tensor].dtype if tensor in p.tensors else "float64"
    return dt if dt in UNIT else "exact"


def bound(got: np.ndarray, err: np.ndarray, dt: str, unit: float) -> np.ndarray:
    """How far the framework's value may be from ``got`` (the IR's value, float64): its own
    rounding error (``err``, in units of ``unit``, times C_ACC), then one rounding to ``dt``."""
    u = UNIT.get(dt, unit)
    err = np.where(np.isnan(err), np.inf, err)  # a bound that cannot be computed bounds nothing
    with np.errstate(invalid="ignore", over="ignore"):
        acc = np.where(err == 0, 0.0, C_ACC * unit * err)
        return acc * (1 + u) + u * np.abs(got) + TINY.get(dt, 0.0) + C_ACC * TINY["float32"]


def compare_bounded(tensor: str, pos: np.ndarray, got: np.ndarray, ref: np.ndarray, err: np.ndarray,
                    dt: str, unit: float) -> dict:
    """Worst point of computed values (at output positions ``pos``, rows) against the golden
    ones, each within its own error bound (:func:`bound`); ``ratio`` is the largest
    |difference| / bound over the points (above 1: a mismatch)."""
    got = np.asarray(got, dtype=np.float64)
    if dt in MAX_FINITE:  # the framework's result overflows where the exact one is out of range
        top = MAX_FINITE[dt] * (1 + UNIT[dt])
        got = np.where(np.abs(got) >= top, np.copysign(np.inf, got), got)
        # ... and may overflow within NEAR_TOP of it, an intermediate past the range (torch's
        # fp32 sinh(89.4) is inf: exp(89.4) overflows; the exact 2.2e38 does not)
        near = np.isinf(ref) & (np.abs(got) >= MAX_FINITE[dt] * NEAR_TOP) & (np.sign(got) == np.sign(ref))
        got = np.where(near, ref, got)
    if dt in SATURATES:  # a format without infinities: torch's conversion saturates
        got = np.clip(got, -SATURATES[dt], SATURATES[dt])
    with np.errstate(invalid="ignore"):
        same = (got == ref) | (np.isnan(got) & np.isnan(ref))
        diff = np.where(same, 0.0, np.abs(got - ref))
        if dt == "exact":
            tol = np.full(diff.shape, 0.5)
        else:
            tol = bound(got, err, dt, unit)
        ratio = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff / np.maximum(tol, 1e-300)))
    bad = ratio > 1.0
    w = _worst_of(tensor, pos, got, ref, np.where(np.isnan(diff), np.inf, diff), ~bad, ratio)
    w["ratio"] = float(ratio.max(initial=0.0))
    return w


# Elements compared at once by ``compare_whole``: the comparison's temporaries (about nine
# float64 arrays) stay at chunk size, not the tensor's.
COMPARE_CHUNK = 1 << 18


def nonzero(t: Any) -> np.ndarray:
    """Where the golden value ``t`` is not zero (NaN included), as a bool array of its shape:
    one byte per element, no float64 copy."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(t, torch.Tensor):
        return (t.detach().cpu() != 0).numpy()
    return np.asarray(np.asarray(t) != 0)


def float64_slice(t: Any, start: int, stop: int) -> np.ndarray:
    """Float64 golden values of ``t`` at flat (C-order) positions ``start:stop``, without
    converting the whole tensor."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(t, torch.Tensor):
        return as_float64(t.detach().reshape(-1)[start:stop])
    return np.asarray(np.reshape(np.asarray(t), -1)[start:stop], dtype=np.float64)


def compare_whole(tensor: str, got: np.ndarray, golden: Any, err: np.ndarray, dt: str, unit: float) -> dict:
    """``compare_bounded`` over a whole tensor (``got`` and ``err`` of its shape, ``golden`` the
    framework's value), chunk by chunk: the same worst point and ratio, in a working set of
    ``COMPARE_CHUNK`` elements, with no float64 copy of the golden tensor."""
    shape = tuple(np.shape(got))
    flat_got, flat_err = np.reshape(got, -1), np.reshape(err, -1)
    n = flat_got.size
    if n <= COMPARE_CHUNK:
        return compare_bounded(tensor, shape, got, as_float64(golden), err, dt, unit)
    best: dict | None = None
    for start in range(0, n, COMPARE_CHUNK):
        stop = min(n, start + COMPARE_CHUNK)
        w = compare_bounded(tensor, (stop - start,), flat_got[start:stop], float64_slice(golden, start, stop),
                            flat_err[start:stop], dt, unit)
        if w["index"]:
            w["index"] = [int(x) for x in np.unravel_index(start + w["index"][0], shape)]
        # the point to report: the worst bad one, else the worst (the first of equals); a bad
        # point's ratio is over 1 and every good one's at most 1, so its ratio is the largest
        if best is None or (w["bad"], w["ratio"]) > (best["bad"], best["ratio"]):
            best = w
    assert best is not None
    return best


def compare_full(tensor: str, got: np.ndarray, ref: np.ndarray, dt: str, rng: np.random.Generator,
                 samples: int, reduction: int = 1) -> dict:
    """Worst point of a whole computed tensor against its golden value (a shape difference
    is a mismatch); ``{"bad": False, ...}`` when every point is within tolerance."""
    if got.shape != ref.shape:
        return {"tensor": tensor, "index": [], "expected": float("nan"), "got": float("nan"), "bad": True,
                "detail": f"shape {got.shape} vs {ref.shape}"}
    both_inf = np.isinf(ref) & (ref == got)
    err = np.where(both_inf | (np.isnan(ref) & np.isnan(got)), 0.0, np.abs(got - ref))
    # no per-point magnitude here: scale by the tensor's largest value as well
    scale = np.abs(got) + (float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0.0)) if ref.size else 0.0)
    ok = _ok(err, ref, scale, dt, reduction)
    return _worst_of(tensor, tuple(ref.shape), got, ref, err, ok)


def _worst_of(tensor: str, pos: np.ndarray | tuple, got: np.ndarray, ref: np.ndarray, err: np.ndarray,
              ok: np.ndarray, rank: np.ndarray | None = None) -> dict:
    """The point to report: the bad one ranking highest (by ``rank``, else by ``err``).
    ``pos`` holds the points' output indices (rows), or is the shape of a whole tensor."""
    got, ref, err, ok = (np.reshape(a, -1) for a in (got, ref, err, ok))
    if err.size == 0:
        return {"tensor": tensor, "index": [], "expected": 0.0, "got": 0.0, "bad": False}
    bad = ~ok
    rank = err if rank is None else np.reshape(rank, -1)
    i = int(np.argmax(np.where(bad, rank, -1.0))) if bad.any() else int(np.argmax(rank))
    if isinstance(pos, tuple):
        index = [int(x) for x in np.unravel_index(i, pos)] if pos else []
    else:
        index = [int(x) for x in pos[i]] if pos.ndim == 2 and len(pos) > i else []
    return {"tensor": tensor, "index": index, "expected": float(ref[i]), "got": float(got[i]),
            "bad": bool(bad.any())}


def keep_worst(a: dict | None, b: dict) -> dict:
    """Of two comparisons, the one to report: the first, unless only the second is bad."""
    if a is None:
        return b
    if b["bad"] and not a["bad"]:
        return b
    return a


def mismatch(op: Op, worst: dict) -> OpCheck:
    """A ``mismatch`` check that names the worst point (``worst`` is a bad comparison)."""
    w = dict(worst)
    w.pop("bad")
    w.pop("ratio", None)
    return OpCheck(op.id, op.line, "mismatch",
                   f"{w['tensor']}{w['index']}: expected {w['expected']:.6g}, got {w['got']:.6g}", w)
