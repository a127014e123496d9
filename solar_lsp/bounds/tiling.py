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
from dataclasses import dataclass

import numpy as np

from solar_lsp.bounds.segmodel import Access, Dim, Pos, SegModel, build_model

CACHE_LIMIT = 20000  # cached frontiers before the cache starts over


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
