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

A repeated Python loop (frontend/loops.py) is not replayed: ``for_check`` lays it out again
for the verifier, one copy of the body per step on that step's framework values, and each
step's ops are checked on their own like any op (docs/sol-model.md, "Repeated Python loops").
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

from solar_lsp.bounds import sol
from solar_lsp.frontend.errors import Lowered
from solar_lsp.ir import execute
from solar_lsp.ir.core import Affine, Load, Op, Program, TensorType, map_loads, rename_kernel
from solar_lsp.verify.core import (
    FULL_CHECK,
    FULL_RUN_LIMIT,
    OpCheck,
    as_float64,
    compare_whole,
    keep_worst,
    mismatch,
    out_dtype,
    unit_range,
    unit_roundoff,
)
from solar_lsp.verify.op_check import COORDINATE_TARGETS

# A repeated loop's steps other than its first and last are checked at sampled points (the
# first and last indices of every output dimension and random ones, verify/op_check.py
# ``sample_points``) from this many loop points of the last kernel (any op: FULL_CHECK); the
# first and last steps as any op is. Under it a full run costs less than the sampling's own
# bookkeeping (a few ms a check; measured on KernelBench L3 34_VanillaRNNHidden).
STEP_FULL_CHECK = 1e6
# Every step's kernels are the body's: what differs from step to step is where a step reads
# (its stepped views' index, the carries the step before made) and where the stack puts its
# output. Every step's stepped views and the ops reading a carry are checked; the other ops
# at the first and last steps and at STEP_SAMPLE middle steps spread over the loop. The
# second pass at scaled inputs checks the first and last steps and the stack.
STEP_SAMPLE = 4
LOOP_DETAIL = (f"repeated loops: each step's stepped views and carry reads checked, its other ops "
               f"at the first, last and {STEP_SAMPLE} middle steps; at scaled inputs the first and last steps")
_STEP_ID = re.compile(r"@(\d+)/(\d+)$")
# An op reading a carry is checked at every step, and the stack of the steps' outputs writes
# one slice a step: their kernels run over many steps at once (a leading step loop, reading
# the steps' values stacked, ``Op.call = ("steps", ((stacked, members), ...))``) rather than
# once a step, each launch costing about a millisecond (KernelBench L3 34: 256 launches of two
# kernels). Checked the same, point for point; a mismatch's first index is the step within
# the op's range of steps. An op covers as many consecutive steps as keep its stacked values
# (float64 values, bounds and the members held until its last step: BATCH_COPIES bytes an
# element) under STEPS_BATCH_BYTES; the peak estimate counts them.
STEPS_BATCH_BYTES = 16 << 20
BATCH_COPIES = 4 * 8
STEP_VAR = "s_step"


def part_of(op: Op) -> str | None:
    """What ``op`` is checked as part of: a recurrent layer's owner op (bounds/sol.py
    ``part_of``), or ``"loop"`` for an op of a repeated Python loop's body or its
    ``loop_stack`` step (frontend/loops.py), checked step by step (``for_check``); None for an op
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
    count times the trips (every step runs the same op on the same shapes; ``for_check`` checks
    that the body runs ``repeat`` times)."""
    fw = flops.framework(counted_nodes(p, ops))
    for i, trips in _loop_bodies(p).items():
        if i in fw.by_op:
            fw.by_op[i] *= trips
    return fw


def _loop_bodies(p: Program) -> dict[str, int]:
    """Each repeated loop body op's id (its first step's node) and trips."""
    return {op.id: op.repeat for op in p.ops if part_of(op) == "loop" and op.repeat > 1}


def counted_nodes(p: Program, ops: list[Op]) -> set[str]:
    """The framework nodes whose FLOPs ``framework_counts`` reads: each checked op's and each
    loop body op's first step (an op's id is its node's name)."""
    return {op.id for op in ops} | set(_loop_bodies(p))


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
        got, ref = arrays[t], golden[t]
        if got.shape != tuple(np.shape(ref)):
            return OpCheck(op.id, op.line, "mismatch", f"{t}: shape {got.shape} vs {tuple(np.shape(ref))}")
        err = errors.get(t, np.zeros(got.shape))
        worst = keep_worst(worst, compare_whole(t, got, ref, err, out_dtype(p, t), unit))
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
    """A repeated loop's owner op met on its own: its steps are checked one by one on the
    golden run of ``for_check``'s program, never here (no per-step values in ``golden``)."""
    return OpCheck(owner.id, owner.line, "unverified",
                   "a repeated loop's steps are checked one by one (verify/parts.py for_check)")


def checked_steps(trips: int) -> int:
    """How many steps of a loop of ``trips`` steps ``for_check`` lays out (all of them; tests
    plant a bug here)."""
    return trips


