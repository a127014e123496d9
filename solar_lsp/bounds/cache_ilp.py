"""Cache-aware fused SOL: where to cut each fusible group and how to tile each piece, as an
integer linear program (pulp, CBC), under the chip's on-chip capacity (docs/architecture.md §6).

Variables: one binary per candidate segment of a group (a connected, convex set of its ops run
as one kernel) with its least-traffic schedule that fits the capacity; a schedule that does not
fit has no variable. Constraints: every op of the group is in exactly one chosen segment.
Objective: minimum DRAM bytes, where a tensor one kernel hands to another is credited up to
the capacity (the cache may keep it; see SegCand.credit). Segments run one after another, so

    T_cache = Σ_segments max(max_u work_u / Π_u, bytes / β)

plus the compute of recomputed generators and the unfused time of composition steps. Every op
alone with whole-tensor tiles is in the space, which makes T_cache ≤ T_unfused wherever that
fits; compulsory traffic is always paid, so T_cache ≥ T_fused.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import pulp

from solar_lsp.bounds.einsum_graph import tensor_bytes
from solar_lsp.bounds.fusion import MAX_CONTRACTIONS, FusionGraph, analyze, candidate_segments
from solar_lsp.bounds.sol import OpCost, UnitWork, boundary_bytes, gather_reads, warm_l2_bytes
from solar_lsp.bounds.tiling import (
    CACHE_LIMIT,
    Sched,
    SegModel,
    all_schedules,
    best_within,
    build_model,
    frontier,
)
from solar_lsp.hardware.chips import Chip
from solar_lsp.ir.core import loads

ILP_TIME_LIMIT_S = 20


@dataclass
class SegCand:
    """A candidate segment of a fusible group: its ops, tiling model and schedule frontier."""

    ops: tuple[str, ...]
    model: SegModel | None  # None: one op the tiling model cannot describe (kept as unfused)
    front: list[Sched]
    crossing: tuple[int, ...] = ()  # bytes of each edge tensor a real run may keep in the cache
    trips: list[int] = field(default_factory=list)  # per schedule: times its edges cross (1 or the loop's trips)

    def credit(self, capacity: float, trips: int = 1) -> int:
        """DRAM bytes a real run need not pay at this kernel's edges: a tensor handed between
        kernels can stay in the on-chip cache up to the capacity, so only the part that does
        not fit (S − C) must be written out and read back. Each tensor is credited on its own,
        as if it had the cache to itself: optimistic, so the bound stays a lower bound even
        where a cut was forced by the search limits rather than by capacity. A loop body that
        streams its operands crosses its edges once per trip; one resident across the loop,
        once."""
        return trips * sum(min(b, int(capacity)) for b in self.crossing)

    def dram(self, s: Sched, trips: int, capacity: float) -> int:
        return max(0, s.traffic - self.credit(capacity, trips))

    def best(self, capacity: float) -> tuple[Sched, int] | None:
        """The schedule within ``capacity`` with the least DRAM traffic once its edges are
        credited, and that traffic; a single op that fits nowhere keeps its smallest schedule
        so that every group stays solvable."""
        trips = self.trips or [1] * len(self.front)
        ok = [(self.dram(s, n, capacity), s.ws, i) for i, (s, n) in enumerate(zip(self.front, trips))
              if s.ws <= capacity]
        if not ok and len(self.ops) == 1 and self.front:
            i = min(range(len(self.front)), key=lambda j: (self.front[j].ws, self.front[j].traffic))
            ok = [(self.dram(self.front[i], trips[i], capacity), self.front[i].ws, i)]
        if not ok:
            return None
        d, _, i = min(ok)
        return self.front[i], d

    def best_uncredited(self, capacity: float) -> Sched | None:
        """Least own traffic within ``capacity`` (the fusion suggestions' view)."""
        s = best_within(self.front, capacity)
        if s is None and len(self.ops) == 1 and self.front:
            s = min(self.front, key=lambda x: (x.ws, x.traffic))
        return s


@dataclass
class Plan:
    """Everything about fusion that does not depend on the chip."""

    fg: FusionGraph
    groups: list[list[str]]
    cands: list[list[SegCand]]
    costs: dict[str, OpCost]
    build_s: float = 0.0


@dataclass
class Chosen:
    """A segment the ILP picked for a group, with its schedule and credited DRAM bytes."""

    group: int
    cand: SegCand
    sched: Sched  # the kernel's own schedule and traffic (what a fusion suggestion shows)
    dram: int = -1  # its DRAM bytes once edges handed over in the cache are credited

    def __post_init__(self) -> None:
        if self.dram < 0:
            self.dram = self.sched.traffic


@dataclass
class Solution:
    """The segments chosen for every group under one on-chip capacity, and the solve cost."""

    capacity: float
    chosen: list[Chosen]
    solve_s: float = 0.0
    ilp_vars: int = 0

    @property
    def bytes(self) -> int:
        return sum(c.dram for c in self.chosen)


@dataclass
class CacheAware:
    """The cache-aware SOL of a program: time, DRAM bytes, binding resource, segments."""

    t_s: float
    bytes: int
    bound: str
    segments: list[dict] = field(default_factory=list)


def build_plan(p, costs: list[OpCost]) -> Plan:
    """Groups, candidate segments and their schedule frontiers of one program."""
    t0 = time.perf_counter()
    fg = analyze(p)
    by_id = {c.op.id: c for c in costs}
    cands: list[list[SegCand]] = []
    first_reader = _first_readers(p)
    loops = _LoopFacts.of(p)
    redo = _recomputed(fg)
    dead = _dead(fg) | frozenset(redo)
    for g in fg.groups:
        lst = []
        segs = candidate_segments(fg, g)
        for seg in segs + _streamed(fg, g, segs):
            need = _need(fg, seg, redo)
            crossing = tuple(_credited(fg, seg, first_reader, need))
            c = _candidate(fg, seg, need, crossing, dead, loops, by_id)
            if c is not None:
                lst.append(c)
        cands.append(lst)
    return Plan(fg, fg.groups, cands, by_id, time.perf_counter() - t0)


def _candidate(fg: FusionGraph, seg: tuple[str, ...], need: set[str], crossing: tuple[int, ...],
               dead: frozenset[str], loops: _LoopFacts, by_id: dict[str, OpCost]) -> SegCand | None:
    """The candidate of one segment with its schedule frontier; None for several ops the
    tiling model cannot describe as one kernel."""
    p = fg.p
    ops = [fg.ops[o] for o in seg]
    m = build_model(p, fg.vm, ops, fg.free_tensors, need, dead)
    rep = getattr(ops[0], "repeat", 1)  # a loop body's kernel runs once per iteration
    if m is None:
        if len(seg) > 1:
            return None
        b = by_id[seg[0]].bytes if seg[0] in by_id else 0
        front, trips = [Sched((), (), 0, b)], [rep]
        if rep > 1:  # all of it resident across iterations: read once, but each trip's slice
            slices = (rep - 1) * loops.per_trip_bytes(fg, seg, rep, need)
            front.append(Sched((), (), b // rep, b // rep + slices))
            trips.append(1)
        return SegCand(seg, None, front, crossing, trips)
    front = frontier(m)
    trips = [1] * len(front)
    if rep > 1:
        # Either the body streams its operands every iteration (traffic × trips), or the
        # capacity holds them across iterations (weights stay resident, the carry stays
        # on chip): traffic once, and everything one iteration moves must then fit on
        # chip (working set ≥ that traffic). The second is optimistic where it applies,
        # which keeps the bound a lower bound; per-trip slices of the loop's inputs and
        # outputs are in the fused bound it is maxed with.
        slices = (rep - 1) * loops.per_trip_bytes(fg, seg, rep, need)  # x[t] is new every trip
        front = [Sched(s.choice, s.order, s.ws, s.traffic * rep) for s in front] + [
            Sched(s.choice, s.order, max(s.ws, s.traffic), s.traffic + slices) for s in front]
        trips = [rep] * (len(front) // 2) + [1] * (len(front) // 2)
    return SegCand(seg, m, front, crossing, trips)


def _streamed(fg: FusionGraph, group: list[str], have: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Segments beyond the enumeration's limits (MAX_SEGMENT_OPS, MAX_SEGMENTS) that a compiler
    runs as one kernel: the whole group, and each connected run of its elementwise and
    reduction ops (the contractions taken out), where convex. Without them a long elementwise
    chain into a reduction (a loss: 9-11 ops) is cut, and the cut charges DRAM for an
    intermediate that a real kernel streams tile by tile and never stores. Whether such a
    segment is one kernel at all (tiles that line up) is the tiling model's to say."""
    members = [o for o in group if fg.kind[o] != "contraction"]
    inside = set(members)
    parent = {o: o for o in members}

    def find(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in fg.edges:
        if a in inside and b in inside:
            parent[find(a)] = find(b)
    runs: dict[str, list[str]] = {}
    for o in members:
        runs.setdefault(find(o), []).append(o)
    extra = list(runs.values())
    if sum(fg.kind[o] == "contraction" for o in group) <= MAX_CONTRACTIONS:
        extra.append(list(group))
    seen = {frozenset(s) for s in have}
    out = []
    for s in extra:
        key = frozenset(s)
        if len(s) > 1 and key not in seen and fg.convex(set(s)):
            seen.add(key)
            out.append(tuple(sorted(s, key=fg.index.get)))
    return out


def _recomputed(fg: FusionGraph) -> dict[str, set[str]]:
    """Tensors no kernel needs to store because every op that reads them outside their own op is
    a gather of fewer elements, which can compute those elements from the writing kernel's
    operands instead (log_softmax then gather, as in cross-entropy: the per-row max and sum are
    kept, the log-probabilities never stored). Only an elementwise kernel (``=``, no reduction)
    whose operands produced by other kernels take no more bytes than the tensor, so that storing
    them instead never costs more. Maps each such tensor to those operands."""
    p = fg.p
    out: dict[str, set[str]] = {}
    leaves = set(p.inputs) | set(p.params)
    for op in p.ops:
        if op.repeat != 1:
            continue
        writers = Counter(k.out.tensor for k in op.kernels)  # (once per op: ops of 9,000 kernels)
        for k in op.kernels:
            x = k.out.tensor
            if (k.op != "=" or k.reduce_vars or k.guards or k.init == "keep" or x in fg.output_sources
                    or writers[x] != 1):
                continue
            readers = fg.readers.get(x, set()) - {op.id}
            if not readers or any(not _gathers_less(fg, fg.ops[r], x) for r in readers):
                continue
            made = {p.base(ld.tensor) for ld in loads(k.expr)} - leaves - fg.free_tensors
            if sum(tensor_bytes(p, t) for t in made) <= tensor_bytes(p, x):
                out[x] = made
    return out


def _gathers_less(fg: FusionGraph, op, x: str) -> bool:
    """Does ``op`` read ``x`` (or a view of it) only by gathering fewer elements than it has?"""
    p = fg.p
    if op.kind != "gather":
        return False
    via = [t for t in op.inputs if p.base(t) == x]
    reads = [gather_reads(p, op, t) for t in via]
    return bool(via) and all(r is not None and r < p.tensors[x].numel for r in reads)


def _need(fg: FusionGraph, seg: tuple[str, ...], redo: dict[str, set[str]]) -> set[str]:
    """What ``seg`` writes for later ops: a recomputed tensor's operands in its place."""
    need = fg.needed_outside(set(seg))
    for x in need & set(redo):
        need.discard(x)
        written = {k.out.tensor for o in seg for k in fg.ops[o].kernels}
        need |= redo[x] & written
    return need


@dataclass(frozen=True)
class _LoopFacts:
    """What the loop-resident schedules need to know of the whole program, found once."""

    in_loop: frozenset[str]  # tensors a loop body writes
    stacked: dict[str, int]  # tensor a body writes each trip -> bytes of the output stacking it

    @staticmethod
    def of(p) -> _LoopFacts:
        outs = {p.base(t) for t in p.outputs}
        stacked: dict[str, int] = {}
        for op in p.ops:
            if op.kind == "view" and op.inputs:
                for o in op.outputs:
                    if p.base(o) in outs:
                        src = p.base(op.inputs[0])
                        stacked[src] = max(stacked.get(src, 0), tensor_bytes(p, o))
        return _LoopFacts(frozenset(k.out.tensor for op in p.ops if op.repeat > 1 for k in op.kernels), stacked)

    def per_trip_bytes(self, fg: FusionGraph, seg: tuple[str, ...], rep: int, need: set[str]) -> int:
        """Bytes a loop body moves that differ from trip to trip, so no residency saves them:
        the slices it reads of a tensor made outside the loop (``x[t]``), and the slices it
        writes (``need``: what it writes for others) of a program output stacked across trips."""
        p = fg.p
        total = 0
        for name in {ld.tensor for o in seg for k in fg.ops[o].kernels for ld in loads(k.expr)}:
            b = p.base(name)
            if name != b and b not in self.in_loop and tensor_bytes(p, name) * rep <= tensor_bytes(p, b):
                total += tensor_bytes(p, name)
        for b in need:
            if self.stacked.get(b, 0) >= rep * tensor_bytes(p, b):
                total += tensor_bytes(p, b)
        return total


def _dead(fg: FusionGraph) -> frozenset[str]:
    """Tensors a kernel writes that the program does not return and no other op reads (its
    own op may, as cummax's index recurrence reads its previous index; a loop body's op, run
    again next trip, may not): cummax's indices when only its values are used. A compiler
    drops them, so no kernel stores them."""
    p = fg.p
    return frozenset(b for op in p.ops if op.repeat == 1 for k in op.kernels
                     for b in [p.base(k.out.tensor)]
                     if b not in fg.output_sources and fg.readers.get(b, set()) <= {op.id})


def _first_readers(p) -> dict[str, str]:
    """The first op, in program order, that reads each tensor name (a view by its own name, so
    two slices of one weight are two regions; a view op itself reads nothing)."""
    first: dict[str, str] = {}
    for op in p.ops:
        if op.kind == "view":
            continue
        for t in op.inputs:
            first.setdefault(t, op.id)
    return first


def _credited(fg: FusionGraph, seg: tuple[str, ...], first_reader: dict[str, str], need: set[str]) -> list[int]:
    """Bytes at the edges of the kernel ``seg`` that a real run may find in (or leave in) the
    cache: what it reads from another kernel or writes for one, each region by its own size,
    except the compulsory traffic — the program's outputs it writes, and the first read of an
    input or weight region (paid by whichever kernel holds the op that reads it first, so exactly
    once in any cut)."""
    p = fg.p
    outs = fg.output_sources
    ins = {p.base(t) for t in list(p.inputs) + list(p.params)}
    written = {k.out.tensor for o in seg for k in fg.ops[o].kernels}
    by_base: dict[str, int] = {}
    for name in {ld.tensor for o in seg for k in fg.ops[o].kernels for ld in loads(k.expr)}:
        b = p.base(name)
        if b in written or b in fg.free_tensors:
            continue
        if b in ins and first_reader.get(name) in seg:
            continue
        by_base[b] = min(by_base.get(b, 0) + tensor_bytes(p, name), tensor_bytes(p, b))
    for b in need - outs - ins:
        by_base[b] = tensor_bytes(p, b)
    return [by_base[b] for b in sorted(by_base)]


_SOLVED: dict[tuple, tuple[int, ...]] = {}


def _feasible(plan: Plan, gi: int, capacity: float, credit: bool) -> list[tuple[int, Sched, int]]:
    """(candidate index, schedule, DRAM bytes) of every candidate segment of group ``gi`` with a
    schedule that fits ``capacity``."""
    feas = []
    for si, c in enumerate(plan.cands[gi]):
        if credit:
            hit = c.best(capacity)
        else:
            s0 = c.best_uncredited(capacity)
            hit = (s0, s0.traffic) if s0 is not None else None
        if hit is not None:
            feas.append((si, hit[0], hit[1]))
    return feas


def solve(plan: Plan, capacity: float, credit: bool = True, chip: Chip | None = None) -> Solution:
    """The least-traffic cut and schedules of every group under ``capacity`` bytes; with
    ``chip``, the cut of least time there instead (Σ per kernel of max(compute, DRAM bytes / β):
    the least-traffic cut can take longer, and the bound is the least time of the space). With
    ``credit`` (the bound), tensors handed between kernels are credited up to the capacity;
    without it (the fusion suggestions), every kernel pays its own edges, so the cut found is
    the fusion that moves the least."""
    t0 = time.perf_counter()
    chosen: list[Chosen] = []
    todo: list[tuple[int, list[tuple[int, Sched, int]], list[float], tuple]] = []
    for gi, group in enumerate(plan.groups):
        feas = _feasible(plan, gi, capacity, credit)
        cost = _objective(plan, gi, feas, chip)
        if len(group) == 1:
            k = min(range(len(feas)), key=lambda i: (cost[i], feas[i][2]))
            chosen.append(Chosen(gi, plan.cands[gi][feas[k][0]], feas[k][1], feas[k][2]))
            continue
        local = {o: i for i, o in enumerate(group)}
        key = (len(group), chip is not None,
               tuple((tuple(local[o] for o in plan.cands[gi][si].ops), d, s.traffic, c)
                     for (si, s, d), c in zip(feas, cost)))
        hit = _SOLVED.get(key)
        if hit is not None:
            chosen += [Chosen(gi, plan.cands[gi][feas[k][0]], feas[k][1], feas[k][2]) for k in hit]
        else:
            todo.append((gi, feas, cost, key))
    n_vars = _solve_ilp(plan, todo, chosen, chip is not None)
    chosen.sort(key=lambda c: plan.fg.index[c.cand.ops[0]])
    return Solution(capacity, chosen, time.perf_counter() - t0, n_vars)


def _objective(plan: Plan, gi: int, feas: list[tuple[int, Sched, int]], chip: Chip | None) -> list[float]:
    """What each feasible segment costs the objective: its DRAM bytes, or with ``chip`` its
    time there, max(compute, bytes / β)."""
    if chip is None:
        return [float(d) for _si, _s, d in feas]
    out = []
    for si, _s, d in feas:
        comp = max(seg_work(plan, plan.cands[gi][si].ops).times(chip).values(), default=0.0)
        out.append(max(comp, d / chip.dram_bytes_per_s))
    return out


def _solve_ilp(plan: Plan, todo: list, chosen: list[Chosen], by_time: bool) -> int:
    """One ILP over every group not solved before: a binary per feasible segment, each op
    covered once; appends the picks to ``chosen`` and returns the number of variables."""
    if not todo:
        return 0
    prob = pulp.LpProblem("cache_aware", pulp.LpMinimize)
    xs: dict[tuple[int, int], pulp.LpVariable] = {}
    obj = []
    for ti, (gi, feas, cost, _) in enumerate(todo):
        cover: dict[str, list] = {o: [] for o in plan.groups[gi]}
        # ties (cuts whose tensors the cache hands over) go to the cut whose kernels move the
        # least on their own, i.e. the real fusion: a weight that sums to under one unit of
        # the objective (a byte, or a nanosecond) over the group, so it never outweighs one
        unit = 1.0 / (sum(s.traffic for _si, s, _d in feas) + 1)
        scale = 1e9 if by_time else 1.0  # seconds -> ns
        for k, ((si, s, _d), c) in enumerate(zip(feas, cost)):
            x = pulp.LpVariable(f"x_{ti}_{k}", cat="Binary")
            xs[(ti, k)] = x
            obj.append((x, (c * scale + s.traffic * unit) / 1e6))
            for o in plan.cands[gi][si].ops:
                cover[o].append(x)
        for o, lst in cover.items():
            prob += pulp.lpSum(lst) == 1, f"cover_{ti}_{plan.fg.index[o]}"
    prob += pulp.LpAffineExpression(obj)
    status = prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=ILP_TIME_LIMIT_S, gapRel=0))
    if pulp.LpStatus[status] != "Optimal":
        raise RuntimeError(f"cache-aware ILP: {pulp.LpStatus[status]}")
    for ti, (gi, feas, _cost, key) in enumerate(todo):
        pick = tuple(k for k in range(len(feas)) if (xs[(ti, k)].value() or 0) > 0.5)
        if len(_SOLVED) > CACHE_LIMIT:
            _SOLVED.clear()
        _SOLVED[key] = pick
        chosen += [Chosen(gi, plan.cands[gi][feas[k][0]], feas[k][1], feas[k][2]) for k in pick]
    return len(xs)


def brute_force(plan: Plan, gi: int, capacity: float, chip: Chip | None = None) -> float:
    """Oracle for tests: the least traffic of group ``gi`` over every partition into candidate
    segments and every schedule of the (unpruned) space; with ``chip``, the least time there
    (a segment's time grows with its traffic, so its least-traffic schedule is its fastest)."""
    group = plan.groups[gi]
    best_of: dict[tuple[str, ...], float] = {}
    for c in plan.cands[gi]:
        scheds = [c.front[0]] if c.model is None else list(all_schedules(c.model))
        ok = [s.traffic for s in scheds if s.ws <= capacity]
        if not ok and len(c.ops) == 1 and scheds:  # the same fallback as SegCand.best
            ok = [min(scheds, key=lambda s: (s.ws, s.traffic)).traffic]
        if ok:
            d = max(0, min(ok) - c.credit(capacity, c.trips[0] if c.trips else 1))
            if chip is None:
                best_of[c.ops] = d
            else:
                comp = max(seg_work(plan, c.ops).times(chip).values(), default=0.0)
                best_of[c.ops] = max(comp, d / chip.dram_bytes_per_s)

    def rec(left: frozenset[str]) -> float:
        if not left:
            return 0
        first = min(left, key=plan.fg.index.get)
        best = float("inf")
        for seg, t in best_of.items():
            if first in seg and set(seg) <= left:
                best = min(best, t + rec(left - set(seg)))
        return best

    best = rec(frozenset(group))
    return int(best) if chip is None else best


def capacity_of(chip: Chip, onchip: str | int | float = "l2") -> float:
    """On-chip bytes that can hold reused tiles: "l2", "smem" (shared memory × SMs), or a
    number of bytes."""
    if isinstance(onchip, (int, float)):
        return float(onchip)
    if onchip == "l2":
        return float(chip.l2_bytes)
    if onchip == "smem":
        return float(chip.smem_per_sm_bytes * chip.sm_count)
    return float(int(onchip))


def seg_work(plan: Plan, ops: tuple[str, ...]) -> UnitWork:
    """Total compute of the ops of a segment, per unit and dtype."""
    w = UnitWork()
    for o in ops:
        if o in plan.costs:
            w += plan.costs[o].work
    return w


def evaluate_solution(plan: Plan, sol: Solution, chip: Chip) -> CacheAware:
    """T_cache on ``chip`` for a solved plan."""
    t = t_comp = t_mem = 0.0
    total = 0
    segs = []
    covered = set()
    for c in sol.chosen:
        ut = seg_work(plan, c.cand.ops).times(chip)
        comp = max(ut.values(), default=0.0)
        mem = c.dram / chip.dram_bytes_per_s
        t += max(comp, mem)
        t_comp += comp
        t_mem += mem
        total += c.dram
        covered.update(c.cand.ops)
        segs.append({"ops": list(c.cand.ops), "bytes": c.dram, "t_s": max(comp, mem),
                     "working_set_bytes": c.sched.ws,
                     "schedule": c.sched.describe(c.cand.model) if c.cand.model else None})
    for oid, cost in plan.costs.items():
        if oid in covered:
            continue
        if oid in plan.fg.free:  # recomputed inside its consumers: compute only
            comp = max(cost.work.times(chip).values(), default=0.0)
            t += comp
            t_comp += comp
            continue
        tt, _ = cost.time(chip)
        t += tt
        t_comp += max(cost.work.times(chip).values(), default=0.0)
        t_mem += cost.bytes / chip.dram_bytes_per_s
        total += cost.bytes
    # Compulsory traffic is a lower bound too, and the larger of two lower bounds is one: the
    # loop-resident schedules count the slices a loop moves per trip only one loop level deep
    # (nested scans can come out below it), so the total never reports less than it.
    total = max(total, boundary_bytes(plan.fg.p))
    if chip.warm_l2:
        # A warm L2 serves at most warm_l2_bytes of the compulsory traffic, and each byte it
        # serves shortens one kernel's max(compute, DRAM) by at most one byte's DRAM time: the
        # least time of the space drops by no more than that (docs/sol-model.md "Warm L2").
        t = max(t_comp, t - warm_l2_bytes(plan.fg.p, chip) / chip.dram_bytes_per_s)
    bound = "compute" if t_comp >= t_mem and t_comp > 0 else "memory"
    return CacheAware(t, total, bound, segs)


__all__ = ["CacheAware", "Plan", "Solution", "brute_force", "build_plan", "capacity_of",
           "evaluate_solution", "solve"]
