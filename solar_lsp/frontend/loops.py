"""Repeated loops (docs/sol-model.md, "Repeated loops"): a Python ``for`` over time steps is
unrolled by the tracer into T copies of the same ops. After lowering, a maximal run of
T >= ``MIN_TRIPS`` consecutive identical blocks is replaced by the first block with every op's
``repeat`` = T, the form the JAX frontend gives a ``scan`` (bounds, fusion and the cache-aware
ILP read it the same way), so the analysis costs one step, not T.

Blocks are identical when their ops have the same targets, kinds, lines, shapes, dtypes and
kernels once tensor names are matched by position, and their data flow repeats: block i+1
reads block i's tensors where block 1 reads block 0's (a carry, whose first value is what
block 0 reads there), reads every other tensor from outside the run unchanged, except a
``select``/``slice`` view whose index moves by the same step each block (``x[t]``). The
tensors of the last block stay visible after the run under the first block's names. A
collector after the run (``torch.stack`` of the steps' outputs: a cat with one group of copy
kernels per step, each group shifted by the same offset) becomes a per-step copy in the body
(its traffic per step, as in the unrolled cat) and a ``loop_stack`` step that moves nothing.
Anything else leaves the loop unrolled: a wrong count is never traded for speed.

The loop keeps one *owner* op (``kind="view"``, no outputs, ``call = ("loop", T, body ids,
carries, slices, stacks, compared)``) that costs nothing and tells the verifier how to check
the body's T steps (verify/parts.py; each step's framework nodes are kept in
``Lowered.loop_steps``). ``REROLL = False`` keeps the unrolled form (tests compare both).
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass, field

from solar_lsp.frontend.errors import Lowered
from solar_lsp.ir.core import (
    Load,
    Op,
    Program,
    TensorType,
    loads,
    rename_kernel,
    rename_loads,
)

#: False: leave Python loops unrolled (one copy of the step's ops per iteration).
REROLL = True
MIN_TRIPS = 3
MAX_CARRY_BYTES = 1 << 20  # a carried state this small stays on chip on every chip we price
MAX_PERIODS = 8  # candidate block lengths tried per start position
STEPPED = ("select", "slice")  # views whose index may move by a constant per block
# ops whose values are drawn at random: each step's draw differs, so a replay of one body
# cannot reproduce them (they stay unrolled, checked on their own)
RANDOM = ("rand", "bernoulli", "dropout", "normal", "uniform", "exponential", "multinomial")


@dataclass
class _Run:
    """A run of T blocks of P ops starting at op index ``start``, and what its data flow is."""

    start: int
    P: int
    T: int
    loc: list[dict[str, str]] = field(default_factory=list)  # block i's tensor -> block 0's
    carries: dict[str, str] = field(default_factory=dict)  # init (read by block 0) -> next
    invariant: set[str] = field(default_factory=set)  # read unchanged by every block
    slices: dict[str, int] = field(default_factory=dict)  # block-0 view -> index step per block

    @property
    def end(self) -> int:
        return self.start + self.P * self.T


def reroll(lowered: Lowered) -> Lowered:
    """``lowered`` with every repeated run of blocks replaced by one loop body (in place of the
    program's ops and tensors; the same object is returned). Inference programs only."""
    p = lowered.program
    if not REROLL or any(op.phase != "forward" for op in p.ops):
        return lowered
    s, n_loops = 0, 0
    sig, at = _signatures(p)
    while s < len(p.ops):
        run = _best_run(p, sig, at, s)
        done = None if run is None else _rewrite(lowered, run, f"loop{n_loops}")
        if done is None:
            s += 1
            continue
        s, n_loops = done, n_loops + 1
        sig, at = _signatures(p)
    return lowered


# ------------------------------------------------------------------ finding runs


def _sig(p: Program, op: Op) -> tuple:
    call = op.call
    if op.kind == "view" and call and call[0] in STEPPED:
        call = call[:2]
    return (op.target, op.kind, op.line, op.phase, op.repeat, repr(call),
            tuple(p.tensors[t] for t in op.outputs if t in p.tensors),
            tuple(k.loops for k in op.kernels))


def _signatures(p: Program) -> tuple[list[int], dict[int, list[int]]]:
    """Each op's signature as a small integer (ops that may never repeat get their own), and
    each signature's positions."""
    ids: dict[tuple, int] = {}
    out: list[int] = []
    at: dict[int, list[int]] = {}
    for op in p.ops:
        loopish = op.repeat != 1 or (op.call and op.call[0] in ("part", "loop", "loop_stack")) or any(
            r in op.target for r in RANDOM)
        key = ("unique", op.id) if loopish else _sig(p, op)
        out.append(ids.setdefault(key, len(ids)))
        at.setdefault(out[-1], []).append(len(out) - 1)
    return out, at


def _best_run(p: Program, sig: list[int], at: dict[int, list[int]], s: int) -> _Run | None:
    """The run starting at op ``s`` covering the most ops, or None (``sig``: the ops'
    signatures; ``at``: each signature's op positions, ascending)."""
    n = len(sig)
    best: _Run | None = None
    pos = at[sig[s]]
    i = bisect.bisect_right(pos, s)
    for j in pos[i:i + MAX_PERIODS]:
        P = j - s
        if P * MIN_TRIPS > n - s:
            break
        block = sig[s:j]
        T = 1
        while s + (T + 1) * P <= n and sig[s + T * P:s + (T + 1) * P] == block:
            T += 1
        if T < MIN_TRIPS or (best is not None and T * P <= best.T * best.P):
            continue
        run = _match(p, _Run(s, P, T))
        if run is not None and (best is None or run.T * run.P > best.T * best.P):
            best = run
    return best


def _produced(op: Op) -> list[str]:
    return list(op.outputs) + [k.out.tensor for k in op.kernels]


def _names(op: Op) -> list[str]:
    """Every tensor name ``op`` mentions, in a fixed order (matched by position across blocks)."""
    out = list(op.inputs) + list(op.outputs)
    for k in op.kernels:
        out.append(k.out.tensor)
        out += [ld.tensor for ld in loads(k.expr)]
    return out


def _match(p: Program, run: _Run) -> _Run | None:
    """``run`` cut to its longest prefix of blocks whose data flow repeats (None: under
    ``MIN_TRIPS``)."""
    ops, P = p.ops, run.P
    locals_of: dict[str, int] = {}
    for i in range(run.T):
        for op in ops[run.start + i * P:run.start + (i + 1) * P]:
            for t in _produced(op):
                locals_of.setdefault(t, i)
    loc0 = {t: t for op in ops[run.start:run.start + P] for t in _produced(op)}
    run.loc = [loc0]
    for i in range(1, run.T):
        loc = _block_map(p, run, i, locals_of)
        if loc is None:
            run.T = i
            break
        run.loc.append(loc)
    if run.T < MIN_TRIPS or set(run.carries) & run.invariant or not _rolls_soundly(p, run):
        return None
    return run


def _rolls_soundly(p: Program, run: _Run) -> bool:
    """Whether the rolled form prices like the unrolled one. The cache-aware model prices one
    body per step, so the state a step hands to the next goes through DRAM unless it fits on
    chip, while unrolled, a chain of elementwise steps over a large state streams as one
    kernel (12 relu/mul-add steps over a 4 MiB x: one pass unrolled, a round trip per step
    rolled). So a loop rolls only when its carried state is at most ``MAX_CARRY_BYTES``: it
    stays on chip either way, and both forms charge the same traffic."""
    carried = sum(p.tensors[t].numel * 8 for t in run.carries if t in p.tensors)  # 8: widest dtype
    return carried <= MAX_CARRY_BYTES


def _block_map(p: Program, run: _Run, i: int, locals_of: dict[str, int]) -> dict[str, str] | None:
    """Block ``i``'s tensors -> block 0's, when block ``i`` repeats block 0 (else None)."""
    base, P = run.start, run.P
    loc: dict[str, str] = {}
    names: dict[str, str] = {}  # every name block i mentions -> the name block 0 has there
    prev = run.loc[i - 1]
    carries, invariant = dict(run.carries), set(run.invariant)
    for j in range(P):
        a, b = p.ops[base + i * P + j], p.ops[base + j]
        na, nb = _names(a), _names(b)
        if len(na) != len(nb):
            return None
        for x, y in zip(na, nb):
            if names.setdefault(x, y) != y:
                return None
            owner = locals_of.get(x)
            if owner == i:
                if (loc.setdefault(x, y) != y or locals_of.get(y) != 0 or p.tensors.get(x) != p.tensors.get(y)
                        or p.unique.get(x) != p.unique.get(y)):
                    return None
            elif owner == i - 1 and x in prev:  # a carry: block 0 reads its first value there
                if locals_of.get(y) is not None or carries.setdefault(y, prev[x]) != prev[x]:
                    return None
                if p.tensors.get(y) != p.tensors.get(x):
                    return None
            elif owner is None and x == y:
                invariant.add(x)
            else:
                return None
        if not _same_op(a, b, names, i, run):
            return None
    run.carries, run.invariant = carries, invariant
    return loc


def _same_op(a: Op, b: Op, names: dict[str, str], i: int, run: _Run) -> bool:
    """Op ``a`` of block ``i`` is op ``b`` of block 0 once its names are block 0's (a stepped
    view's index ``i`` steps further)."""
    if a.kind == "view" and a.call and a.call[0] in STEPPED and a.call != b.call:
        step = _view_step(a.call, b.call, i)
        if step is None or run.slices.setdefault(b.outputs[0], step) != step:
            return False
    elif a.call != b.call:
        return False
    if len(a.kernels) != len(b.kernels):
        return False
    ren = lambda t: names.get(t, t)  # noqa: E731
    return all(dataclasses.replace(rename_kernel(ka, ren), name="") == dataclasses.replace(kb, name="")
               for ka, kb in zip(a.kernels, b.kernels))


def _view_step(ca: tuple, cb: tuple, i: int) -> int | None:
    """Index step per block of a select/slice view (block ``i``'s call ``ca``, block 0's ``cb``)."""
    if len(ca) != len(cb) or ca[:2] != cb[:2]:
        return None
    if ca[0] == "select":
        d = ca[2] - cb[2]
    else:
        d = ca[2] - cb[2]
        if ca[3] - cb[3] != d or ca[4] != cb[4]:
            return None
    return d // i if d % i == 0 and d else None




# ------------------------------------------------------------------ rewriting


def _rewrite(lowered: Lowered, run: _Run, tag: str) -> int | None:
    """Replace ``run`` by its first block run T times; the index after the new body (None:
    the run's values escape in a way the loop form cannot say, and it stays unrolled)."""
    p = lowered.program
    body, rest = p.ops[run.start:run.start + run.P], p.ops[run.end:]
    early = {t for loc in run.loc[:-1] for t in loc}  # tensors of every block but the last
    readers = [op for op in rest if early & set(_names(op))]
    if early & set(p.outputs) or len(readers) > 1:
        return None
    stack = _collector(p, run, readers[0]) if readers else None
    if readers and stack is None:
        return None
    last = run.loc[-1]
    steps = _drop_blocks(lowered, run)
    ren = lambda t: last.get(t, t)  # noqa: E731  the last block's values, under block 0's names
    for op in rest:
        op.inputs = [ren(t) for t in op.inputs]
        op.kernels = [dataclasses.replace(k, expr=rename_loads(k.expr, ren)) for k in op.kernels]
    p.views = {v: ren(b) for v, b in p.views.items()}
    p.outputs = [ren(t) for t in p.outputs]
    for op in body:
        op.repeat = run.T
        op.note = (op.note + "; " if op.note else "") + f"loop body ({tag}): runs {run.T} times"
    new_body = body + ([stack[0]] if stack else [])
    after = rest
    if stack:
        after = [stack[1] if op is readers[0] else op for op in rest]
    owner = _owner(lowered, run, new_body, stack, tag)
    lowered.loop_steps[owner.id] = steps
    at = after.index(stack[1]) + 1 if stack else 0
    p.ops = p.ops[:run.start] + new_body + after[:at] + [owner] + after[at:]
    return run.start + len(new_body)


def _drop_blocks(lowered: Lowered, run: _Run) -> tuple:
    """Forget the tensors of blocks 1..T-1; block 0's names take the last block's framework
    nodes (their golden values are the last step's). Returns, for each step but the last,
    (block 0's name, that step's framework node) of its tensors: the verifier checks every
    step against the framework's values of that step (verify/parts.py)."""
    p, nodes = lowered.program, lowered.node_of_tensor
    steps = tuple(tuple((y, nodes[x]) for x, y in loc.items() if x in nodes) for loc in run.loc[:-1])
    for x, y in run.loc[-1].items():
        if x in nodes:
            nodes[y] = nodes[x]
        else:
            nodes.pop(y, None)
    for loc in run.loc[1:]:
        for x in loc:
            for d in (p.tensors, p.views, p.unique, nodes):
                d.pop(x, None)
    return steps


def _owner(lowered: Lowered, run: _Run, body: list[Op], stack: tuple | None, tag: str) -> Op:
    """The loop's owner op: costs nothing, holds what the verifier's replay needs."""
    p, nodes = lowered.program, lowered.node_of_tensor
    outside = [t for t in list(run.invariant) + list(run.carries) if t in p.tensors]
    compared = [t for op in body if op.kind != "view" for t in op.outputs if t in nodes]
    stacks: tuple = ()
    if stack:
        piece_op, exit_op = stack
        stacks = ((piece_op.outputs[0], exit_op.outputs[0]) + tuple(exit_op.call[2:]),)
        compared.append(exit_op.outputs[0])
    ins = list(dict.fromkeys(sorted(outside, key=lambda t: (t not in p.inputs, t)) + compared))
    call = ("loop", run.T, tuple(op.id for op in body), tuple(run.carries.items()),
            tuple(run.slices.items()), stacks, tuple(compared))
    return Op(id=f"{tag}_{body[0].id}", target="loop", line=body[0].line, inputs=ins, outputs=[],
              kind="view", call=call,
              note=f"a Python loop of {run.T} steps: its body is emitted once and counted {run.T}x")


def _collector(p: Program, run: _Run, C: Op) -> tuple[Op, Op] | None:
    """The per-step copy and the ``loop_stack`` step of a cat of one tensor per block (the
    decomposed ``torch.stack``), or None when ``C`` is not such a cat."""
    T = run.T
    if C.kind != "compute" or C.repeat != 1 or len(C.outputs) != 1 or len(C.inputs) != T:
        return None
    if any(run.loc[k].get(t) != C.inputs[0] for k, t in enumerate(C.inputs)):
        return None
    m, r = divmod(len(C.kernels), T)
    out = C.outputs[0]
    if r or not m:
        return None
    shift = _stack_shift(C, T, m)
    if shift is None:
        return None
    d, width = shift
    shape = p.tensors[out].shape
    if shape[d] != T * width or any(
            not (0 <= lo and hi < width)
            for k in C.kernels[:m] for lo, hi in [k.out.index[d].bounds(k.extents)]):
        return None
    piece = f"{out}_step"
    while piece in p.tensors:
        piece += "_"
    p.tensors[piece] = TensorType(shape[:d] + (width,) + shape[d + 1:], p.tensors[out].dtype)
    q = C.inputs[0]
    step = Op(id=f"{C.id}_step", target=C.target, line=C.line, inputs=[q], outputs=[piece],
              kernels=[dataclasses.replace(k, out=Load(piece, k.out.index)) for k in C.kernels[:m]],
              repeat=T, note="the stack's copy of one step's output (runs once per step)")
    exit_op = Op(id=C.id, target=C.target, line=C.line, inputs=[piece], outputs=[out], kind="view",
                 call=("loop_stack", T, d, width),
                 note="loop plumbing: the body's copy writes every step's slice")
    return step, exit_op


def _stack_shift(C: Op, T: int, m: int) -> tuple[int, int] | None:
    """(dim, width): group k of ``C``'s kernels is group 0 reading block k's tensor and
    writing ``k * width`` further along ``dim``; None otherwise."""
    found: tuple[int, int] | None = None
    q = C.inputs[0]
    for a in range(m):
        k0 = C.kernels[a]
        if k0.inputs() != [q]:
            return None
        for k in range(1, T):
            kk = C.kernels[k * m + a]
            if kk.inputs() != [C.inputs[k]] or len(kk.out.index) != len(k0.out.index):
                return None
            diff = [(dim, x, y) for dim, (x, y) in enumerate(zip(kk.out.index, k0.out.index)) if x != y]
            if len(diff) != 1 or diff[0][1].terms != diff[0][2].terms:
                return None
            dim, x, y = diff[0]
            off = x.const - y.const
            if off % k or off <= 0 or (found is not None and found != (dim, off // k)):
                return None
            found = (dim, off // k)
            same = dataclasses.replace(kk, name="", out=Load(k0.out.tensor, k0.out.index),
                                       expr=rename_loads(kk.expr, lambda t: q))
            if same != dataclasses.replace(k0, name=""):
                return None
    return found
