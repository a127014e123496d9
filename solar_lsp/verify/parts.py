"""Check a framework op that the frontend emitted as several ops (its *parts*, ``Op.call =
("part", owner, kind, ...)``, bounds/sol.py ``part_of``): a recurrent layer's input projections
and its loop bodies (``repeat`` = T, frontend/torch/lower_recurrent.py), then the owner op.

The check runs what the unrolled form ran, in the same order and with the same rounding-error
bounds (docs/sol-model.md, Verification): every part from the golden inputs of the owner, a
loop body once per time step, then the owner's own kernels; the owner's outputs are compared
with the framework's. A loop body reads and writes its sequence tensors at the first step's
time ``t0``: before step ``t`` the rows ``t0`` and ``t`` of those tensors (and of their error
bounds) trade places, and trade back after. Its carries start from the initial states and, for
an LSTM or plain RNN, take the step's output row after each step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solar_lsp.bounds.sol import part_of, parts_by_owner  # noqa: F401  (re-exported for check_torch)
from solar_lsp.ir import execute
from solar_lsp.ir.core import Op, Program
from solar_lsp.verify.core import (
    FULL_RUN_LIMIT,
    OpCheck,
    as_float64,
    compare_bounded,
    keep_worst,
    mismatch,
    out_dtype,
    unit_range,
    unit_roundoff,
)


def check_with_parts(p: Program, op: Op, parts: list[Op], golden: dict[str, Any]) -> OpCheck:
    """Run ``op``'s parts and kernels on its golden inputs; compare its golden outputs."""
    if any(t not in golden for t in op.inputs + op.outputs):
        return OpCheck(op.id, op.line, "unverified", "golden values missing for this op")
    cost = sum(k.points * q.repeat for q in parts for k in q.kernels) + sum(k.points for k in op.kernels)
    if cost > FULL_RUN_LIMIT:
        return OpCheck(op.id, op.line, "unverified",
                       f"executing {cost:.2g} loop points on the CPU is over the verification limit")
    unit = unit_roundoff(p, op)
    num = (unit, unit_range(unit))
    arrays = {t: as_float64(golden[t]) for t in op.inputs}
    for q in parts + [op]:
        for k in q.kernels:
            arrays.setdefault(k.out.tensor, np.zeros(p.tensors[k.out.tensor].shape))
    for t in op.outputs:
        arrays.setdefault(t, np.zeros(p.tensors[t].shape))
    errors: dict[str, np.ndarray] = {}
    try:
        for q in parts:
            if q.call[2] == "recurrent_step":
                _run_loop(q, arrays, errors, num)
            else:
                for k in q.kernels:
                    execute.run_kernel_err(k, arrays, errors, *num)
        for k in op.kernels:
            execute.run_kernel_err(k, arrays, errors, *num)
    except Exception as exc:
        return OpCheck(op.id, op.line, "unverified", f"executing the IR failed: {type(exc).__name__}: {exc}")
    worst = None
    for t in op.outputs:
        got, ref = arrays[t], as_float64(golden[t])
        if got.shape != ref.shape:
            return OpCheck(op.id, op.line, "mismatch", f"{t}: shape {got.shape} vs {ref.shape}")
        err = errors.get(t, np.zeros(got.shape))
        worst = keep_worst(worst, compare_bounded(t, tuple(got.shape), got, ref, err, out_dtype(p, t), unit))
    if worst is not None and worst["bad"]:
        return mismatch(op, worst)
    steps = sum(q.repeat for q in parts if q.repeat > 1)
    return OpCheck(op.id, op.line, "verified", f"{steps} loop steps replayed",
                   ratio=worst["ratio"] if worst else None)


def _run_loop(q: Op, arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray], num: tuple) -> None:
    """Every step of one loop body (``call = ("part", owner, "recurrent_step", T, t0, seqs,
    inits, carry)``)."""
    _, _, _, trips, t0, seqs, inits, carry = q.call
    for dest, src, slot in inits:
        arrays[dest] = np.array(arrays[src][slot], dtype=np.float64)
        errors[dest] = np.array(errors[src][slot]) if src in errors else np.zeros(arrays[dest].shape)
    order = range(trips) if t0 == 0 else range(trips - 1, -1, -1)
    for t in order:
        for name, axis in seqs:
            _swap(arrays, errors, name, axis, t0, t)
        for k in q.kernels:
            execute.run_kernel_err(k, arrays, errors, *num)
        for name, axis in seqs:
            _swap(arrays, errors, name, axis, t0, t)
        if carry is not None:
            hc, dst, axis, off = carry
            width = arrays[hc].shape[-1]
            arrays[hc] = np.take(arrays[dst], t, axis=axis)[:, off:off + width].copy()
            if dst in errors:
                errors[hc] = np.take(errors[dst], t, axis=axis)[:, off:off + width].copy()


def _swap(arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray], name: str, axis: int,
          a: int, b: int) -> None:
    """Rows ``a`` and ``b`` of ``name`` (and of its error bound) along ``axis`` trade places."""
    if a == b:
        return
    for d in (arrays, errors):
        x = d.get(name)
        if x is None:
            continue
        ia = [slice(None)] * x.ndim
        ib = list(ia)
        ia[axis], ib[axis] = a, b
        row = x[tuple(ia)].copy()
        x[tuple(ia)] = x[tuple(ib)]
        x[tuple(ib)] = row
