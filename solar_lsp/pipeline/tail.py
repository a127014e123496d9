"""The tail every entry shares, whichever frontend wrote its IR (torch, JAX or the LLM agent):
einsum graph → counts → SOL per chip (unfused, fused, cache-aware) → verification.

One implementation, so that the three kinds of entries cannot drift apart in what they report.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

from solar_lsp.bounds.einsum_graph import Counts, build_graph, count_kernel
from solar_lsp.bounds.priced import tensor_flops_by_unit
from solar_lsp.bounds.sol import (
    Fidelity,
    Policy,
    fused,
    inverse,
    op_costs,
    peak_notes,
    total_work,
    unfused,
)
from solar_lsp.hardware.chips import Chip, list_chips, load_chip
from solar_lsp.ir.core import Program
from solar_lsp.pipeline.config import Config
from solar_lsp.pipeline.fidelity import fill_multi_fidelity
from solar_lsp.pipeline.report import EntryReport, LineReport, OpReport
from solar_lsp.pipeline.train import activation_bytes, is_train_program, phase_totals

NOT_VERIFIED = {"status": "unverified", "detail": "verification was turned off (--no-verify)"}


def fail(er: EntryReport, exc: Exception) -> None:
    """Mark the entry failed with the exception's message (and its user line, if known)."""
    er.status = "error"
    er.error = str(exc)
    er.error_line = getattr(exc, "line", None)
    er.verification = {"status": "unverified", "detail": f"not analyzed: {exc}"}


def bound_and_verify(er: EntryReport, program: Program, chips: list[Chip], config: Config,
                     policy: Policy, graph_info: dict,
                     verify: Callable[[], tuple[dict, float]] | None) -> None:
    """Graph, counts and SOL of ``program`` into ``er``, bounds published, then verification.

    ``verify`` returns the verification JSON and its seconds (run only when the config asks);
    ``graph_info`` adds the frontend's own size figures (ATen nodes, jaxpr equations).
    """
    t = time.perf_counter()
    graph = build_graph(program)
    er.graph = {"nodes": graph.number_of_nodes(), "edges": graph.number_of_edges(),
                "ops": len(program.ops), "kernels": sum(len(o.kernels) for o in program.ops),
                **graph_info}
    costs = op_costs(program, graph, policy)
    fill_sol(er, program, costs, chips, config)
    mark_llm_sources(er, program)
    er.timings["sol_s"] = time.perf_counter() - t
    er.program = program  # type: ignore[attr-defined]  # kept for `solar ir` / `solar graph`
    er.einsum_graph = graph  # type: ignore[attr-defined]
    if not config.verify or verify is None:
        er.verification = dict(NOT_VERIFIED)
        return
    if config.on_bounds is not None:
        er.verification = {"status": "unverified", "detail": "verifying"}
        config.on_bounds(er)
    er.verification, er.timings["verify_s"] = verify()


def mark_llm_sources(er: EntryReport, program: Program) -> None:
    """Mark the reported ops that came from the LLM agent (``note == "llm"``)."""
    ids = {op.id for op in program.ops if op.note == "llm"}
    for ln in er.lines if ids else ():
        for o in ln.ops:
            if o.op in ids:
                o.source = "llm"


