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

The search evaluates split sets in a fixed order and skips one when a schedule already found is
at least as good as lower bounds on every schedule of the set (exact in floating point), so it
finds the same frontier as evaluating them all (``exhaustive_frontier``; issue 17: DenseNet
concatenations give segments of 50+ dims, where the exhaustive search took minutes).
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

import numpy as np

from solar_lsp.bounds.segmodel import Access, Dim, Pos, SegModel, build_model

CACHE_LIMIT = 20000  # cached frontiers before the cache starts over
PRUNE_FROM = 64  # split sets from which bounding them pays for itself (benchmarks/bench_tiling.py)


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


def exhaustive_frontier(m: SegModel) -> list[Sched]:
    """The frontier found without pruning (uncached): every split set is evaluated. The
    reference :func:`frontier` must equal, schedule for schedule (tests and benchmarks)."""
    return _frontier(m, prune=False)


def _frontier(m: SegModel, prune: bool = True) -> list[Sched]:
    """Evaluate every split set (up to ``max_split`` dims) in a fixed order, then keep the
    Pareto frontier. With ``prune``, a split set is skipped when a schedule of an earlier split
    set is at least as good as the best working set *and* the best traffic any of its schedules
    could reach (:class:`_Bound`): none of its schedules could then be kept, since on a tie the
    earlier schedule wins, so the frontier is the same, schedule for schedule."""
    costs = _Costs(m)
    statics = [_Static(a) for a in m.accesses]
    n = len(m.dims)
    full = [len(d.ladder) - 1 for d in m.dims]
    splittable = [d for d in range(n) if full[d] > 0]
    whole = [costs.access(ai, full) for ai in range(len(m.accesses))]
    count = sum(math.comb(len(splittable), k) for k in range(max_split(m) + 1))
    bound = _Bound(m, costs, full, whole) if prune and count >= PRUNE_FROM else None
    running = _Running()
    ws_all, tr_all, meta = [], [], []
    for k in range(0, max_split(m) + 1):
        for split in itertools.combinations(splittable, k):
            if bound is not None and bound.prunes(split, running):
                continue
            first = len(ws_all)
            _eval_split(costs, statics, full, whole, split, (ws_all, tr_all, meta))
            if bound is not None:
                running.add(ws_all[first:], tr_all[first:])
    return _pareto(ws_all, tr_all, meta, n)


def _eval_split(costs: _Costs, statics: list[_Static], full: list[int], whole: list, split: tuple,
                out: tuple[list, list, list]) -> None:
    """Append (working sets, traffics, (order, tile indices)) of every legal loop order of the
    split set ``split``, over every tile choice of its dims, to the lists of ``out``."""
    ws_all, tr_all, meta = out
    n = len(full)
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


def _pareto(ws_all: list, tr_all: list, meta: list, n: int) -> list[Sched]:
    """The frontier of the evaluated schedules: per working set the least traffic, kept only
    while traffic strictly falls; ties go to the schedule evaluated first."""
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


class _Running:
    """The Pareto frontier of the (rounded) schedules evaluated so far: working set ascending,
    traffic strictly descending."""

    def __init__(self) -> None:
        self.ws: list[int] = []
        self.tr: list[int] = []

    def covers(self, ws: int, tr: int) -> bool:
        """Whether an evaluated schedule has working set ≤ ``ws`` and traffic ≤ ``tr``."""
        i = bisect.bisect_right(self.ws, ws) - 1
        return i >= 0 and self.tr[i] <= tr

    def add(self, ws_list: list, tr_list: list) -> None:
        """Merge the schedules of one split set (arrays of working sets and traffics)."""
        if not ws_list:
            return
        ws = np.rint(np.concatenate(ws_list)).astype(np.int64)
        tr = np.rint(np.concatenate(tr_list)).astype(np.int64)
        by_ws = np.argsort(ws, kind="stable")
        low = np.minimum.accumulate(tr[by_ws])
        falls = np.concatenate([[True], low[1:] < low[:-1]])  # where the least traffic falls
        pts = list(zip(ws[by_ws][falls].tolist(), low[falls].tolist())) + list(zip(self.ws, self.tr))
        pts.sort()
        self.ws, self.tr = [], []
        for w, t in pts:
            if not self.tr or t < self.tr[-1]:
                self.ws.append(w)
                self.tr.append(t)


