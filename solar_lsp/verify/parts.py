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

from solar_lsp.bounds import sol
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


def part_of(op: Op) -> str | None:
    """What ``op`` is checked as part of: a recurrent layer's owner op (bounds/sol.py
    ``part_of``), or ``"loop"`` for an op of a repeated Python loop's body or its
    ``loop_stack`` step (frontend/loops.py), which the loop's owner op replays; None for an op
    checked on its own."""
    owner = sol.part_of(op)
    if owner is not None:
        return owner
    if op.repeat > 1 or (op.call and op.call[0] == "loop_stack"):
        return "loop"
    return None


def parts_by_owner(p: Program) -> dict[str, list[Op]]:
    """Each owner op's parts, in program order: a recurrent layer's (bounds/sol.py) and a
    repeated loop's body (its owner's ``call = ("loop", T, body ids, ...)``)."""
    out = sol.parts_by_owner(p)
    by_id = {op.id: op for op in p.ops}
    for op in p.ops:
        if op.call and op.call[0] == "loop":
            out[op.id] = [by_id[i] for i in op.call[2] if i in by_id]
    return out


def framework_counts(p: Program, flops: Any, ops: list[Op]) -> Any:
    """The framework's tensor-FLOP count (``flops.framework``, verify/counts_torch.py) of each
    checked op in ``ops`` and of each op of a repeated loop's body: the first step's node's
    count times the trips (every step runs the same op on the same shapes; the replay checks
    that the body runs ``repeat`` times)."""
    body = {op.id: op.repeat for op in p.ops if part_of(op) == "loop" and op.repeat > 1}
    fw = flops.framework({op.id for op in ops} | set(body))
    for i, trips in body.items():
        if i in fw.by_op:
            fw.by_op[i] *= trips
    return fw


def check_with_parts(p: Program, op: Op, parts: list[Op], golden: dict[str, Any]) -> OpCheck:
    """Run ``op``'s parts and kernels on its golden inputs; compare its golden outputs."""
    if op.call and op.call[0] == "loop":
        return check_loop(p, op, parts, golden)
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


def check_loop(p: Program, owner: Op, body: list[Op], golden: dict[str, Any]) -> OpCheck:
    """Replay a repeated loop (frontend/loops.py) from the golden values of what it reads from
    outside, T times, and compare what it computed with the framework's last step (the
    body's tensors) and its stacked outputs."""
    _, trips, _, carries, slices, stacks, compared = owner.call
    if any(t not in golden for t in owner.inputs):
        return OpCheck(owner.id, owner.line, "unverified", "golden values missing for this loop")
    cost = trips * sum(k.points for q in body for k in q.kernels)
    if cost > FULL_RUN_LIMIT:
        return OpCheck(owner.id, owner.line, "unverified",
                       f"replaying {cost:.2g} loop points on the CPU is over the verification limit")
    unit = max((unit_roundoff(p, q) for q in body if q.kind == "compute"), default=unit_roundoff(p, owner))
    num = (unit, unit_range(unit))
    arrays = {t: as_float64(golden[t]) for t in owner.inputs if t not in compared}
    errors: dict[str, np.ndarray] = {}
    for _, stacked, *_ in stacks:
        arrays[stacked] = np.zeros(p.tensors[stacked].shape)
    try:
        for t in range(replay_trips(trips)):
            _loop_trip(p, body, t, dict(slices), arrays, errors, num)
            _after_trip(t, carries, stacks, arrays, errors)
    except Exception as exc:
        return OpCheck(owner.id, owner.line, "unverified",
                       f"executing the IR failed: {type(exc).__name__}: {exc}")
    worst = None
    for t in compared:
        got, ref = arrays.get(t), as_float64(golden[t])
        if got is None or got.shape != ref.shape:
            return OpCheck(owner.id, owner.line, "mismatch", f"{t}: no value of its shape after the replay")
        err = errors.get(t, np.zeros(got.shape))
        worst = keep_worst(worst, compare_bounded(t, tuple(got.shape), got, ref, err, out_dtype(p, t), unit))
    if worst is not None and worst["bad"]:
        return mismatch(owner, worst)
    return OpCheck(owner.id, owner.line, "verified", f"{trips} loop steps replayed",
                   ratio=worst["ratio"] if worst else None)


def replay_trips(trips: int) -> int:
    """How many trips the replay runs (all of them; tests plant a bug here)."""
    return trips


def _loop_trip(p: Program, body: list[Op], t: int, slices: dict[str, int],
               arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray], num: tuple) -> None:
    """One trip of the body: views and gathers by numpy (a stepped view at trip ``t``'s
    index), kernels by numba with their error bounds."""
    for q in body:
        if q.kind == "compute":
            for k in q.kernels:
                arrays.setdefault(k.out.tensor, np.zeros(p.tensors[k.out.tensor].shape))
                execute.run_kernel_err(k, arrays, errors, *num)
            continue
        call = q.call
        if q.outputs[0] in slices:
            step = slices[q.outputs[0]] * t
            call = call[:2] + ((call[2] + step,) if call[0] == "select" else (call[2] + step, call[3] + step) + call[4:])
        got = execute.apply_call(call, [arrays[i] for i in q.inputs])
        for o, v in zip(q.outputs, got if isinstance(got, tuple) else (got,)):
            arrays[o] = np.asarray(v, dtype=np.float64)
        if q.kind == "view" and q.inputs[0] in errors:
            errors[q.outputs[0]] = np.asarray(execute.apply_call(call, [errors[q.inputs[0]]] + [
                arrays[i] for i in q.inputs[1:]]), dtype=np.float64)


def _after_trip(t: int, carries: tuple, stacks: tuple, arrays: dict[str, np.ndarray],
                errors: dict[str, np.ndarray]) -> None:
    """Trip ``t``'s slice of each stacked output; each carry takes the value the trip made."""
    for piece, stacked, dim, width in stacks:
        idx = [slice(None)] * arrays[stacked].ndim
        idx[dim] = slice(t * width, (t + 1) * width)
        arrays[stacked][tuple(idx)] = arrays[piece]
        if piece in errors:
            errors.setdefault(stacked, np.zeros(arrays[stacked].shape))[tuple(idx)] = errors[piece]
    new = {init: nxt for init, nxt in carries}
    vals = {init: arrays[nxt].copy() for init, nxt in new.items()}
    errs = {init: errors[nxt].copy() for init, nxt in new.items() if nxt in errors}
    arrays.update(vals)
    errors.update(errs)
