"""Candidate schedules of one fused segment, with DRAM traffic and working set derived exactly
from the einsum subscripts (docs/sol-model.md, "Cache-aware").

A *segment* is a set of framework ops run as one kernel. Its loops are unified through the
tensors its kernels pass to each other (position by position, through views), giving the
segment's dimensions. A *schedule* is a tile size per dimension plus the order of the tile
loops (outer to inner) over the dimensions that are split. For a tensor access X with
dimensions D(X), let j(X) be the innermost split loop in D(X):

* X's tile stays on chip across every loop inside j(X) (reuse);
* X is fetched again for every iteration of a split loop outside j(X) that is not in D(X)
  and that the kernels touching X iterate (``refetch``);
* an input costs ``bytes · halo · refetch`` (several access patterns of one tensor cost the
  largest of them); an output whose producer's reduction loop sits outside j(X) spills
  partial sums: ``bytes · halo · (2·refetch − 1)``;
* an intermediate (written and read inside the segment) never touches DRAM; a schedule that
  would have to re-walk it (a loop of its producer or consumers outside j(I) that is not in
  D(I)) would recompute or spill it, and is not in the space;
* the working set is every input and output tile plus, per loop level, the largest
  intermediate tile live there.

Dimensions that index every access (batch-like) are tiled by 1 and placed outermost, which is
optimal in this model; dimensions with identical roles (``b`` and ``s`` of ``x[b,s,k]``) are
merged into one.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from solar_lsp.bounds.einsum_graph import tensor_bytes
from solar_lsp.bounds.viewmap import ViewMap
from solar_lsp.ir.core import Affine, Op, Program, loads
from solar_lsp.source.pragma import dtype_size

MAX_LADDER = 12  # tile sizes per dimension (powers of two and the full extent)
SMALL_DIM = 4  # dims this short (filter taps) are never split
CACHE_LIMIT = 20000  # cached frontiers before the cache starts over


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
    label: str
    extents: tuple[int, ...]  # merged loops, outer to inner
    ladder: list[tuple[tuple[int, ...], int]]  # (tile per merged loop, trips); full extent last

    @property
    def extent(self) -> int:
        return math.prod(self.extents)


@dataclass
class SegModel:
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


@dataclass(frozen=True)
class Sched:
    """One schedule: ladder index per dim, split loops outer to inner, its cost."""

    choice: tuple[int, ...]
    order: tuple[int, ...]
    ws: int
    traffic: int

    def describe(self, m: SegModel) -> dict:
        tiles = {}
        for d, i in zip(m.dims, self.choice):
            tiles[d.label] = math.prod(d.ladder[i][0])
        return {"tiles": tiles, "order": [m.dims[d].label for d in self.order],
                "batch_outer": list(m.batch), "working_set_bytes": self.ws, "bytes": self.traffic}


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


def build_model(p: Program, vm: ViewMap, ops: list[Op], free: set[str],
                needed_outside: set[str]) -> SegModel | None:
    """The segment model of ``ops`` (in program order), or None when they cannot share tiles:
    a view that is not affine between two of them, a halo or offset read of an intermediate,
    a partial write, or a transposed reread of a tensor inside one tile."""
    kernels = [k for op in ops for k in op.kernels]
    if not kernels:
        return None
    ext = [dict(k.loops) for k in kernels]
    uf = _UF()
    for ki, e in enumerate(ext):
        for v, n in e.items():
            if n > 1:
                uf.add((ki, v))
    last_writer: dict[str, int] = {}
    writers: dict[str, list[int]] = {}
    internal: list[tuple[int, int, tuple[Affine, ...]]] = []  # (reader, writer, base index)
    external: list[tuple[int, str, tuple[Affine, ...]]] = []
    mids: dict[str, set[int]] = {}
    for ki, k in enumerate(kernels):
        lds = loads(k.expr) + ([k.out] if k.init == "keep" else [])
        for ld in lds:
            b = p.base(ld.tensor)
            if b in free:
                continue
            if b in last_writer:
                m = vm.to_base(ld.tensor, ld.index)
                if m is None or m[0] != b:
                    return None
                internal.append((ki, last_writer[b], m[1]))
                mids.setdefault(b, set()).add(ki)
            else:
                external.append((ki, ld.tensor, ld.index))
        if not _full_write(k, p):
            return None
        last_writer[k.out.tensor] = ki
        writers.setdefault(k.out.tensor, []).append(ki)
    for kc, kp, bidx in internal:
        pidx = kernels[kp].out.index
        if len(pidx) != len(bidx):
            return None
        for pe, ce in zip(pidx, bidx):
            pt, _ = _terms(pe, ext[kp])
            if not pt:
                continue
            v = _plain(pe, ext[kp])
            if v is None:
                return None
            ct, _ = _terms(ce, ext[kc])
            u = _plain(ce, ext[kc])
            if u is not None and ext[kc][u] == ext[kp][v]:
                if not uf.union((kp, v), (kc, u)):
                    return None
            elif ct:
                return None
    by_tensor: dict[str, list[tuple[int, tuple[Affine, ...]]]] = {}
    for ki, t, idx in external:
        by_tensor.setdefault(t, []).append((ki, idx))
    for uses in by_tensor.values():
        for (ka, ia), (kb, ib) in itertools.combinations(uses, 2):
            if ka == kb or len(ia) != len(ib):
                continue
            for a, b in zip(ia, ib):
                for va, vb in _matching_terms(a, ext[ka], b, ext[kb]):
                    uf.union((ka, va), (kb, vb))  # a refusal only leaves two access patterns
    return _assemble(p, kernels, ext, uf, external, writers, mids, needed_outside)


def _matching_terms(a: Affine, ea: dict[str, int], b: Affine, eb: dict[str, int]):
    """Loop pairs of two index positions of the same shape (``2*s0 + k0`` and ``2*s + k``):
    equal constants and terms that pair up one to one by (coefficient, extent)."""
    ta, ca = _terms(a, ea)
    tb, cb = _terms(b, eb)
    if ca != cb or len(ta) != len(tb):
        return []
    ka = sorted((c, ea[v], v) for v, c in ta)
    kb = sorted((c, eb[v], v) for v, c in tb)
    if [x[:2] for x in ka] != [x[:2] for x in kb] or len({x[:2] for x in ka}) != len(ka):
        return []
    return [(x[2], y[2]) for x, y in zip(ka, kb)]


def _full_write(k, p: Program) -> bool:
    """Does the kernel write every element of its output with plain loop variables?"""
    shape = p.tensors[k.out.tensor].shape
    ext = dict(k.loops)
    seen = set()
    for a, n in zip(k.out.index, shape):
        t, c = _terms(a, ext)
        if not t:
            if n != 1 or c != 0:
                return False
            continue
        v = _plain(a, ext)
        if v is None or ext[v] != n or v in seen:
            return False
        seen.add(v)
    return True


def _assemble(p, kernels, ext, uf: _UF, external, writers, mids, needed_outside) -> SegModel | None:
    cls: dict = {}
    order: list = []
    for ki, k in enumerate(kernels):
        for v, n in k.loops:
            if n > 1:
                r = uf.find((ki, v))
                if r not in cls:
                    cls[r] = len(order)
                    order.append((r, n, v))
    kclasses = [frozenset(cls[uf.find((ki, v))] for v, n in k.loops if n > 1)
                for ki, k in enumerate(kernels)]

    def pos_of(ki: int, idx: tuple[Affine, ...], shape) -> tuple[set[int], list[Pos]]:
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

    raw: list[dict] = []
    seen: dict = {}
    for ki, t, idx in external:
        plain, aff = pos_of(ki, idx, p.tensors[t].shape)
        key = (t, frozenset(plain), tuple(aff))
        if key not in seen:
            seen[key] = len(raw)
            raw.append({"tensor": t, "role": "in", "plain": plain, "affine": aff, "readers": []})
        raw[seen[key]]["readers"].append(ki)
    for t, ws in writers.items():
        plain, aff = pos_of(ws[-1], kernels[ws[-1]].out.index, p.tensors[t].shape)
        role = "mid" if t in mids else "out"
        raw.append({"tensor": t, "role": role, "plain": plain, "affine": aff,
                    "readers": sorted(mids.get(t, ())), "writers": ws,
                    "out_too": role == "mid" and t in needed_outside})
    for r in raw:  # one class per loop at most once per access
        if any(d in r["plain"] for pos in r["affine"] for d, _ in pos.terms):
            return None
    # classes with the same role in every access merge into one dim; a class in every access
    # and every kernel is batch-like
    n_cls = len(order)
    sig = []
    affine_cls = {d for r in raw for pos in r["affine"] for d, _ in pos.terms}
    for c in range(n_cls):
        sig.append((frozenset(i for i, r in enumerate(raw) if c in r["plain"]),
                    frozenset(ki for ki, kc in enumerate(kclasses) if c in kc)))
    all_acc = frozenset(range(len(raw)))
    all_k = frozenset(range(len(kernels)))
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
    accesses = []
    for r in raw:
        t = r["tensor"]
        el = dtype_size(p.tensors[t].dtype)
        plain = frozenset(dim_of[c] for c in r["plain"] if c in dim_of)
        aff = tuple(Pos(tuple((dim_of[c], co) for c, co in pos.terms), pos.const, pos.extent)
                    for pos in r["affine"])
        rd = [frozenset(dim_of[c] for c in kclasses[ki] if c in dim_of) for ki in r["readers"]]
        wd = frozenset(dim_of[c] for ki in r.get("writers", ()) for c in kclasses[ki] if c in dim_of)
        accesses.append(Access(t, r["role"], tensor_bytes(p, t), el, plain, aff, rd, wd,
                               r.get("out_too", False)))
    kdims = [frozenset(dim_of[c] for c in kc if c in dim_of) for kc in kclasses]
    return SegModel(dims, accesses, kdims, [order[c][2] for c in batch_cls])


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


# ------------------------------------------------------------------ costs


def _pos_table(m: SegModel, pos: Pos) -> tuple[np.ndarray, np.ndarray]:
    """For every combination of ladder entries of the dims in ``pos``: the largest range a
    tile touches (working set) and the sum of the ranges over all tiles (traffic)."""
    dims = [d for d, _ in pos.terms]
    shape = [len(m.dims[d].ladder) for d in dims]
    fp = np.zeros(shape)
    tot = np.zeros(shape)
    for combo in itertools.product(*[range(s) for s in shape]):
        lo = np.array([pos.const], dtype=np.int64)
        hi = np.array([pos.const], dtype=np.int64)
        for (d, coef), li in zip(pos.terms, combo):
            e = m.dims[d].extent
            t = m.dims[d].ladder[li][0][0]
            starts = np.arange(0, e, t, dtype=np.int64)
            last = np.minimum(starts + t, e) - 1
            a, b = (coef * starts, coef * last) if coef > 0 else (coef * last, coef * starts)
            lo = (lo[:, None] + a[None, :]).ravel()
            hi = (hi[:, None] + b[None, :]).ravel()
        rng = np.maximum(0, np.minimum(hi, pos.extent - 1) - np.maximum(lo, 0) + 1)
        fp[combo] = rng.max()
        tot[combo] = rng.sum()
    return fp, tot


class _Costs:
    """Per-access footprint and halo factor for vectors of ladder choices."""

    def __init__(self, m: SegModel):
        self.m = m
        self.fpdim = [np.array([math.prod(t) for t, _ in d.ladder], dtype=np.float64) for d in m.dims]
        self.trips = [np.array([n for _, n in d.ladder], dtype=np.float64) for d in m.dims]
        self.tables = [[_pos_table(m, pos) for pos in a.affine] for a in m.accesses]

    def access(self, ai: int, idx: list) -> tuple:
        a = self.m.accesses[ai]
        fp = 1.0
        for d in a.plain:
            fp = fp * self.fpdim[d][idx[d]]
        halo = 1.0
        for pos, (tfp, ttot) in zip(a.affine, self.tables[ai]):
            sel = tuple(idx[d] for d, _ in pos.terms)
            full = ttot[tuple(len(self.m.dims[d].ladder) - 1 for d, _ in pos.terms)]
            fp = fp * tfp[sel]
            halo = halo * (ttot[sel] / max(full, 1.0))
        return fp, np.maximum(halo, 1.0)


def evaluate(m: SegModel, choice: tuple[int, ...], order: tuple[int, ...],
             costs: _Costs | None = None) -> tuple[int, int] | None:
    """(working set bytes, DRAM bytes) of one schedule, or None if it is not legal.
    ``order`` must list exactly the split dims (trips > 1), outer to inner."""
    costs = costs or _Costs(m)
    trips = [m.dims[d].ladder[c][1] for d, c in enumerate(choice)]
    if sorted(order) != [d for d in range(len(trips)) if trips[d] > 1]:
        raise ValueError("order must list exactly the split dims")
    where = {d: i for i, d in enumerate(order)}
    idx = list(choice)
    traffic = 0.0
    ws = 0.0
    levels: dict[int, float] = {}
    reads: dict[str, float] = {}
    for ai, a in enumerate(m.accesses):
        fp, halo = costs.access(ai, idx)
        fp, halo = float(fp), float(halo)
        dims = a.dims
        j = max((where[d] for d in dims if d in where), default=-1)
        outside = [order[i] for i in range(max(j, 0)) if order[i] not in dims]
        if a.role == "mid":
            touch = a.writer_dims.union(*a.reader_dims)
            if any(d in touch for d in outside):
                return None
            levels[j] = max(levels.get(j, 0.0), fp * a.elsize)
            if a.out_too:
                traffic += a.nbytes * halo
        elif a.role == "in":
            r = max(math.prod(trips[d] for d in outside if d in rd) for rd in a.reader_dims)
            reads[a.tensor] = max(reads.get(a.tensor, 0.0), a.nbytes * halo * r)
            ws += fp * a.elsize
        else:
            r = math.prod(trips[d] for d in outside if d in a.writer_dims)
            traffic += a.nbytes * halo * (2 * r - 1)
            ws += fp * a.elsize
    ws += sum(levels.values())
    traffic += sum(reads.values())
    return int(round(ws)), int(round(traffic))


def all_schedules(m: SegModel):
    """Every schedule of the space (unpruned), for the brute-force oracle: yields Sched."""
    costs = _Costs(m)
    ladders = [range(len(d.ladder)) for d in m.dims]
    limit = max_split(m)
    for choice in itertools.product(*ladders):
        split = [d for d, c in enumerate(choice) if m.dims[d].ladder[c][1] > 1]
        if len(split) > limit:
            continue
        for order in itertools.permutations(split):
            r = evaluate(m, choice, order, costs)
            if r is not None:
                yield Sched(tuple(choice), tuple(order), r[0], r[1])


def max_split(m: SegModel) -> int:
    """How many dims one schedule may split: all when at most 4 can be, else 3 (the number of
    loop orders grows factorially)."""
    n = sum(1 for d in m.dims if len(d.ladder) > 1)
    return n if n <= 4 else 3


_FRONTIER: dict[tuple, list[Sched]] = {}


def frontier(m: SegModel) -> list[Sched]:
    """The Pareto frontier (working set ascending, traffic strictly descending) of the
    schedule space; cached by the model's structure."""
    key = m.key()
    hit = _FRONTIER.get(key)
    if hit is None:
        hit = _frontier(m)
        if len(_FRONTIER) > CACHE_LIMIT:  # a long-running server: keep memory bounded
            _FRONTIER.clear()
        _FRONTIER[key] = hit
    return hit


