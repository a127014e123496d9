"""Fill an entry report's cache-aware fidelity, fusion suggestions, contraction reorderings and
the cache-aware inverse roofline (docs/architecture.md §6). Called by ``tail.fill_sol``.

The cache-aware bound depends on the chip only through its on-chip capacity and its rates, so
the fusion plan is built once per entry and the ILP is solved once per distinct capacity.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from solar_lsp.bounds import reorder
from solar_lsp.bounds.cache_ilp import (
    CacheAware,
    Plan,
    Solution,
    build_plan,
    capacity_of,
    evaluate_solution,
    seg_work,
    solve,
)
from solar_lsp.bounds.einsum_graph import tensor_bytes
from solar_lsp.bounds.fusion import lines_of, pattern
from solar_lsp.bounds.sol import inverse, total_work
from solar_lsp.hardware.chips import Chip
from solar_lsp.pipeline.report import EntryReport


class Solver:
    """Solutions of one plan: the least-traffic cut once per distinct capacity, the fastest cut
    once per chip."""

    def __init__(self, plan: Plan, onchip: str | int):
        self.plan = plan
        self.onchip = onchip
        self._by_cap: dict[tuple[float, bool, str | None], Solution] = {}
        self.solve_s = 0.0

    def solution(self, chip: Chip, credit: bool = True, fastest: bool = False) -> Solution:
        """The bound's least-traffic solution (``credit``: edges handed over in the cache), its
        least-time one on ``chip`` (``fastest``), or the fusion suggestions' one (every kernel
        pays its own edges)."""
        key = (capacity_of(chip, self.onchip), credit, chip.name if fastest else None)
        if key not in self._by_cap:
            t = time.perf_counter()
            self._by_cap[key] = solve(self.plan, key[0], credit, chip if fastest else None)
            self.solve_s += time.perf_counter() - t
        return self._by_cap[key]


def fill_multi_fidelity(er: EntryReport, program, costs, chips: list[Chip], config,
                        all_chips: Callable[[list[Chip]], list[Chip]]) -> None:
    """Cache-aware bytes and time per chip, fusion and reorder suggestions, into ``er``."""
    t0 = time.perf_counter()
    try:
        er.reorder = reorder.suggestions(program, einsum="jnp.einsum" if er.frontend == "jax" else "torch.einsum")
    except Exception as exc:  # a bug here must not lose the entry's other bounds
        er.reorder = []
        er.totals["reorder_error"] = f"{type(exc).__name__}: {exc}"
    try:
        plan = build_plan(program, costs)
        solver = Solver(plan, getattr(config, "onchip", "l2"))
        _fill(er, plan, solver, costs, chips, config, all_chips, program)
    except Exception as exc:
        er.totals["cache_aware_error"] = f"{type(exc).__name__}: {exc}"
        return
    er.timings["fusion_plan_s"] = plan.build_s
    er.timings["cache_ilp_s"] = solver.solve_s
    er.timings["multi_fidelity_s"] = time.perf_counter() - t0


def footprint(program) -> int:
    """Peak bytes of the tensors alive at once in op order (inputs and weights from the start
    to their last use, intermediates from their producer to their last consumer, outputs to the
    end): when it fits on chip, every tensor can stay there for as long as it is needed."""
    n = len(program.ops)
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    for i, op in enumerate(program.ops):
        for t in op.outputs:
            start.setdefault(program.base(t), i)
        for t in op.inputs:
            end[program.base(t)] = i
    for t in program.outputs:
        end[program.base(t)] = n
    delta = [0] * (n + 2)
    for b in set(start) | set(end):
        lo, hi = start.get(b, 0), max(end.get(b, 0), start.get(b, 0))
        nbytes = tensor_bytes(program, b)
        delta[lo] += nbytes
        delta[hi + 1] -= nbytes
    live = peak = 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return peak


def _cache_aware(er: EntryReport, plan: Plan, solver: Solver, ch: Chip, program) -> CacheAware:
    """The ILP's schedules: the bytes of the least-traffic cut, the time (and segments) of the
    fastest cut on ``ch`` — two lower bounds of the same space, which can differ when a cut that
    moves a few more bytes balances compute and memory better. Except when everything alive at
    once fits on chip: then nothing forces a byte beyond the compulsory ones (cut segments can
    hand tensors over in L2/LLC), so the bound is the fused one — charging the cuts would let a
    real run beat the bound (a JAX layer norm, 4 MB, ran at 0.90x the ILP's time on the CPU's
    32 MB LLC)."""
    least = evaluate_solution(plan, solver.solution(ch), ch)
    if program is not None and footprint(program) <= capacity_of(ch, solver.onchip):
        h = er.by_hardware[ch.name]
        return CacheAware(h["t_fused_s"], er.totals["bytes_fused"], h["bound"], least.segments)
    fast = evaluate_solution(plan, solver.solution(ch, fastest=True), ch)
    return CacheAware(min(fast.t_s, least.t_s), least.bytes, fast.bound, fast.segments)


def _fill(er: EntryReport, plan: Plan, solver: Solver, costs, chips: list[Chip], config,
          all_chips, program=None) -> None:
    chip = chips[0]
    for ch in chips:
        ca = _cache_aware(er, plan, solver, ch, program)
        h = er.by_hardware[ch.name]
        # summed per kernel, the time can round ~1e-16 below fused; T_cache ≥ T_fused by definition
        h["t_cache_aware_s"] = max(ca.t_s, h["t_fused_s"])
        h["bytes_cache_aware"] = ca.bytes
        h["bound_cache_aware"] = ca.bound
        h["onchip_bytes"] = capacity_of(ch, solver.onchip)
    ca0 = _cache_aware(er, plan, solver, chip, program)
    er.totals["t_cache_aware_s"] = max(ca0.t_s, er.totals["t_fused_s"])
    er.totals["bytes_cache_aware"] = ca0.bytes
    er.totals["bound_cache_aware"] = ca0.bound
    er.totals["onchip_bytes"] = capacity_of(chip, solver.onchip)
    er.totals["segments"] = len(ca0.segments)
    er.fusion = suggestions(plan, solver.solution(chip, credit=False), chips)
    if er.inverse is not None:
        target = er.inverse["target_s"]
        work = total_work(costs)
        every = all_chips(chips)
        inv = inverse(work, er.totals["flops"], ca0.bytes, target, every)
        for ch in every:  # each chip at its own capacity
            fits = program is not None and footprint(program) <= capacity_of(ch, solver.onchip)
            b = er.totals["bytes_fused"] if fits else evaluate_solution(plan, solver.solution(ch), ch).bytes
            inv["shortfall"][ch.name]["bandwidth"] = b / ch.dram_bytes_per_s / target
            inv["shortfall"][ch.name]["bytes"] = b
        er.inverse["by_fidelity"]["cache_aware"] = inv


def suggestions(plan: Plan, sol: Solution, chips: list[Chip]) -> list[dict]:
    """Fused segments of the chosen cut that save time, ranked by time saved on the first chip;
    savings on every chip are for this same schedule."""
    out = []
    for c in sol.chosen:
        if len(c.cand.ops) < 2:
            continue
        ops = c.cand.ops
        unf = sum(plan.costs[o].bytes for o in ops)
        saved = {}
        work = seg_work(plan, ops)
        for ch in chips:
            t_unf = sum(plan.costs[o].time(ch)[0] for o in ops)
            comp = max(work.times(ch).values(), default=0.0)
            saved[ch.name] = t_unf - max(comp, c.sched.traffic / ch.dram_bytes_per_s)
        if unf - c.sched.traffic <= 0:
            continue
        fg = plan.fg
        out.append({"lines": lines_of(fg, ops), "ops": list(ops),
                    "targets": [fg.ops[o].target for o in ops], "pattern": pattern(fg, ops),
                    "bytes_unfused": unf, "bytes_fused": c.sched.traffic,
                    "bytes_saved": unf - c.sched.traffic, "t_saved_s": saved[chips[0].name],
                    "t_saved_by_hw": saved,
                    "schedule": c.sched.describe(c.cand.model) if c.cand.model else None})
    out.sort(key=lambda f: (-f["t_saved_s"], -f["bytes_saved"]))
    return out
