"""Cache-aware fused SOL: where to cut each fusible group and how to tile each piece, as an
integer linear program (pulp, CBC), under the chip's on-chip capacity (DESIGN §6).

Variables: one binary per candidate segment of a group (a connected, convex set of its ops run
as one kernel) with its least-traffic schedule that fits the capacity; a schedule that does not
fit has no variable. Constraints: every op of the group is in exactly one chosen segment.
Objective: minimum DRAM bytes. Segments run one after another, so

    T_cache = Σ_segments max(max_u work_u / Π_u, bytes / β)

plus the compute of recomputed generators and the unfused time of composition steps. Every op
alone with whole-tensor tiles is in the space, which makes T_cache ≤ T_unfused wherever that
fits; compulsory traffic is always paid, so T_cache ≥ T_fused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pulp

from .fusion import FusionGraph, analyze, candidate_segments
from .hardware import Chip
from .sol import OpCost, UnitWork
from .tiling import CACHE_LIMIT, Sched, SegModel, all_schedules, best_within, build_model, frontier

ILP_TIME_LIMIT_S = 20


@dataclass
class SegCand:
    ops: tuple[str, ...]
    model: SegModel | None  # None: one op the tiling model cannot describe (kept as unfused)
    front: list[Sched]

    def best(self, capacity: float) -> Sched | None:
        """Least traffic within ``capacity``; a single op that fits nowhere keeps its smallest
        schedule so that every group stays solvable."""
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
    group: int
    cand: SegCand
    sched: Sched


@dataclass
class Solution:
    capacity: float
    chosen: list[Chosen]
    solve_s: float = 0.0
    ilp_vars: int = 0

    @property
    def bytes(self) -> int:
        return sum(c.sched.traffic for c in self.chosen)


@dataclass
class CacheAware:
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
    for g in fg.groups:
        lst = []
        for seg in candidate_segments(fg, g):
            ops = [fg.ops[o] for o in seg]
            m = build_model(p, fg.vm, ops, fg.free_tensors, fg.needed_outside(set(seg)))
            rep = getattr(ops[0], "repeat", 1)  # a loop body's kernel runs once per iteration
            if m is None:
                if len(seg) > 1:
                    continue
                b = by_id[seg[0]].bytes if seg[0] in by_id else 0
                front = [Sched((), (), 0, b)]
                if rep > 1:  # all of it resident across iterations: read once
                    front.append(Sched((), (), b // rep, b // rep))
                lst.append(SegCand(seg, None, front))
                continue
            front = frontier(m)
            if rep > 1:
                # Either the body streams its operands every iteration (traffic × trips), or the
                # capacity holds them across iterations (weights stay resident, the carry stays
                # on chip): traffic once, with the largest working set of the space. The second
                # is optimistic where it applies, which keeps the bound a lower bound; per-trip
                # slices of the loop's inputs and outputs are in the fused bound it is maxed with.
                resident = max(s.ws for s in front)
                front = [Sched(s.choice, s.order, s.ws, s.traffic * rep) for s in front] + [
                    Sched(s.choice, s.order, max(s.ws, resident), s.traffic) for s in front]
            lst.append(SegCand(seg, m, front))
        cands.append(lst)
    return Plan(fg, fg.groups, cands, by_id, time.perf_counter() - t0)


_SOLVED: dict[tuple, tuple[int, ...]] = {}


def solve(plan: Plan, capacity: float) -> Solution:
    """The least-traffic cut and schedules of every group under ``capacity`` bytes."""
    t0 = time.perf_counter()
    chosen: list[Chosen] = []
    todo: list[tuple[int, list[tuple[int, Sched]], tuple]] = []
    for gi, group in enumerate(plan.groups):
        feas = [(si, c.best(capacity)) for si, c in enumerate(plan.cands[gi])]
        feas = [(si, s) for si, s in feas if s is not None]
        if len(group) == 1:
            si, s = min(feas, key=lambda x: x[1].traffic)
            chosen.append(Chosen(gi, plan.cands[gi][si], s))
            continue
        local = {o: i for i, o in enumerate(group)}
        key = (len(group), tuple((tuple(local[o] for o in plan.cands[gi][si].ops), s.traffic)
                                 for si, s in feas))
        hit = _SOLVED.get(key)
        if hit is not None:
            chosen += [Chosen(gi, plan.cands[gi][feas[k][0]], feas[k][1]) for k in hit]
        else:
            todo.append((gi, feas, key))
    n_vars = 0
    if todo:
        prob = pulp.LpProblem("cache_aware", pulp.LpMinimize)
        xs: dict[tuple[int, int], pulp.LpVariable] = {}
        obj = []
        for ti, (gi, feas, _) in enumerate(todo):
            cover: dict[str, list] = {o: [] for o in plan.groups[gi]}
            for k, (si, s) in enumerate(feas):
                x = pulp.LpVariable(f"x_{ti}_{k}", cat="Binary")
                xs[(ti, k)] = x
                obj.append((x, s.traffic / 1e6))
                for o in plan.cands[gi][si].ops:
                    cover[o].append(x)
            for o, lst in cover.items():
                prob += pulp.lpSum(lst) == 1, f"cover_{ti}_{plan.fg.index[o]}"
        prob += pulp.LpAffineExpression(obj)
        n_vars = len(xs)
        status = prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=ILP_TIME_LIMIT_S, gapRel=0))
        if pulp.LpStatus[status] != "Optimal":
            raise RuntimeError(f"cache-aware ILP: {pulp.LpStatus[status]}")
        for ti, (gi, feas, key) in enumerate(todo):
            pick = tuple(k for k in range(len(feas)) if (xs[(ti, k)].value() or 0) > 0.5)
            if len(_SOLVED) > CACHE_LIMIT:
                _SOLVED.clear()
            _SOLVED[key] = pick
            chosen += [Chosen(gi, plan.cands[gi][feas[k][0]], feas[k][1]) for k in pick]
    chosen.sort(key=lambda c: plan.fg.index[c.cand.ops[0]])
    return Solution(capacity, chosen, time.perf_counter() - t0, n_vars)


def brute_force(plan: Plan, gi: int, capacity: float) -> int:
    """Oracle for tests: the least traffic of group ``gi`` over every partition into candidate
    segments and every schedule of the (unpruned) space."""
    group = plan.groups[gi]
    best_of: dict[tuple[str, ...], int] = {}
    for c in plan.cands[gi]:
        scheds = [c.front[0]] if c.model is None else list(all_schedules(c.model))
        ok = [s.traffic for s in scheds if s.ws <= capacity]
        if not ok and len(c.ops) == 1 and scheds:  # the same fallback as SegCand.best
            ok = [min(scheds, key=lambda s: (s.ws, s.traffic)).traffic]
        if ok:
            best_of[c.ops] = min(ok)

    def rec(left: frozenset[str]) -> float:
        if not left:
            return 0
        first = min(left, key=plan.fg.index.get)
        best = float("inf")
        for seg, t in best_of.items():
            if first in seg and set(seg) <= left:
                best = min(best, t + rec(left - set(seg)))
        return best

    return int(rec(frozenset(group)))


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
        mem = c.sched.traffic / chip.dram_bytes_per_s
        t += max(comp, mem)
        t_comp += comp
        t_mem += mem
        total += c.sched.traffic
        covered.update(c.cand.ops)
        segs.append({"ops": list(c.cand.ops), "bytes": c.sched.traffic, "t_s": max(comp, mem),
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
    bound = "compute" if t_comp >= t_mem and t_comp > 0 else "memory"
    return CacheAware(t, total, bound, segs)


__all__ = ["CacheAware", "Plan", "Solution", "brute_force", "build_plan", "capacity_of",
           "evaluate_solution", "solve"]