class _Static:
    """What the cost of an access needs, precomputed once per model."""

    def __init__(self, a: Access):
        self.role = a.role
        self.tensor = a.tensor
        self.dims = a.dims
        self.touch = a.writer_dims.union(*a.reader_dims)
        self.readers = list(a.reader_dims)
        self.writers = a.writer_dims
        self.elsize = a.elsize
        self.nbytes = a.nbytes
        self.out_too = a.out_too


def _frontier(m: SegModel) -> list[Sched]:
    costs = _Costs(m)
    statics = [_Static(a) for a in m.accesses]
    n = len(m.dims)
    full = [len(d.ladder) - 1 for d in m.dims]
    splittable = [d for d in range(n) if full[d] > 0]
    whole = [costs.access(ai, full) for ai in range(len(m.accesses))]
    ws_all, tr_all, meta = [], [], []
    for k in range(0, max_split(m) + 1):
        for split in itertools.combinations(splittable, k):
            grids = np.meshgrid(*[np.arange(full[d]) for d in split], indexing="ij") if split else []
            size = grids[0].size if split else 1
            idx: list = [np.full(size, full[d]) for d in range(n)]
            for d, g in zip(split, grids):
                idx[d] = g.ravel()
            trips = [costs.trips[d][idx[d]] if d in split else 1.0 for d in range(n)]
            acc = [costs.access(ai, idx) if a.dims & set(split) else whole[ai]
                   for ai, a in enumerate(statics)]
            prods: dict[tuple[int, ...], object] = {}
            seen: set = set()
            for order in itertools.permutations(split):
                r = _eval_vec(statics, order, trips, acc, size, prods, seen)
                if r is None:
                    continue
                ws_all.append(r[0])
                tr_all.append(r[1])
                meta.append((order, idx))
    if not ws_all:
        return []
    ws = np.concatenate(ws_all)
    tr = np.concatenate(tr_all)
    owner = np.concatenate([np.full(len(w), i) for i, w in enumerate(ws_all)])
    offset = np.concatenate([np.arange(len(w)) for w in ws_all])
    ws_i = np.rint(ws).astype(np.int64)
    tr_i = np.rint(tr).astype(np.int64)
    sel = np.lexsort((tr_i, ws_i))
    tr_s = tr_i[sel]
    prev = np.concatenate([[np.iinfo(np.int64).max], np.minimum.accumulate(tr_s)[:-1]])
    keep = sel[tr_s < prev]
    out: list[Sched] = []
    for i in keep:
        order, idx = meta[owner[i]]
        o = offset[i]
        choice = tuple(int(idx[d][o]) for d in range(n))
        out.append(Sched(choice, order, int(ws_i[i]), int(tr_i[i])))
    return out


