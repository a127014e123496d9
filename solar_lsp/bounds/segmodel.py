"""The model of one fused segment that the tiling search prices (:mod:`solar_lsp.bounds.tiling`):
its loops unified into dimensions through the tensors its kernels pass to each other, and every
access to a tensor it reads, writes or keeps on chip, by the dimensions that index it."""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field

from solar_lsp.bounds.einsum_graph import tensor_bytes
from solar_lsp.bounds.viewmap import ViewMap
from solar_lsp.ir.core import Affine, Call, Const, Expr, Index, Kernel, Load, Op, Program, loads
from solar_lsp.source.pragma import dtype_size

MAX_LADDER = 12  # tile sizes per dimension (powers of two and the full extent)
MAX_CAT_PIECES = 8  # a cat of more pieces (bicubic: 72) or of cats stays stored: selects multiply
SMALL_DIM = 4  # dims this short (filter taps) are never split


@dataclass(frozen=True)
class Pos:
    """An affine index position ``sum(coef * dim) + const`` clamped to ``[0, extent)``."""

    terms: tuple[tuple[int, int], ...]
    const: int
    extent: int


@dataclass
class Access:
    """One way the segment touches a tensor."""

    tensor: str
    role: str  # "in" | "out" | "mid"
    nbytes: int
    elsize: int
    plain: frozenset[int]  # dims indexed by a plain position
    affine: tuple[Pos, ...]  # positions with strides, offsets or several dims (halos)
    reader_dims: list[frozenset[int]] = field(default_factory=list)
    writer_dims: frozenset[int] = frozenset()
    out_too: bool = False  # an intermediate that is also needed after the segment

    @property
    def dims(self) -> frozenset[int]:
        return self.plain | {d for p in self.affine for d, _ in p.terms}


@dataclass
class Dim:
    """One dimension of a segment: loops of identical role merged, and its tile ladder."""

    label: str
    extents: tuple[int, ...]  # merged loops, outer to inner
    ladder: list[tuple[tuple[int, ...], int]]  # (tile per merged loop, trips); full extent last

    @property
    def extent(self) -> int:
        return math.prod(self.extents)


@dataclass
class SegModel:
    """A fused segment as the schedule search sees it: its dims and the accesses that cost."""

    dims: list[Dim]
    accesses: list[Access]
    kernel_dims: list[frozenset[int]]
    batch: list[str]  # labels of the dims tiled by 1 and placed outermost

    def key(self) -> tuple:
        """Structure of the model without names: equal keys have equal schedules."""
        return (tuple(d.extents for d in self.dims),
                tuple((a.role, a.nbytes, a.elsize, tuple(sorted(a.plain)), a.affine,
                       tuple(sorted(tuple(sorted(r)) for r in a.reader_dims)),
                       tuple(sorted(a.writer_dims)), a.out_too) for a in self.accesses))


# ------------------------------------------------------------------ building the model