class _Bound:
    """Lower bounds on the rounded working set and traffic of every schedule of a split set.

    Each is the same floating-point expression as in :func:`_eval_vec`, in the same order, with
    terms dropped or replaced by ones no larger: footprints and halo factors by their least
    value over the split dims' tile choices, refetch factors by 1, and the intermediates' levels
    by at most two of them (the level of those the split set does not touch, and the largest
    least footprint of those it does, added in either order). Float addition and multiplication
    of non-negative numbers and rounding to nearest are monotone, so each bound is ≤ the value
    computed for any schedule of the set, bit for bit, not only up to rounding error."""

    def __init__(self, m: SegModel, costs: _Costs, full: list[int], whole: list):
        self.m = m
        self.costs = costs
        self.full = full
        acc = m.accesses
        self.dims = [a.dims for a in acc]
        self.io = [ai for ai, a in enumerate(acc) if a.role != "mid"]
        self.mids = [ai for ai, a in enumerate(acc) if a.role == "mid"]
        self.moved = [ai for ai, a in enumerate(acc) if a.role == "out" or (a.role == "mid" and a.out_too)]
        self.reads: dict[str, list[int]] = {}
        for ai, a in enumerate(acc):
            if a.role == "in":
                self.reads.setdefault(a.tensor, []).append(ai)
        self.ws_base = [float(fp) * a.elsize for a, (fp, _h) in zip(acc, whole)]
        self.tr_base = [float(a.nbytes * h) for a, (_fp, h) in zip(acc, whole)]
        self.by_dim: list[list[int]] = [[] for _ in m.dims]
        for ai, d_set in enumerate(self.dims):
            for d in d_set:
                self.by_dim[d].append(ai)
        self.memo: dict[tuple, tuple[float, float]] = {}
        self._estimates()

    def _estimates(self) -> None:
        """What the quick estimate starts from: totals with every dim whole, and the dims many
        accesses share (their estimates are cached per split subset)."""
        acc = self.m.accesses
        self.io_set, self.moved_set = set(self.io), set(self.moved)
        self.sum_ws = sum(self.ws_base[ai] for ai in self.io)
        self.sum_moved = sum(self.tr_base[ai] for ai in self.moved)
        self.read_base = {t: max(self.tr_base[ai] for ai in lst) for t, lst in self.reads.items()}
        self.sum_reads = sum(self.read_base.values())
        self.mids_desc = sorted(self.mids, key=lambda ai: -self.ws_base[ai])
        self.read_of = {ai: a.tensor for ai, a in enumerate(acc) if a.role == "in"}
        self.heavy = {d for d, lst in enumerate(self.by_dim) if len(lst) > 4}
        self.by_heavy: dict[tuple[int, ...], tuple] = {}
        self.scale = (self.sum_ws + sum(self.ws_base), sum(self.tr_base) * 16)
        few = len(acc) < 256  # then sums of whole numbers below 2**44 stay exact (below 2**52)
        self.exact = (few and all(_whole(v) for v in self.ws_base), few and all(_whole(v) for v in self.tr_base))

    def prunes(self, split: tuple[int, ...], running: _Running) -> bool:
        """Whether an evaluated schedule is at least as good as both bounds of ``split``. A
        quick estimate settles most split sets: it is exact when every term is a whole number
        (float sums of those below 2**53 are exact), else off by rounding only, far less than
        its slack; the exact bounds (:meth:`of`) settle the rest. The estimate starts from the
        split set's dims that many accesses share (cached) and corrects the accesses of the
        others."""
        heavy = tuple(d for d in split if d in self.heavy)
        if heavy not in self.by_heavy:
            self.by_heavy[heavy] = self._estimate(heavy)
        ws, mv, rd_total, rd, exact_w, exact_t = self.by_heavy[heavy]
        chosen, hset = frozenset(split), frozenset(heavy)
        fix = {ai for d in split if d not in self.heavy for ai in self.by_dim[d]}
        for ai in fix:
            w, t = self._term(ai, chosen)
            w0, t0 = self._term(ai, hset)
            exact_w, exact_t = exact_w and _whole(w), exact_t and _whole(t)
            if ai in self.io_set:
                ws += w - w0
            if ai in self.moved_set:
                mv += t - t0
        for t in {self.read_of[ai] for ai in fix if ai in self.read_of}:
            rd_total += max(self._term(ai, chosen)[1] for ai in self.reads[t]) - rd.get(t, self.read_base[t])
        mine = [self._term(ai, chosen)[0] for ai in self.mids if self.dims[ai] & chosen]
        exact_w = exact_w and all(_whole(v) for v in mine)
        ws += next((self.ws_base[ai] for ai in self.mids_desc if not self.dims[ai] & chosen), 0.0)
        ws += max(mine, default=0.0)
        tr = mv + rd_total
        sw = 0.0 if self.exact[0] and exact_w else self.scale[0] * 1e-9 + 2.0
        st = 0.0 if self.exact[1] and exact_t else self.scale[1] * 1e-9 + 2.0
        if running.covers(math.floor(ws - sw), math.floor(tr - st)):
            return True
        if not running.covers(math.ceil(ws + sw), math.ceil(tr + st)):
            return False
        return running.covers(*self.of(split))

    def _estimate(self, heavy: tuple[int, ...]) -> tuple:
        """The estimate's parts for a split set of shared dims only: in/out working set, bytes of
        outputs and spilled intermediates, total and per-tensor reads, and whether every term
        was a whole number."""
        chosen = frozenset(heavy)
        touched = {ai for d in heavy for ai in self.by_dim[d]}
        terms = {ai: self._term(ai, chosen) for ai in touched}
        ws = self.sum_ws + sum(terms[ai][0] - self.ws_base[ai] for ai in touched if ai in self.io_set)
        mv = self.sum_moved + sum(terms[ai][1] - self.tr_base[ai] for ai in touched if ai in self.moved_set)
        rd = {t: max(terms[ai][1] if ai in terms else self.tr_base[ai] for ai in self.reads[t])
              for t in {self.read_of[ai] for ai in touched if ai in self.read_of}}
        rd_total = self.sum_reads + sum(v - self.read_base[t] for t, v in rd.items())
        exact_w = all(_whole(w) for w, _t in terms.values())
        exact_t = all(_whole(t) for _w, t in terms.values())
        return ws, mv, rd_total, rd, exact_w, exact_t

    def _term(self, ai: int, chosen: frozenset[int]) -> tuple[float, float]:
        """Least working-set and traffic terms of access ``ai`` when the dims of ``chosen`` are
        split (its whole-extent terms if it has none of them)."""
        dims = chosen & self.dims[ai]
        if not dims:
            return self.ws_base[ai], self.tr_base[ai]
        fp, halo = self._least(ai, dims)
        a = self.m.accesses[ai]
        return fp * a.elsize, float(a.nbytes * halo)

    def of(self, split: tuple[int, ...]) -> tuple[int, int]:
        """(working set, traffic) lower bounds, rounded like the schedules' values."""
        ws_t = list(self.ws_base)
        tr_t = list(self.tr_base)
        chosen = frozenset(split)
        touched = {ai for d in split for ai in self.by_dim[d]}
        for ai in touched:
            fp, halo = self._least(ai, chosen & self.dims[ai])
            ws_t[ai] = fp * self.m.accesses[ai].elsize
            tr_t[ai] = float(self.m.accesses[ai].nbytes * halo)
        ws = 0.0
        for ai in self.io:
            ws = ws + ws_t[ai]
        rest = [ws_t[ai] for ai in self.mids if ai not in touched]
        mine = [ws_t[ai] for ai in self.mids if ai in touched]
        if rest and mine:
            x, y = max(rest), max(mine)
            ws = min((ws + x) + y, (ws + y) + x)
        elif rest or mine:
            ws = ws + max(rest or mine)
        traffic = 0.0
        for ai in self.moved:
            traffic = traffic + tr_t[ai]
        for lst in self.reads.values():
            traffic = traffic + max(tr_t[ai] for ai in lst)
        return int(np.rint(ws)), int(np.rint(traffic))

    def _least(self, ai: int, dims: frozenset[int]) -> tuple[float, float]:
        """Least footprint and least halo factor of access ``ai`` when ``dims`` take any tile
        but their whole extent and every other dim its whole extent (as :meth:`_Costs.access`
        multiplies them)."""
        key = (ai, dims)
        if key not in self.memo:
            c, a = self.costs, self.m.accesses[ai]
            fp = 1.0
            for d in a.plain:
                fp = fp * (c.fpdim[d][: self.full[d]].min() if d in dims else c.fpdim[d][self.full[d]])
            halo = 1.0
            for pos, (tfp, ttot) in zip(a.affine, c.tables[ai]):
                sel = tuple(slice(0, self.full[d]) if d in dims else self.full[d] for d, _ in pos.terms)
                top = ttot[tuple(self.full[d] for d, _ in pos.terms)]
                fp = fp * np.min(tfp[sel])
                halo = halo * (np.min(ttot[sel]) / max(top, 1.0))
            self.memo[key] = (float(fp), float(max(halo, 1.0)))
        return self.memo[key]


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


def _whole(v: float) -> bool:
    """A whole number below 2**44: a sum or difference of fewer than 256 of them is exact."""
    return v.is_integer() and abs(v) < 2.0**44


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
           "build_model", "evaluate", "exhaustive_frontier", "frontier"]