def _eval_vec(statics: list[_Static], order, trips, acc, size, prods: dict, seen: set):
    """Working set and traffic of one loop order for a vector of tile choices (None if the
    order re-walks an intermediate, or if an order with the same refetch loops and levels was
    already evaluated); ``prods`` memoizes trip products per loop set."""

    def prod(ds: tuple[int, ...]):
        if ds not in prods:
            prods[ds] = _prod([trips[d] for d in ds])
        return prods[ds]

    where = {d: i for i, d in enumerate(order)}
    plan = []
    for a in statics:  # order-only work first: legality and which loops refetch
        j = max([where[d] for d in a.dims if d in where], default=-1)
        outside = [order[i] for i in range(max(j, 0)) if order[i] not in a.dims]
        if a.role == "mid" and any(d in a.touch for d in outside):
            return None
        plan.append((j if a.role == "mid" else 0, tuple(d for d in outside if d in a.touch)))
    key = tuple(plan)
    if key in seen:
        return None
    seen.add(key)
    traffic = 0.0
    ws = 0.0
    levels: dict[int, object] = {}
    reads: dict[str, object] = {}
    for a, (fp, halo), (j, outside) in zip(statics, acc, plan):
        if a.role == "mid":
            cur = fp * a.elsize
            levels[j] = np.maximum(levels[j], cur) if j in levels else cur
            if a.out_too:
                traffic = traffic + a.nbytes * halo
        elif a.role == "in":
            r = None
            for rd in a.readers:
                f = prod(tuple(sorted(d for d in outside if d in rd)))
                r = f if r is None else np.maximum(r, f)
            val = a.nbytes * halo * r
            reads[a.tensor] = np.maximum(reads[a.tensor], val) if a.tensor in reads else val
            ws = ws + fp * a.elsize
        else:
            r = prod(tuple(sorted(d for d in outside if d in a.writers)))
            traffic = traffic + a.nbytes * halo * (2 * r - 1)
            ws = ws + fp * a.elsize
    for v in levels.values():
        ws = ws + v
    for v in reads.values():
        traffic = traffic + v
    return np.broadcast_to(ws, (size,)), np.broadcast_to(traffic, (size,))


def _prod(xs: list) -> np.ndarray | float:
    out: np.ndarray | float = 1.0
    for x in xs:
        out = out * x
    return out


def best_within(front: list[Sched], capacity: float) -> Sched | None:
    """The least-traffic schedule whose working set fits ``capacity`` bytes."""
    ok = [s for s in front if s.ws <= capacity]
    return min(ok, key=lambda s: (s.traffic, s.ws)) if ok else None


__all__ = ["Access", "Dim", "Pos", "SegModel", "Sched", "all_schedules", "best_within",
           "build_model", "evaluate", "frontier"]
