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

from solar_lsp.ir.core import Kernel, Op, Program
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
    """The verdict on one op: verified, mismatch (with its worst point) or unverified (why)."""

    op: str
    line: int | None
    status: str  # verified | mismatch | unverified
    detail: str = ""
    worst: dict | None = None


@dataclass
class Verification:
    """The verdict on a whole entry, with every op's check and the time it took."""

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


def over_budget(p: Program, budget_bytes: int, t0: float) -> Verification | None:
    """``unverified`` when the golden run would not fit the memory budget (any frontend)."""
    need = golden_bytes(p)
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
        return np.array(t.detach().to(torch.float64).cpu().numpy(), dtype=np.float64, order="C")
    return np.asarray(t, dtype=np.float64, order="C")  # no copy when already float64


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


def compare_points(tensor: str, pos: np.ndarray, vals: np.ndarray, mags: np.ndarray,
                   ref: np.ndarray, dt: str, red: int) -> dict:
    """Worst point of values computed at sampled positions, each judged against the
    magnitude of the terms it summed."""
    r = ref[tuple(pos.T)] if pos.size else np.zeros(0)
    both_inf = np.isinf(r) & (r == vals)
    err = np.where(both_inf, 0.0, np.abs(vals - r))
    err = np.where(np.isnan(r) & np.isnan(vals), 0.0, err)
    ok = _ok(err, r, mags, dt, red)
    return _worst_of(tensor, pos, vals, r, err, ok)


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
    return OpCheck(op.id, op.line, "mismatch",
                   f"{w['tensor']}{w['index']}: expected {w['expected']:.6g}, got {w['got']:.6g}", w)
