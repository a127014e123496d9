"""Rounding-error bounds carried through ops run back to back (docs/sol-model.md,
Verification): the per-op rule of ``op_check`` (each value within ``core.bound`` of its
first-order error bound ``E``) where several ops run from exact values, a JAX loop body
replayed from jax's carry or an LLM agent's whole-entry answer, and for composition calls
that accumulate (scatter_add, index_put with accumulate, embedding_bag).

A composition call moves values, and their errors with them: its outputs carry the largest
error of its float inputs. An accumulating call whose output point gathers ``n`` terms (the
call applied to ones, never under its average ``calls_index.accumulation_length``) carries
``n·(E + Σ|term|)``, ``Σ|term|`` being the call applied to the magnitudes of its float inputs:
the classical worst case of recursive summation (``(n-1)·u·Σ|term|``) rather than a sum
kernel's ``sqrt(n)``, because the framework's scatter accumulates in its own order (XLA's CPU
scatter-add of 12 terms near 1873 is off by 32 ulp). Framework-neutral.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solar_lsp.ir import calls_index, execute
from solar_lsp.ir.core import Op, Program
from solar_lsp.verify.core import (
    UNIT,
    compare_bounded,
    keep_worst,
    out_dtype,
    unit_range,
    unit_roundoff,
)


def _is_float(p: Program, t: str) -> bool:
    return t in p.tensors and p.tensors[t].dtype in UNIT


def call_errors(p: Program, op: Op, ins: list[np.ndarray], errors: dict[str, np.ndarray],
                outs: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """Error bounds (in units of the accumulator's roundoff) of a composition call's outputs
    ``outs``, computed from its inputs ``ins`` whose bounds are in ``errors`` (absent: exact)."""
    base = max([float(np.max(np.nan_to_num(errors[t], nan=np.inf), initial=0.0))
                for t in op.inputs if t in errors] + [0.0])
    red = calls_index.accumulation_length(op.call, [p.tensors[t].shape for t in op.inputs if t in p.tensors],
                                          [p.tensors[o].shape for o in op.outputs if o in p.tensors])
    if not red:
        return [np.full(np.shape(o), base) for o in outs]
    mags = _tuple(execute.apply_call(op.call, [np.abs(a) if _is_float(p, t) else a for t, a in zip(op.inputs, ins)]))
    # the terms each output point accumulates (the call on ones; never under the average)
    count = _tuple(execute.apply_call(op.call, [np.ones(np.shape(a)) if _is_float(p, t) else a
                                                for t, a in zip(op.inputs, ins)]))
    out = []
    for m, c, o in zip(mags, count, outs):
        n = np.maximum(np.abs(np.reshape(c, np.shape(o))), red)
        out.append(n * (base + np.abs(np.reshape(m, np.shape(o)))))
    return out


def _tuple(r: Any) -> tuple:
    return r if isinstance(r, tuple) else (r,)


def program_unit(p: Program, ops: list[Op], narrow: bool = False) -> float:
    """The roundoff the bounds of ``ops`` are carried in: the largest of their accumulators'
    (a bound in a larger unit bounds the smaller ones)."""
    return max([unit_roundoff(p, op, narrow) for op in ops if op.kind == "compute"] + [UNIT["float64"]])


def run_ops(p: Program, ops: list[Op], arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray],
            unit: float) -> None:
    """Execute ``ops`` in order on float64 ``arrays`` (missing tensors zeroed), keeping in
    ``errors`` the bound of every value computed (absent: an exact input)."""
    top = unit_range(unit)
    for op in ops:
        if op.kind == "compute":
            for k in op.kernels:
                for t in [k.out.tensor, *k.inputs()]:
                    if t not in arrays:
                        arrays[t] = np.zeros(p.tensors[t].shape, dtype=np.float64)
                execute.run_kernel_err(k, arrays, errors, unit, top)
            for t in op.outputs:
                arrays.setdefault(t, np.zeros(p.tensors[t].shape, dtype=np.float64))
            continue
        if op.kind == "alloc" or op.call is None:
            for t in op.outputs:
                arrays.setdefault(t, np.zeros(p.tensors[t].shape, dtype=np.float64))
            continue
        ins = [arrays[t] for t in op.inputs]
        res = execute.apply_call(op.call, ins)
        res = tuple(np.array(np.reshape(r, p.tensors[t].shape), dtype=np.float64)
                    for t, r in zip(op.outputs, res if isinstance(res, tuple) else (res,)))
        for t, r, e in zip(op.outputs, res, call_errors(p, op, ins, errors, res)):
            arrays[t], errors[t] = r, e


def compare_outputs(p: Program, names: list[str], got: list[np.ndarray], refs: list[Any],
                    errors: list[np.ndarray | None], unit: float, label: str = "") -> dict | None:
    """The worst comparison of computed tensors with golden ones, each point within its own
    bound (``errors``: None for exact); None when there is nothing to compare. A shape
    difference is a mismatch. ``label`` follows each tensor's name in the report."""
    worst = None
    for name, g, ref, err in zip(names, got, refs, errors):
        g = np.asarray(g, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if g.size != ref.size:
            return {"tensor": f"{name}{label}", "index": [], "expected": float("nan"), "got": float("nan"),
                    "bad": True, "ratio": float("inf"), "detail": f"shape {g.shape} vs {ref.shape}"}
        g = g.reshape(ref.shape)
        e = np.zeros(ref.shape) if err is None else np.asarray(err, dtype=np.float64)
        e = np.broadcast_to(e, ref.shape) if e.size == 1 else e.reshape(ref.shape)
        w = compare_bounded(f"{name}{label}", tuple(ref.shape), g, ref, e, out_dtype(p, name), unit)
        worst = keep_worst(worst, w)
    return worst