def fill_sol(er: EntryReport, program: Program, costs, chips: list[Chip], config: Config) -> None:
    """Per-line table, totals and the three fidelities on every chip, from the op costs."""
    chip = chips[0]
    total = Counts()
    for c in costs:
        total = total + c.counts
    er.lines = _line_reports(costs, chip)
    er.by_hardware = {}
    incomplete = len(er.unsupported)
    for ch in chips:
        u, f = _unfused_at_least_fused(unfused(costs, ch), fused(costs, program, ch), incomplete)
        er.by_hardware[ch.name] = {"t_unfused_s": u.t_s, "t_fused_s": f.t_s, "t_cache_aware_s": None,
                                   "bound": f.bound, "bound_unfused": u.bound,
                                   "unit_times_fused_s": f.unit_times}
    u0, f0 = _unfused_at_least_fused(unfused(costs, chip), fused(costs, program, chip), incomplete)
    er.totals = {"macs": total.macs, "flops": total.flops, "tensor_flops": total.tensor_flops,
                 "vector_flops": total.vector_flops, "transcendentals": total.transcendentals,
                 "sfu_ops": total.sfu_ops, "bytes_unfused": u0.bytes, "bytes_fused": f0.bytes,
                 "bytes_cache_aware": None, "t_unfused_s": u0.t_s, "t_fused_s": f0.t_s,
                 "t_cache_aware_s": None, "bound": f0.bound, "bound_unfused": u0.bound,
                 "hardware": chip.name}
    er.totals["tensor_flops_by_unit"] = tensor_flops_by_unit(costs, chip)
    er.totals["tensor_flops_dense"] = total.tensor_flops + masked_tensor_flops(program)
    er.mode = "train" if is_train_program(program) else "inference"  # what was bounded
    if er.mode == "train":
        fill_train(er, program, costs, chip)
    if incomplete:
        er.totals["incomplete"] = (
            f"{incomplete} op(s) without a lowering are not counted: every total is a lower "
            "bound of the real program's")
    if config.target_s:
        work, every = total_work(costs), all_chips(chips)
        er.inverse = {"target_s": config.target_s, "by_fidelity": {
            "unfused": inverse(work, total.flops, u0.bytes, config.target_s, every),
            "fused": inverse(work, total.flops, f0.bytes, config.target_s, every),
            "cache_aware": None,
        }}
    fill_multi_fidelity(er, program, costs, chips, config, all_chips)
    er.notes = [n for n in er.notes if n.get("kind") != "peak"] + [
        {"line": line, "kind": "peak", "note": f"{ch.name}: {how}"}
        for ch in chips for line, how in peak_notes(costs, ch)]


def fill_train(er: EntryReport, program: Program, costs, chip: Chip) -> None:
    """A training step's report (docs/training.md): the totals of each phase, the activation
    memory kept for the backward, and each line's work split by phase."""
    er.phases = phase_totals(costs, program, chip)
    er.totals["activation_bytes"] = activation_bytes(program)
    for ln in er.lines:
        ln.split_phases()


def masked_tensor_flops(program: Program) -> int:
    """Matrix FLOPs a mask guard skips (the upper triangle of causal attention): what a FLOP
    counter that prices the full square (FlopCounterMode) counts on top of ours."""
    return sum(op.repeat * (count_kernel(k, masks=False).tensor_flops - count_kernel(k).tensor_flops)
               for op in program.ops for k in op.kernels)


def _unfused_at_least_fused(u: Fidelity, f: Fidelity, incomplete: int) -> tuple[Fidelity, Fidelity]:
    """With ops missing, the unfused sum omits them while the fused boundary (inputs, outputs)
    still counts their traffic. The real program's unfused time is at least its fused time, so
    the fused figures are also a lower bound of its unfused ones: the totals stay consistent."""
    if not incomplete or (u.t_s >= f.t_s and u.bytes >= f.bytes):
        return u, f
    return dataclasses.replace(u, t_s=max(u.t_s, f.t_s), bytes=max(u.bytes, f.bytes),
                               bound=f.bound if f.t_s > u.t_s else u.bound), f


def _line_reports(costs, chip: Chip) -> list[LineReport]:
    lines: dict[int | None, LineReport] = {}
    for c in costs:
        if c.op.kind == "view" or c.op.kind == "alloc":
            continue
        t_s, bound = c.time(chip)
        ln = lines.setdefault(c.op.line, LineReport(c.op.line))
        ln.flops += c.counts.flops
        ln.bytes += c.bytes
        ln.t_unfused_s += t_s
        ln.ops.append(OpReport(c.op.id, c.op.target, c.op.line, "; ".join(c.einsums) or str(c.op.call),
                               c.shapes, c.dtype, c.counts.macs, c.counts.flops, c.counts.tensor_flops,
                               c.counts.vector_flops, c.counts.transcendentals, c.bytes, t_s, bound,
                               t_compute_s=max(c.work.times(chip).values(), default=0.0),
                               phase=c.op.phase))
    return sorted(lines.values(), key=lambda ln: (ln.line is None, ln.line or 0))


def all_chips(chips: list[Chip]) -> list[Chip]:
    """Shortfall is reported against every bundled chip plus any the user named."""
    seen = {c.name for c in chips}
    return list(chips) + [load_chip(name) for name in list_chips() if name not in seen]


def relpath(path: str) -> str:
    """``path`` relative to the working directory when it can be (another drive: as is)."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return path
