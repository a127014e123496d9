"""The pipeline of DESIGN §1 for one file: discover → trace → lower → graph → SOL → verify.

Each stage is a pure function of its input plus the config; this module only wires them
and turns failures into messages on the entry they belong to.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from solar_lsp.bounds.einsum_graph import Counts, build_graph
from solar_lsp.bounds.sol import Policy, fused, inverse, op_costs, total_work, unfused
from solar_lsp.hardware.chips import Chip, load_chips
from solar_lsp.pipeline.report import EntryReport, FileReport, LineReport, OpReport
from solar_lsp.source.discover import DiscoveryError, Entry, discover

if TYPE_CHECKING:
    from solar_lsp.llm.config import LLMConfig

DEFAULT_HW = "h100-sxm"


@dataclass
class Config:
    hw: list[str] = field(default_factory=lambda: [DEFAULT_HW])
    entry: str | None = None
    target_s: float | None = None
    policy: Policy = field(default_factory=Policy)
    verify: bool = True
    budget_bytes: int = 2 * 1024**3
    dims: dict = field(default_factory=dict)
    entries: dict = field(default_factory=dict)  # name -> pragma, from [tool.solar]
    # on-chip capacity of the cache-aware bound: "l2", "smem" (shared memory x SMs) or bytes
    onchip: str | int = "l2"
    # called with an entry's report once its bounds exist, before verification runs, so a
    # server can publish the bounds first (DESIGN §4: verification never delays them)
    on_bounds: Callable[[EntryReport], None] | None = None
    # the LLM agent (docs/llm.md): None sends nothing; reports then say what would need it
    llm: LLMConfig | None = None


def analyze_file(path: str, config: Config | None = None, chips: list[Chip] | None = None) -> FileReport:
    config = config or Config()
    chips = chips if chips is not None else load_chips(config.hw)
    report = FileReport(file=path, hardware=[c.name for c in chips])
    t0 = time.perf_counter()
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as exc:
        report.error = f"cannot read {path}: {exc.strerror or exc}"
        return report
    try:
        entries = discover(source, path, {"dims": config.dims, "entries": config.entries})
    except DiscoveryError as exc:
        report.error = str(exc)
        return report
    if config.entry:
        entries = [e for e in entries if e.name == config.entry]
        if not entries:
            report.error = f"no entry named {config.entry!r} in {path}"
            return report
    t_discover = time.perf_counter() - t0
    if not entries:
        return report
    module = None
    import_error = None
    t1 = time.perf_counter()
    from solar_lsp.frontend.errors import EntryError
    from solar_lsp.frontend.torch.trace import load_module, warm_up
    if any(e.frontend == "torch" for e in entries):  # torch.export's machinery: torch entries only
        warm_up()
    try:
        module = load_module(path)
    except EntryError as exc:
        import_error = exc
    t_import = time.perf_counter() - t1
    for entry in entries:
        er = EntryReport(name=entry.name, line=entry.line, frontend=entry.frontend)
        er.timings = {"discover_s": t_discover, "import_s": t_import}
        try:
            if import_error is not None:
                _fail(er, import_error)
            elif entry.frontend == "jax":
                from solar_lsp.pipeline.analyze_jax import analyze_jax_entry
                analyze_jax_entry(er, module, entry, path, chips, config)
            else:
                analyze_entry(er, module, entry, path, chips, config)
        except Exception as exc:  # a bug of ours must cost this entry only, and say so
            import traceback
            where = traceback.extract_tb(exc.__traceback__)[-1]
            _fail(er, RuntimeError(f"internal error in solar-lsp ({type(exc).__name__}: {exc} at "
                                   f"{os.path.basename(where.filename)}:{where.lineno}); please report it"))
        report.entries.append(er)
    return report


def _fail(er: EntryReport, exc: Exception) -> None:
    er.status = "error"
    er.error = str(exc)
    er.error_line = getattr(exc, "line", None)
    er.verification = {"status": "unverified", "detail": f"not analyzed: {exc}"}


def analyze_entry(er: EntryReport, module, entry: Entry, path: str, chips: list[Chip], config: Config) -> None:
    from solar_lsp.frontend.errors import EntryError
    from solar_lsp.frontend.torch.lower import lower
    from solar_lsp.frontend.torch.trace import trace
    t = time.perf_counter()
    try:
        traced = trace(module, entry, path)
    except EntryError as exc:
        _fail(er, exc)
        from solar_lsp.llm.integrate import after_trace_failure
        after_trace_failure(er, module, entry, path, chips, config, exc)
        return
    er.inputs = [{"name": s.name, "dtype": s.dtype, "shape": list(s.shape)} for s in traced.input_specs]
    er.timings["trace_s"] = time.perf_counter() - t
    t = time.perf_counter()
    lowered = lower(traced)
    program = lowered.program
    er.unsupported = [{"op": u.op, "line": u.line, "reason": u.reason} for u in lowered.unsupported]
    er.timings["lower_s"] = time.perf_counter() - t
    if lowered.unsupported:  # the LLM agent may fill these in (opt-in; docs/llm.md)
        from solar_lsp.llm.integrate import after_lowering
        after_lowering(er, traced, lowered, module, config)
    t = time.perf_counter()
    graph = build_graph(program)
    er.graph = {"nodes": graph.number_of_nodes(), "edges": graph.number_of_edges(),
                "ops": len(program.ops), "kernels": sum(len(o.kernels) for o in program.ops),
                "aten_nodes": sum(1 for n in traced.exported.graph.nodes if n.op == "call_function")}
    costs = op_costs(program, graph, config.policy)
    fill_sol(er, program, costs, chips, config)
    if er.llm:
        from solar_lsp.llm.integrate import mark_sources
        mark_sources(er, program)
    er.timings["sol_s"] = time.perf_counter() - t
    er.program = program  # type: ignore[attr-defined]  # kept for `solar ir` / `solar graph`
    er.einsum_graph = graph  # type: ignore[attr-defined]
    if config.verify and config.on_bounds is not None:
        er.verification = {"status": "unverified", "detail": "verifying"}
        config.on_bounds(er)
    if config.verify:
        from solar_lsp.verify.check_torch import verify
        v = verify(traced, lowered, module, config.budget_bytes)
        er.verification = v.to_json()
        er.timings["verify_s"] = v.seconds
    else:
        er.verification = {"status": "unverified", "detail": "verification was turned off (--no-verify)"}


def fill_sol(er: EntryReport, program, costs, chips: list[Chip], config: Config) -> None:
    chip = chips[0]
    total = Counts()
    lines: dict[int | None, LineReport] = {}
    for c in costs:
        total = total + c.counts
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
                               t_compute_s=max(c.work.times(chip).values(), default=0.0)))
    er.lines = sorted(lines.values(), key=lambda ln: (ln.line is None, ln.line or 0))
    by_hw = {}
    for ch in chips:
        u = unfused(costs, ch)
        f = fused(costs, program, ch)
        by_hw[ch.name] = {"t_unfused_s": u.t_s, "t_fused_s": f.t_s, "t_cache_aware_s": None,
                          "bound": f.bound, "bound_unfused": u.bound,
                          "unit_times_fused_s": f.unit_times}
    u0 = unfused(costs, chip)
    f0 = fused(costs, program, chip)
    er.totals = {"macs": total.macs, "flops": total.flops, "tensor_flops": total.tensor_flops,
                 "vector_flops": total.vector_flops, "transcendentals": total.transcendentals,
                 "sfu_ops": total.sfu_ops, "bytes_unfused": u0.bytes, "bytes_fused": f0.bytes,
                 "bytes_cache_aware": None, "t_unfused_s": u0.t_s, "t_fused_s": f0.t_s,
                 "t_cache_aware_s": None, "bound": f0.bound, "bound_unfused": u0.bound,
                 "hardware": chip.name}
    er.by_hardware = by_hw
    if config.target_s:
        work = total_work(costs)
        er.inverse = {"target_s": config.target_s, "by_fidelity": {
            "unfused": inverse(work, total.flops, u0.bytes, config.target_s, _all_chips(chips)),
            "fused": inverse(work, total.flops, f0.bytes, config.target_s, _all_chips(chips)),
            "cache_aware": None,
        }}
    from solar_lsp.pipeline.fidelity import fill_multi_fidelity
    fill_multi_fidelity(er, program, costs, chips, config, _all_chips)


def _all_chips(chips: list[Chip]) -> list[Chip]:
    """Shortfall is reported against every bundled chip plus any the user named."""
    from solar_lsp.hardware.chips import list_chips, load_chip
    seen = {c.name for c in chips}
    out = list(chips)
    for name in list_chips():
        if name not in seen:
            out.append(load_chip(name))
    return out


def relpath(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path