def full_check_of(op: Op) -> float:
    """Loop points under which ``op``'s last kernel is compared in full (verify/op_check.py):
    ``STEP_FULL_CHECK`` for a step of a repeated loop other than its first and last."""
    m = _STEP_ID.search(op.id)
    if m is not None and 0 < int(m.group(1)) < int(m.group(2)) - 1:
        return STEP_FULL_CHECK
    if op.call and op.call[0] == "steps":  # every step's points, each step as a middle one
        return max(FULL_CHECK, STEP_FULL_CHECK * len(op.call[1][0][1]))
    return FULL_CHECK


def for_check(lowered: Lowered, middle: bool = True) -> Lowered:
    """``lowered`` for verification: each repeated loop (frontend/loops.py) laid out as its T
    steps, every step a copy of the body on that step's framework values (``Lowered.loop_steps``;
    op ids ``op@t/T``, tensors ``tensor@t``, the last step keeping the body's names), reading
    what the step before made for the carries and its stepped views at its own index; the
    stack of the steps' outputs one op copying each step's piece into its slice. Each step's
    ops are then checked on their own against the framework's inputs of that step, as the
    streamed golden run produces them (verify/check_torch.py); of the middle steps, those
    ``STEP_SAMPLE`` says (none when not ``middle``)."""
    if not lowered.loop_steps:
        return lowered
    p = lowered.program
    by_id = {op.id: op for op in p.ops}
    q = dataclasses.replace(p, tensors=dict(p.tensors), views=dict(p.views), unique=dict(p.unique))
    nodes = dict(lowered.node_of_tensor)
    owners = [op for op in p.ops if op.id in lowered.loop_steps]
    inner = {i for op in owners for i in op.call[2]}
    stacked = {s[1] for op in owners for s in op.call[5]}
    ops: list[Op] = []
    for op in p.ops:
        if op in owners:
            body = [by_id[i] for i in op.call[2]]
            ops += _steps(p, q, op, body, lowered.loop_steps[op.id], nodes, middle)
        elif op.id not in inner and not (op.call and op.call[0] == "loop_stack" and op.outputs[0] in stacked):
            ops.append(op)
    q.ops = ops
    return Lowered(q, lowered.unsupported, nodes)


class StepInputs:
    """Float64 copies of the tensors a repeated loop's steps read from outside the loop
    (parameters, the entry's inputs: no op writes them), converted once for all the steps
    rather than once a step; each is let go with its golden value (``free``)."""

    def __init__(self, p: Program) -> None:
        made = {t for op in p.ops for t in op.outputs + [k.out.tensor for k in op.kernels]}
        self.fixed = {t for t in p.tensors if t not in made and t not in p.views}
        self.cache: dict[str, np.ndarray] = {}

    def golden(self, op: Op, golden: dict[str, Any]) -> dict[str, Any]:
        """``golden`` with the fixed tensors ``op`` reads as their float64 copies, when ``op``
        is a step of a loop (else ``golden`` itself)."""
        shared = [t for t in op.inputs if t in self.fixed and t in golden]
        if not shared or _STEP_ID.search(op.id) is None:
            return golden
        out = dict(golden)
        for t in shared:
            if t not in self.cache:
                self.cache[t] = as_float64(golden[t])
            out[t] = self.cache[t]
        return out

    def free(self, t: str) -> None:
        """Let ``t``'s copy go (its golden value is let go)."""
        self.cache.pop(t, None)


def _steps(p: Program, q: Program, owner: Op, body: list[Op], steps: tuple,
           nodes: dict[str, str], middle: bool) -> list[Op]:
    """The ops of every step of one loop and of its stacks (names and nodes of the steps
    added to ``q`` and ``nodes``)."""
    _, trips, _, carries, slices, stacks, _ = owner.call
    n = checked_steps(trips)
    produced = [t for op in body for t in op.outputs + [k.out.tensor for k in op.kernels] if t in nodes]
    pieces = {s[0]: [] for s in stacks}
    out: list[Op] = []
    prev: dict[str, str] = {}
    whole = {0, n - 1} | {round(i * (n - 1) / (STEP_SAMPLE + 1)) for i in range(1, STEP_SAMPLE + 1)}
    inits = {init for init, _ in carries}
    batched = _batched(p, body, set(produced), inits, n) if middle else set()
    names: list[dict[str, str]] = []  # each step's renaming
    for t in range(n):
        ren = {} if t == n - 1 else {y: f"{y}@{t}" for y in produced}
        at = dict(steps[t]) if t < n - 1 else {}
        for y, a in ren.items():
            q.tensors[a] = p.tensors[y]
            nodes.pop(a, None)
            if y in at:
                nodes[a] = at[y]
            if y in p.unique:
                q.unique[a] = p.unique[y]
        if t > 0:
            ren.update({init: prev.get(nxt, nxt) for init, nxt in carries})
        names.append(ren)
        for op in body:
            if op.outputs and op.outputs[0] in pieces:
                pieces[op.outputs[0]].append((op, ren.get(op.inputs[0], op.inputs[0])))
                continue
            if op.id in batched:
                continue
            wiring = op.outputs and op.outputs[0] in dict(slices) or inits & set(op.inputs)
            if t in (0, n - 1) or (middle and (t in whole or wiring)):
                out.append(_step_op(q, op, ren, slices, t, trips))
        prev = ren
    for op in body:
        if op.id in batched:
            span = batched[op.id]
            out += [_steps_op(q, op, names, range(a, min(a + span, n)), set(produced) | inits, trips)
                    for a in range(0, n, span)]
    for piece, stacked, dim, width in stacks:
        if _stack_fits(p, piece, n):
            out.append(_steps_stack_op(q, piece, stacked, dim, width, pieces[piece]))
        else:
            out.append(_stack_op(piece, stacked, dim, width, pieces[piece]))
    return out


