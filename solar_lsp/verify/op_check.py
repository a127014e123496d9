"""Check one IR op against the golden values of its inputs and outputs: kernels run by
numba (the last one at sampled points when each point's value is final), composition steps
(views, gathers) by numpy. Framework-neutral: the golden values are torch tensors or arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solar_lsp.ir import calls_index, execute
from solar_lsp.ir.core import Kernel, Load, Op, Program
from solar_lsp.ir.validate import recurrence_var
from solar_lsp.verify.core import (
    FULL_RUN_LIMIT,
    RTOL,
    OpCheck,
    as_float64,
    compare_full,
    compare_points,
    keep_worst,
    mismatch,
    reduction_length,
    tol_dtype,
)


def _arrays(p: Program, op: Op, golden: dict[str, Any]) -> dict[str, np.ndarray] | None:
    arrays: dict[str, np.ndarray] = {}
    for t in op.inputs:
        if t not in golden:
            return None
        arrays[t] = as_float64(golden[t])
    return arrays


def check_op(p: Program, op: Op, golden: dict[str, Any], rng: np.random.Generator,
             samples: int) -> OpCheck:
    """Run ``op``'s IR on its golden inputs and compare with its golden outputs."""
    if op.kind == "alloc":
        return OpCheck(op.id, op.line, "verified", "allocation")
    arrays = _arrays(p, op, golden)
    if arrays is None or any(o not in golden for o in op.outputs):
        return OpCheck(op.id, op.line, "unverified", "golden values missing for this op")
    if op.kind in ("view", "gather"):
        return _check_call(p, op, golden, arrays, rng, samples)
    return _check_kernels(p, op, golden, arrays, rng, samples)


def _check_call(p: Program, op: Op, golden: dict[str, Any], arrays: dict[str, np.ndarray],
                rng: np.random.Generator, samples: int) -> OpCheck:
    """A composition step: its call must reproduce the golden outputs exactly (within the
    dtype's tolerance for an accumulating call)."""
    try:
        got = execute.apply_call(op.call, [arrays[t] for t in op.inputs])
    except Exception as exc:
        return OpCheck(op.id, op.line, "mismatch", f"composition step failed: {exc}")
    gots = got if isinstance(got, tuple) else (got,)  # a call fills outputs in order
    refs = tuple(as_float64(golden[t]) for t in op.outputs[:len(gots)])
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
            w = compare_full(t, g, ref, tol_dtype(p, op), rng, samples, reduction=red)
            if not w["bad"]:
                continue
        return OpCheck(op.id, op.line, "mismatch",
                       f"{op.call} does not reproduce torch's result for {t}")
    return OpCheck(op.id, op.line, "verified")


def _check_kernels(p: Program, op: Op, golden: dict[str, Any], arrays: dict[str, np.ndarray],
                   rng: np.random.Generator, samples: int) -> OpCheck:
    """A compute op: every kernel but the last runs in full; the last at sampled points when
    each point's value is final, else in full."""
    for t in set(k.out.tensor for k in op.kernels) | set(op.outputs):
        if t not in arrays:
            arrays[t] = np.zeros(p.tensors[t].shape, dtype=np.float64)
    prefix, last = op.kernels[:-1], op.kernels[-1]
    cost = sum(k.points for k in prefix)
    if cost > FULL_RUN_LIMIT:
        return OpCheck(op.id, op.line, "unverified",
                       f"executing {cost:.2g} loop points on the CPU is over the verification limit")
    tol_dt = tol_dtype(p, op)
    try:
        for k in prefix:
            execute.run_kernel(k, arrays)
        worst = None
        for t in op.outputs:
            if t != last.out.tensor:
                worst = keep_worst(worst, compare_full(t, arrays[t], as_float64(golden[t]), tol_dt, rng,
                                                       samples))
        if last.out.tensor in op.outputs:
            res = _check_last(op, last, golden, arrays, tol_dt, rng, samples)
            if isinstance(res, OpCheck):
                return res
            worst = keep_worst(worst, res)
        else:
            execute.run_kernel(last, arrays)
    except Exception as exc:
        return OpCheck(op.id, op.line, "unverified", f"executing the IR failed: {type(exc).__name__}: {exc}")
    if worst is not None and worst["bad"]:
        return mismatch(op, worst)
    return OpCheck(op.id, op.line, "verified")


def _check_last(op: Op, last: Kernel, golden: dict[str, Any], arrays: dict[str, np.ndarray],
                tol_dt: str, rng: np.random.Generator, samples: int) -> dict | OpCheck:
    """The comparison of the last kernel's output, or ``unverified`` when it is too large."""
    # a plain copy adds no rounding of its own: run it in full and judge the copied
    # values like the op's other outputs (tensor-wide scale), not per point
    copy = last.op == "=" and isinstance(last.expr, Load)
    if _injective(last) and not copy:
        pts = execute.random_points(last, samples, rng)
        vals, mags = execute.sample_kernel(last, arrays, pts)
        pos = execute.out_positions(last, pts)
        ref = as_float64(golden[last.out.tensor])
        return compare_points(last.out.tensor, pos, vals, mags, ref, tol_dt, reduction_length(last))
    if last.points > FULL_RUN_LIMIT:
        return OpCheck(op.id, op.line, "unverified",
                       f"scatter-form kernel of {last.points:.2g} points is over the limit")
    execute.run_kernel(last, arrays)
    return compare_full(last.out.tensor, arrays[last.out.tensor], as_float64(golden[last.out.tensor]),
                        tol_dt, rng, samples, reduction=reduction_length(last))


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