class _UF:
    def __init__(self) -> None:
        self.parent: dict = {}
        self.kernels: dict = {}

    def add(self, node: tuple[int, str]) -> None:
        if node not in self.parent:
            self.parent[node] = node
            self.kernels[node] = {node[0]}

    def find(self, x):
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b) -> bool:
        """Merge two loop classes; False if that would identify two loops of one kernel."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        if self.kernels[ra] & self.kernels[rb]:
            return False
        self.parent[rb] = ra
        self.kernels[ra] |= self.kernels.pop(rb)
        return True


def _terms(a: Affine, ext: dict[str, int]) -> tuple[list[tuple[str, int]], int]:
    """Terms of an index without loops of extent 1 (they are constant 0)."""
    return [(v, c) for v, c in a.terms if c and ext.get(v, 1) > 1], a.const


def _plain(a: Affine, ext: dict[str, int]) -> str | None:
    t, c = _terms(a, ext)
    return t[0][0] if len(t) == 1 and t[0][1] == 1 and c == 0 else None


def _mirror(a: Affine, ext: dict[str, int]) -> str | None:
    """The loop ``v`` of a reversed position ``n − 1 − v`` (n the extent of v): ``flip``."""
    t, c = _terms(a, ext)
    return t[0][0] if len(t) == 1 and t[0][1] == -1 and c == ext[t[0][0]] - 1 else None


@dataclass
class _Segment:
    """The kernels of a segment and the tensors they reach, as ``build_model`` gathers them."""

    p: Program
    kernels: list[Kernel]
    ext: list[dict[str, int]]
    uf: _UF
    needed_outside: set[str]
    dead: frozenset[str]
    # (reader, writer, base index) of every read of a tensor written earlier in the segment
    internal: list[tuple[int, int, tuple[Affine, ...]]] = field(default_factory=list)
    external: list[tuple[int, str, tuple[Affine, ...]]] = field(default_factory=list)
    writers: dict[str, list[int]] = field(default_factory=dict)
    mids: dict[str, set[int]] = field(default_factory=dict)
    boxes: dict[str, list[tuple[tuple[int, int], ...]]] = field(default_factory=dict)  # per writer
    pieces: set[str] = field(default_factory=set)  # tensors written piece by piece (cat)


def build_model(p: Program, vm: ViewMap, ops: list[Op], free: set[str],
                needed_outside: set[str], dead: frozenset[str] = frozenset()) -> SegModel | None:
    """The segment model of ``ops`` (in program order), or None when they cannot share tiles:
    a view that is not affine between two of them, a halo or offset read of an intermediate,
    a partial write, or a transposed reread of a tensor inside one tile. A scan's two kernels
    are one loop nest (``fold_scans``); ``dead`` tensors (no op reads them, the program does
    not return them) are computed but never stored."""
    kernels = _inline_cats(fold_scans([k for op in ops for k in op.kernels], p), p, vm, needed_outside)
    if not kernels:
        return None
    ext = [dict(k.loops) for k in kernels]
    uf = _UF()
    for ki, e in enumerate(ext):
        for v, n in e.items():
            if n > 1:
                uf.add((ki, v))
    seg = _Segment(p, kernels, ext, uf, needed_outside, dead)
    if not _trace_tensors(seg, vm, free) or not _unify_internal(seg):
        return None
    _unify_external(seg)
    return _assemble(seg)


def fold_scans(kernels: list[Kernel], p: Program) -> list[Kernel]:
    """A scan as the one loop nest a scan kernel runs. The lowering's two kernels, the first
    element of each line ``out[.., 0, ..] = x[.., 0, ..]`` and the recurrence
    ``out[.., v+1, ..] = out[.., v, ..] ⊕ x[.., v+1, ..]`` over ``v < n − 1``, become
    ``out[.., v, ..] = ⊕(x[.., v, ..])`` over the whole line: every element written once, x
    read once. The carry (the previous element of each line, of this scan or of a scan it
    runs beside, as cummax's indices read the running max) stays on chip, unpriced like a
    streamed reduction's accumulator. Kernels that are not such a pair are kept as they are."""
    out: list[Kernel] = []
    scanned: set[str] = set()
    i = 0
    while i < len(kernels):
        folded = None
        if i + 1 < len(kernels):
            folded = _fold_pair(kernels[i], kernels[i + 1], p, scanned)
        if folded is None:
            out.append(kernels[i])
            i += 1
            continue
        out.append(folded)
        scanned.add(folded.out.tensor)
        i += 2
    return out


def _scan_position(k0: Kernel, k1: Kernel, p: Program) -> tuple[int, str] | None:
    """(position, loop) of the scanned dim when ``k0`` writes the first element of every line
    of a tensor and ``k1`` the rest, one step after the element it reads: None otherwise."""
    t = k1.out.tensor
    if (k0.out.tensor != t or k0.op != "=" or k1.op != "=" or k0.guards or k1.guards
            or k0.init == "keep" or k1.init == "keep" or len(k0.out.index) != len(k1.out.index)):
        return None
    shape = p.tensors[t].shape
    e1 = dict(k1.loops)
    hit = [(d, a.terms[0][0]) for d, a in enumerate(k1.out.index)
           if len(a.terms) == 1 and a.terms[0][1] == 1 and a.const == 1]
    if len(hit) != 1:
        return None
    d, v = hit[0]
    if e1.get(v) != shape[d] - 1 or k0.out.index[d] != Affine.of(0):
        return None
    if any(k0.out.index[j] != k1.out.index[j] for j in range(len(shape)) if j != d):
        return None
    if tuple(lp for lp in k1.loops if lp[0] != v) != tuple(k0.loops):
        return None
    return d, v


def _fold_pair(k0: Kernel, k1: Kernel, p: Program, scanned: set[str]) -> Kernel | None:
    """The one-kernel form of a scan's first-element and recurrence kernels, or None when they
    are not such a pair (see ``fold_scans``)."""
    hit = _scan_position(k0, k1, p)
    if hit is None:
        return None
    d, v = hit
    t = k1.out.tensor
    cur = k1.out.index
    prev = cur[:d] + (Affine.var(v),) + cur[d + 1:]
    carries = scanned | {t}
    if Load(t, prev) not in loads(k1.expr):
        return None  # not a recurrence on its own previous element

    def rewrite(e: Expr) -> Expr:
        if isinstance(e, Load):
            if e.tensor in carries and e.index == prev:
                return Const(0.0)  # the carry: on chip
            return Load(e.tensor, tuple(_shift(a, v) for a in e.index))
        if isinstance(e, Call):
            return Call(e.fn, tuple(rewrite(x) for x in e.args))
        return e

    expr = rewrite(k1.expr)
    first = {(ld.tensor, tuple(_at_zero(a, v) for a in ld.index)) for ld in loads(expr)}
    if any(ld.tensor in carries or (ld.tensor, ld.index) not in first for ld in loads(k0.expr)):
        return None  # the first element reads something the recurrence does not
    loops = tuple((w, n + 1 if w == v else n) for w, n in k1.loops)
    return dataclasses.replace(k1, loops=loops, out=Load(t, prev), expr=expr)


def _shift(a: Affine, v: str) -> Affine:
    """``a`` with loop ``v`` replaced by ``v − 1`` (the recurrence's step v writes v + 1)."""
    c = dict(a.terms).get(v, 0)
    return a + (-c) if c else a


def _at_zero(a: Affine, v: str) -> Affine:
    """``a`` with loop ``v`` set to 0."""
    return Affine(tuple((w, c) for w, c in a.terms if w != v), a.const)


def _inline_cats(kernels: list[Kernel], p: Program, vm: ViewMap, keep: set[str]) -> list[Kernel]:
    """A tensor written piece by piece (a cat: boxes that tile it) and read later in the segment
    as a view of its pieces, as a compiler fuses a cat into its reader: each read selects on the
    index the piece that holds the element and loads that piece's operands at shifted positions
    (a ``select`` call only this model reads: it is never run or priced). The pieces are stored
    only when ``keep`` (needed after the segment) has the tensor."""
    kernels, by_t = list(kernels), {}
    for ki, k in enumerate(kernels):
        by_t.setdefault(k.out.tensor, []).append(ki)
    drop: set[int] = set()
    for t, ws in by_t.items():
        if not 2 <= len(ws) <= MAX_CAT_PIECES or any(_has_select(kernels[ki].expr) for ki in ws):
            continue  # one writer, or too many pieces to read in place (MAX_CAT_PIECES)
        subs, boxes = [_piece_subst(kernels[ki]) for ki in ws], [_box(kernels[ki], p) for ki in ws]
        if (None in subs or None in boxes or not _tiled_exactly(boxes, p.tensors[t].shape)
                or any(p.base(k.out.tensor) == t for k in kernels[ws[-1] + 1:])):
            continue  # not a cat, or written again later
        pieces = [(kernels[ki].expr, sub) for ki, sub in zip(ws, subs)]

        def rewrite(e: Expr, pieces=pieces, t=t) -> Expr:
            m = vm.to_base(e.tensor, e.index) if isinstance(e, Load) and p.base(e.tensor) == t else None
            if m is not None and m[0] == t:  # (a read not affine through its views stays)
                return Call("select", tuple(_at(x, sub, m[1]) for x, sub in pieces))
            return Call(e.fn, tuple(rewrite(x) for x in e.args)) if isinstance(e, Call) else e

        for ki in range(ws[-1] + 1, len(kernels)):
            kernels[ki] = dataclasses.replace(kernels[ki], expr=rewrite(kernels[ki].expr))
        if t not in keep and not any(p.base(ld.tensor) == t for k in kernels for ld in loads(k.expr)):
            drop.update(ws)
    return [k for ki, k in enumerate(kernels) if ki not in drop]


def _has_select(e: Expr) -> bool:  # ``e`` reads a cat in place already (a cat of cats)
    return isinstance(e, Call) and (e.fn == "select" or any(_has_select(x) for x in e.args))


def _piece_subst(k: Kernel) -> list[tuple[str, int, int]] | None:
    """(loop, position, offset) of each loop of a piece ``out[.., v + c, ..] = f(..)``: None
    unless every loop of the kernel is a plain, shifted position of what it writes."""
    if k.op != "=" or k.reduce_vars or k.guards or k.init == "keep":
        return None
    out = [(a.terms[0][0], pos, a.const) for pos, a in enumerate(k.out.index) if a.terms]
    if any(len(a.terms) > 1 or (a.terms and a.terms[0][1] != 1) for a in k.out.index):
        return None
    return out if sorted(v for v, _, _ in out) == sorted(v for v, _ in k.loops) else None


def _at(e: Expr, sub: list[tuple[str, int, int]], idx: tuple[Affine, ...]) -> Expr:
    """A piece's expression at the element ``idx`` of the tensor it writes: each of its loops
    ``v`` (written at position ``pos`` shifted by ``c``) replaced by ``idx[pos] − c``."""
    by = {v: idx[pos] + (-c) for v, pos, c in sub}

    def aff(a: Affine) -> Affine:
        return sum((by[v] * c for v, c in a.terms), Affine.of(a.const))

    if isinstance(e, Load):
        return Load(e.tensor, tuple(aff(a) for a in e.index))
    if isinstance(e, Index):
        return Index(aff(e.expr))
    return Call(e.fn, tuple(_at(x, sub, idx) for x in e.args)) if isinstance(e, Call) else e


def _trace_tensors(seg: _Segment, vm: ViewMap, free: set[str]) -> bool:
    """Sort every read into internal (written earlier in the segment) and external; False when
    an internal read is not affine through its views or a kernel does not write all its output."""
    p = seg.p
    last_writer: dict[str, int] = {}
    for ki, k in enumerate(seg.kernels):
        lds = loads(k.expr) + ([k.out] if k.init == "keep" else [])
        for ld in lds:
            b = p.base(ld.tensor)
            if b in free:
                continue
            if b in last_writer:
                m = vm.to_base(ld.tensor, ld.index)
                if m is None or m[0] != b:
                    return False
                seg.internal.append((ki, last_writer[b], m[1]))
                seg.mids.setdefault(b, set()).add(ki)
            else:
                seg.external.append((ki, ld.tensor, ld.index))
        box = _box(k, p)
        if box is None:
            return False
        if any(lo != 0 or hi != n for (lo, hi), n in zip(box, p.tensors[k.out.tensor].shape)):
            if k.guards:
                return False
            seg.pieces.add(k.out.tensor)
        last_writer[k.out.tensor] = ki
        seg.writers.setdefault(k.out.tensor, []).append(ki)
        seg.boxes.setdefault(k.out.tensor, []).append(box)
    return all(t not in seg.mids and _tiled_exactly(seg.boxes[t], p.tensors[t].shape)
               for t in seg.pieces)


def _tiled_exactly(boxes: list[tuple[tuple[int, int], ...]], shape: tuple[int, ...]) -> bool:
    """Do the boxes (each inside the tensor) cover it, none overlapping another?"""
    if sum(math.prod(hi - lo for lo, hi in b) for b in boxes) != math.prod(shape):
        return False
    return not any(all(la < hb and lb < ha for (la, ha), (lb, hb) in zip(a, b))
                   for a, b in itertools.combinations(boxes, 2))


def _unify_internal(seg: _Segment) -> bool:
    """Identify each producer loop with the consumer loop that reads the same position, or the
    same position reversed (a flip: the consumer walks that loop backwards, a permutation of
    the same tiles); False when an intermediate is read at a halo or offset, both ways round in
    one kernel (two tiles of it at once, like a transposed re-read), or when two loops of one
    kernel would merge."""
    ext, uf = seg.ext, seg.uf
    way: dict[tuple[int, int, int], bool] = {}  # (consumer, producer, position) -> reversed
    for kc, kp, bidx in seg.internal:
        pidx = seg.kernels[kp].out.index
        if len(pidx) != len(bidx):
            return False
        for pos, (pe, ce) in enumerate(zip(pidx, bidx)):
            pt, _ = _terms(pe, ext[kp])
            if not pt:
                continue
            v = _plain(pe, ext[kp])
            if v is None:
                return False
            ct, _ = _terms(ce, ext[kc])
            u = _plain(ce, ext[kc])
            back = u is None and _mirror(ce, ext[kc]) is not None
            u = u if u is not None else _mirror(ce, ext[kc])
            if u is not None and ext[kc][u] == ext[kp][v]:
                if way.setdefault((kc, kp, pos), back) != back or not uf.union((kp, v), (kc, u)):
                    return False
            elif ct:
                return False
    return True


def _unify_external(seg: _Segment) -> None:
    """Identify the loops of two kernels that read one outside tensor at positions of the same
    shape."""
    ext, uf = seg.ext, seg.uf
    by_tensor: dict[object, list[tuple[int, tuple[Affine, ...]]]] = {}
    for ki, t, idx in seg.external:
        by_tensor.setdefault(t, []).append((ki, idx))
    for t in seg.pieces:  # the pieces of a cat line up where they are not concatenated
        by_tensor.setdefault(("written", t), []).extend((ki, seg.kernels[ki].out.index)
                                                        for ki in seg.writers[t])
    for uses in by_tensor.values():  # (keyed once per use: a DenseNet cat has 50 pieces)
        keyed = [(ki, [_shape_key(a, ext[ki]) for a in idx]) for ki, idx in uses]
        for (ka, pa), (kb, pb) in itertools.combinations(keyed, 2):
            if ka == kb or len(pa) != len(pb):
                continue
            for (key_a, loops_a), (key_b, loops_b) in zip(pa, pb):
                if key_a is not None and key_a == key_b:
                    for va, vb in zip(loops_a, loops_b):
                        uf.union((ka, va), (kb, vb))  # a refusal only leaves two access patterns


def _shape_key(a: Affine, ext: dict[str, int]) -> tuple[tuple | None, list[str]]:
    """Two index positions of the same shape (``2*s0 + k0`` and ``2*s + k``) have equal keys,
    their constant and sorted (coefficient, extent) pairs (None when two pairs are equal: such
    a position pairs with none); their loops, in that order, pair up one to one."""
    t, c = _terms(a, ext)
    ranked = sorted((k, ext[v], v) for v, k in t)
    shape = [x[:2] for x in ranked]
    if len(set(shape)) != len(shape):
        return None, []
    return (c, tuple(shape)), [x[2] for x in ranked]


def _box(k: Kernel, p: Program) -> tuple[tuple[int, int], ...] | None:
    """The box ``[lo, hi)`` per position that a kernel writes, each position a plain loop
    shifted by a constant (a piece of a cat) or a constant: None for any other write."""
    shape = p.tensors[k.out.tensor].shape
    ext = dict(k.loops)
    box: list[tuple[int, int]] = []
    seen = set()
    for a, n in zip(k.out.index, shape):
        t, c = _terms(a, ext)
        if not t:
            if not 0 <= c < n:
                return None
            box.append((c, c + 1))
            continue
        v = t[0][0]
        if len(t) != 1 or t[0][1] != 1 or v in seen or c < 0 or c + ext[v] > n:
            return None
        seen.add(v)
        box.append((c, c + ext[v]))
    return tuple(box)


def _assemble(seg: _Segment) -> SegModel | None:
    cls, order, kclasses = _loop_classes(seg)
    raw = _raw_accesses(seg, cls)
    for r in raw:  # one class per loop at most once per access
        if any(d in r["plain"] for pos in r["affine"] for d, _ in pos.terms):
            return None
    dim_of, dims, batch_cls = _merge_dims(raw, order, kclasses)
    p = seg.p
    accesses = []
    for r in raw:
        t = r["tensor"]
        el = dtype_size(p.tensors[t].dtype)
        plain = frozenset(dim_of[c] for c in r["plain"] if c in dim_of)
        aff = tuple(Pos(tuple((dim_of[c], co) for c, co in pos.terms), pos.const, pos.extent)
                    for pos in r["affine"])
        rd = [frozenset(dim_of[c] for c in kclasses[ki] if c in dim_of) for ki in r["readers"]]
        wd = frozenset(dim_of[c] for ki in r.get("writers", ()) for c in kclasses[ki] if c in dim_of)
        accesses.append(Access(t, r["role"], r.get("nbytes", tensor_bytes(p, t)), el, plain, aff,
                               rd, wd, r.get("out_too", False)))
    kdims = [frozenset(dim_of[c] for c in kc if c in dim_of) for kc in kclasses]
    return SegModel(dims, accesses, kdims, [order[c][2] for c in batch_cls])


def _loop_classes(seg: _Segment) -> tuple[dict, list, list[frozenset[int]]]:
    """Number the unified loop classes in first-seen order: (class of each root, (root, extent,
    first loop name) per class, the classes of each kernel)."""
    uf = seg.uf
    cls: dict = {}
    order: list = []
    for ki, k in enumerate(seg.kernels):
        for v, n in k.loops:
            if n > 1:
                r = uf.find((ki, v))
                if r not in cls:
                    cls[r] = len(order)
                    order.append((r, n, v))
    kclasses = [frozenset(cls[uf.find((ki, v))] for v, n in k.loops if n > 1)
                for ki, k in enumerate(seg.kernels)]
    return cls, order, kclasses


def _positions(seg: _Segment, cls: dict, ki: int, idx: tuple[Affine, ...],
               shape) -> tuple[set[int], list[Pos]]:
    """The classes kernel ``ki`` indexes plainly with ``idx``, and its other positions."""
    ext, uf = seg.ext, seg.uf
    plain, aff = set(), []
    for a, n in zip(idx, shape):
        t, c = _terms(a, ext[ki])
        if not t:
            continue
        v = _plain(a, ext[ki])
        if v is not None:
            plain.add(cls[uf.find((ki, v))])
        else:
            aff.append(Pos(tuple((cls[uf.find((ki, w))], co) for w, co in t), c, n))
    return plain, aff


def _raw_accesses(seg: _Segment, cls: dict) -> list[dict]:
    """Accesses over loop classes: one per distinct pattern of an outside read, one per tensor
    written."""
    p, kernels = seg.p, seg.kernels
    raw: list[dict] = []
    seen: dict = {}
    for ki, t, idx in seg.external:
        plain, aff = _positions(seg, cls, ki, idx, p.tensors[t].shape)
        key = (t, frozenset(plain), tuple(aff))
        if key not in seen:
            seen[key] = len(raw)
            raw.append({"tensor": t, "role": "in", "plain": plain, "affine": aff, "readers": []})
        raw[seen[key]]["readers"].append(ki)
    for t, ws in seg.writers.items():
        if t in seg.dead and t not in seg.mids and t not in seg.needed_outside:
            continue  # read by nothing and not returned: never stored
        if t in seg.pieces:  # each piece is written by its own kernel: one output each
            el = dtype_size(p.tensors[t].dtype)
            for ki, box in zip(ws, seg.boxes[t]):
                plain = {cls[seg.uf.find((ki, v))] for a in kernels[ki].out.index
                         for v, _ in _terms(a, seg.ext[ki])[0]}
                raw.append({"tensor": t, "role": "out", "plain": plain, "affine": [], "readers": [],
                            "writers": [ki], "nbytes": el * math.prod(hi - lo for lo, hi in box)})
            continue
        plain, aff = _positions(seg, cls, ws[-1], kernels[ws[-1]].out.index, p.tensors[t].shape)
        role = "mid" if t in seg.mids else "out"
        raw.append({"tensor": t, "role": role, "plain": plain, "affine": aff,
                    "readers": sorted(seg.mids.get(t, ())), "writers": ws,
                    "out_too": role == "mid" and t in seg.needed_outside})
    return raw


def _merge_dims(raw: list[dict], order: list,
                kclasses: list[frozenset[int]]) -> tuple[dict[int, int], list[Dim], list[int]]:
    """Classes with the same role in every access merge into one dim; a class in every access
    and every kernel is batch-like. Returns (dim of each class, dims, batch classes)."""
    n_cls = len(order)
    sig = []
    affine_cls = {d for r in raw for pos in r["affine"] for d, _ in pos.terms}
    for c in range(n_cls):
        sig.append((frozenset(i for i, r in enumerate(raw) if c in r["plain"]),
                    frozenset(ki for ki, kc in enumerate(kclasses) if c in kc)))
    all_acc = frozenset(range(len(raw)))
    all_k = frozenset(range(len(kclasses)))
    groups: dict = {}
    batch_cls: list[int] = []
    for c in range(n_cls):
        if c in affine_cls:
            groups[("aff", c)] = [c]
        elif sig[c][0] == all_acc and sig[c][1] == all_k:
            batch_cls.append(c)
        else:
            groups.setdefault(sig[c], []).append(c)
    dim_of: dict[int, int] = {}
    dims: list[Dim] = []
    for members in groups.values():
        for c in members:
            dim_of[c] = len(dims)
        exts = tuple(order[c][1] for c in members)
        label = "·".join(order[c][2] for c in members)
        while any(d.label == label for d in dims):
            label += "'"
        dims.append(Dim(label, exts, _ladder(exts)))
    return dim_of, dims, batch_cls


def _ladder(exts: tuple[int, ...], step: int = 2) -> list[tuple[tuple[int, ...], int]]:
    """Tile sizes 1, 2, 4, ... and the full extent, realised over the merged loops inner
    first; the full extent (trips 1) is last and the only entry with one trip."""
    total = math.prod(exts)
    if total <= SMALL_DIM:
        return [(exts, 1)]
    sizes = []
    s = 1
    while s < total:
        sizes.append(s)
        s *= step
    if len(sizes) > MAX_LADDER - 1:  # keep the smallest tile and the largest ones
        sizes = [sizes[0]] + sizes[-(MAX_LADDER - 2):]
    out: list[tuple[tuple[int, ...], int]] = []
    seen = set()
    for s in sizes + [total]:
        tiles = []
        rem = s
        for e in reversed(exts):
            t = min(e, rem)
            tiles.append(t)
            rem = -(-rem // e) if rem > e else 1
        tiles = tuple(reversed(tiles))
        trips = math.prod(-(-e // t) for e, t in zip(exts, tiles))
        if tiles in seen or (trips == 1 and s != total):
            continue
        seen.add(tiles)
        out.append((tiles, trips))
    return out