def _batched(p: Program, body: list[Op], produced: set[str], inits: set[str], n: int) -> dict[str, int]:
    """The body ops checked over several steps at once, and how many steps an op covers:
    those with kernels that read a carry, when two steps or more fit ``STEPS_BATCH_BYTES``
    and a step is compared in full (a sampled comparison over many steps could miss a step;
    one step at a time, each step gets its own sampled points)."""
    out = {}
    for op in body:
        # (not an interpolation: its tolerance grows with its inputs' largest dim, op_check._slack)
        if op.kind == "compute" and op.kernels and inits & set(op.inputs) \
                and op.kernels[-1].points <= STEP_FULL_CHECK and not any(s in op.target for s in COORDINATE_TARGETS):
            span = min(n, STEPS_BATCH_BYTES // max(1, _per_step_bytes(p, op, produced | inits)))
            if span >= 2:
                out[op.id] = span
    return out


def _per_step_bytes(p: Program, op: Op, per_step: set[str]) -> int:
    temps = {k.out.tensor for k in op.kernels}  # an op's own buffers: one per step too
    names = set(op.inputs + op.outputs) & per_step | temps
    return sum(p.tensors[t].numel * BATCH_COPIES for t in names if t in p.tensors)


def _stack_fits(p: Program, piece: str, n: int) -> bool:
    return piece in p.tensors and p.tensors[piece].numel * BATCH_COPIES * n <= STEPS_BATCH_BYTES


def batch_bytes(lowered: Lowered) -> int:
    """Bytes the stacked checks of ``for_check``'s layout add at their peak (the verifier's
    memory estimate counts them): the largest loop's."""
    p = lowered.program
    by_id = {op.id: op for op in p.ops}
    top = 0
    for owner in (op for op in p.ops if op.id in lowered.loop_steps):
        _, trips, ids, carries, _, stacks, _ = owner.call
        body = [by_id[i] for i in ids]
        produced = {t for op in body for t in op.outputs + [k.out.tensor for k in op.kernels]}
        inits = {init for init, _ in carries}
        n = checked_steps(trips)
        spans = _batched(p, body, produced, inits, n)
        size = sum(_per_step_bytes(p, op, produced | inits) * spans[op.id] for op in body if op.id in spans)
        size += sum(p.tensors[s[0]].numel * BATCH_COPIES * n for s in stacks if _stack_fits(p, s[0], n))
        top = max(top, size)
    return top


def _stacked(ld: Load, per_step: set[str], tag: str) -> Load:
    """A per-step tensor's read as a read of its steps' stack at the step variable."""
    if ld.tensor not in per_step:
        return ld
    return Load(ld.tensor + tag, (Affine.var(STEP_VAR),) + ld.index)


def _steps_op(q: Program, op: Op, names: list[dict[str, str]], steps: range, per_step: set[str],
              trips: int) -> Op:
    """Body op ``op`` at ``steps`` in one op (id ``op@a-b/T``): its kernels with a leading step
    loop reading and writing the stacks of its per-step tensors (``{tensor}@a-b``, those
    steps' values in order), which ``stacked_check`` builds from the steps' golden values."""
    n, tag = len(steps), f"@{steps[0]}-{steps[-1]}"
    per_step = per_step | {k.out.tensor for k in op.kernels}  # its own buffers: one per step
    mine = [t for t in dict.fromkeys(op.inputs + op.outputs + [k.out.tensor for k in op.kernels])
            if t in per_step]
    for t in mine:
        q.tensors[t + tag] = TensorType((n,) + q.tensors[t].shape, q.tensors[t].dtype)
    members = tuple((t + tag, tuple(names[i].get(t, t) for i in steps)) for t in mine)
    kernels = [dataclasses.replace(k, name=f"{k.name}_steps", loops=((STEP_VAR, n),) + k.loops,
                                   out=_stacked(k.out, per_step, tag),
                                   expr=map_loads(k.expr, lambda ld: _stacked(ld, per_step, tag)))
               for k in op.kernels]
    held = dict(members)
    inputs = [m for t in op.inputs for m in (held[t + tag] if t in per_step else (t,))]
    outputs = [m for t in op.outputs for m in held[t + tag]]
    # what check_op reads and compares: the stacks (a carry's next value is a member of both
    # the stack it reads and the one it writes, so the members alone cannot say which)
    form = (tuple(dict.fromkeys(t + tag if t in per_step else t for t in op.inputs)),
            tuple(t + tag for t in op.outputs))
    return dataclasses.replace(op, id=f"{op.id}{tag}/{trips}", inputs=list(dict.fromkeys(inputs)),
                               outputs=outputs, kernels=kernels, call=("steps", members, *form), repeat=1)


def _steps_stack_op(q: Program, piece: str, whole: str, dim: int, width: int,
                    steps: list[tuple[Op, str]]) -> Op:
    """The stack of the steps' outputs as one op: each copy kernel once, its step loop writing
    slice ``t`` along ``dim`` from the stack of the steps' pieces."""
    op, n, tag = steps[0][0], len(steps), f"@0-{len(steps) - 1}"
    src = op.inputs[0]
    q.tensors[src + tag] = TensorType((n,) + q.tensors[src].shape, q.tensors[src].dtype)
    kernels = []
    for k in op.kernels:
        idx = list(k.out.index)
        idx[dim] = idx[dim] + Affine.var(STEP_VAR, width)
        kernels.append(dataclasses.replace(
            k, name=f"{k.name}_steps", loops=((STEP_VAR, n),) + k.loops, out=Load(whole, tuple(idx)),
            expr=map_loads(k.expr, lambda ld: _stacked(ld, {src}, tag))))
    members = ((src + tag, tuple(s for _, s in steps)),)
    return dataclasses.replace(op, id=f"{op.id}@stack", inputs=[s for _, s in steps], outputs=[whole],
                               kernels=kernels, call=("steps", members, (src + tag,), (whole,)), repeat=1)


def stacked_check(op: Op, golden: dict[str, Any]) -> tuple[Op, dict[str, Any]]:
    """The op ``check_op`` checks for a ``("steps", ...)`` op, and ``golden`` with its stacks:
    its inputs and outputs are the stacks of its members (and the tensors every step reads)."""
    import torch

    _, members, inputs, outputs = op.call
    out = dict(golden)
    for stacked, names in members:
        if all(m in golden for m in names):
            out[stacked] = torch.stack([torch.as_tensor(golden[m]) for m in names])
    return dataclasses.replace(op, inputs=list(inputs), outputs=list(outputs), call=None), out


def _step_op(q: Program, op: Op, ren: dict[str, str], slices: dict, t: int, trips: int) -> Op:
    """Step ``t``'s copy of body op ``op``: its names renamed, a stepped view's index moved."""
    r = lambda x: ren.get(x, x)  # noqa: E731
    call = op.call
    if op.outputs and op.outputs[0] in dict(slices):
        step = dict(slices)[op.outputs[0]] * t
        call = call[:2] + ((call[2] + step,) if call[0] == "select" else (call[2] + step, call[3] + step) + call[4:])
    for o in op.outputs:
        if o in q.views:
            q.views[r(o)] = r(q.views[o])
    return dataclasses.replace(op, id=f"{op.id}@{t}/{trips}", inputs=[r(x) for x in op.inputs],
                               outputs=[r(x) for x in op.outputs], call=call, repeat=1,
                               kernels=[rename_kernel(k, r) for k in op.kernels])


def _stack_op(piece: str, whole: str, dim: int, width: int, steps: list[tuple[Op, str]]) -> Op:
    """The stack of the steps' outputs: step ``t``'s copy kernels write ``whole``'s slice
    ``t`` along ``dim`` from that step's tensor."""
    op = steps[0][0]
    kernels = []
    for t, (_, src) in enumerate(steps):
        to = {op.inputs[0]: src}
        for k in op.kernels:
            idx = list(k.out.index)
            idx[dim] = dataclasses.replace(idx[dim], const=idx[dim].const + t * width)
            kernels.append(dataclasses.replace(rename_kernel(k, lambda x, to=to: to.get(x, x)),
                                               name=f"{k.name}_{t}", out=Load(whole, tuple(idx))))
    return dataclasses.replace(op, id=f"{op.id}@stack", inputs=[s for _, s in steps], outputs=[whole],
                               kernels=kernels, repeat=1)


