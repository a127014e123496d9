"""The pipeline for one file: discover → trace → lower → graph → SOL → verify
(docs/architecture.md, "Data flow").

Each stage is a pure function of its input plus the config; this module only wires them and
turns failures into messages on the entry they belong to.
"""

from __future__ import annotations

import os
import re
import time
import traceback
import types

from solar_lsp.frontend.errors import EntryError
from solar_lsp.hardware.chips import Chip, load_chips
from solar_lsp.pipeline.config import Config
from solar_lsp.pipeline.report import EntryReport, FileReport
from solar_lsp.pipeline.tail import bound_and_verify, fail
from solar_lsp.pipeline.train import finish_train_program, optimizer_verdict
from solar_lsp.source.discover import DiscoveryError, Entry, discover
from solar_lsp.source.reading import SourceError, read_source

__all__ = ["Config", "analyze_entry", "analyze_file"]


def analyze_file(path: str, config: Config | None = None, chips: list[Chip] | None = None) -> FileReport:
    """Analyze every entry of ``path`` (or ``config.entry`` only) on ``config.hw``."""
    config = config or Config()
    chips = chips if chips is not None else load_chips(config.hw)
    report = FileReport(file=path, hardware=[c.name for c in chips])
    t0 = time.perf_counter()
    try:
        source = read_source(path)
    except SourceError as exc:
        report.error = str(exc)
        return report
    try:
        entries = _entries(source, path, config)
    except DiscoveryError as exc:
        report.error = str(exc)
        return report
    if not entries:
        return report
    t_discover = time.perf_counter() - t0
    t1 = time.perf_counter()
    module, import_error = _load(path, entries)
    if module is not None and config.symbols:  # globals marked as symbols, at their dims' sizes
        from solar_lsp.pipeline.symbolic import set_globals  # imports sympy
        try:
            set_globals(module, config.symbols, config.dims)
        except ValueError as exc:
            report.error = str(exc)
            return report
    t_import = time.perf_counter() - t1
    for entry in entries:
        er = EntryReport(name=entry.name, line=entry.line, frontend=entry.frontend)
        er.timings = {"discover_s": t_discover, "import_s": t_import}
        er.notes += ignored_dims(entry, config.dims)
        if import_error is not None:
            fail(er, import_error)
        else:
            _guarded(er, module, entry, path, chips, config)
        report.entries.append(er)
    return report


def ignored_dims(entry: Entry, dims: dict) -> list[dict]:
    """Notes for the ``--dim`` values this entry's pragma overrides (its own definition wins)."""
    if not entry.pragma or not dims:
        return []
    notes = []
    for item in _pragma_items(entry.pragma):
        name, eq, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if eq and name in dims and not re.match(r"^\w+\s*\[", value):
            notes.append({"line": entry.pragma_line, "kind": "dim", "note": (
                f"--dim {name}={dims[name]} is ignored for {entry.name}: its pragma defines "
                f"{name}={value}, and a pragma's own definition wins")})
    return notes


def _pragma_items(text: str) -> list[str]:
    """The pragma's ``name=value`` items, split at the commas outside brackets."""
    text = re.sub(r"^\s*#?\s*solar:\s*", "", text)
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += 1 if ch in "[(" else -1 if ch in "])" else 0
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    return items + [cur]


def _entries(source: str, path: str, config: Config) -> list[Entry]:
    entries = discover(source, path, {"dims": config.dims, "entries": config.entries})
    if config.entry:
        entries = [e for e in entries if e.name == config.entry]
        if not entries:
            raise DiscoveryError(f"no entry named {config.entry!r} in {path}")
    return entries


def _load(path: str, entries: list[Entry]) -> tuple[types.ModuleType | None, EntryError | None]:
    # the torch frontend imports torch: only when a torch entry needs it (a JAX file does not)
    from solar_lsp.frontend.torch.trace import load_module, warm_up
    if any(e.frontend == "torch" for e in entries):  # the tracer's tables: torch entries only
        warm_up()
    try:
        return load_module(path), None
    except EntryError as exc:
        return None, exc


def _guarded(er: EntryReport, module, entry: Entry, path: str, chips: list[Chip], config: Config) -> None:
    try:
        if entry.frontend != "jax" and config.mode == "train" and config.params is not None:
            fail(er, EntryError("trace", "--params names the trained arguments of a JAX function; "
                                f"{entry.name} is PyTorch code, which trains its module's "
                                "parameters (docs/training.md)"))
        elif entry.frontend == "jax":
            from solar_lsp.pipeline.analyze_jax import analyze_jax_entry  # imports jax
            analyze_jax_entry(er, module, entry, path, chips, config)
        else:
            analyze_entry(er, module, entry, path, chips, config)
    except Exception as exc:  # a bug of ours must cost this entry only, and say so
        where = traceback.extract_tb(exc.__traceback__)[-1]
        fail(er, RuntimeError(f"internal error in solar-lsp ({type(exc).__name__}: {exc} at "
                              f"{os.path.basename(where.filename)}:{where.lineno}); please report it"))


def analyze_entry(er: EntryReport, module, entry: Entry, path: str, chips: list[Chip], config: Config) -> None:
    """One torch entry: trace, lower (the agent fills unlowered ops when opted in), the tail."""
    from solar_lsp.frontend.torch.lower import lower
    from solar_lsp.frontend.torch.trace import trace
    from solar_lsp.frontend.torch.train import trace_train
    t = time.perf_counter()
    train = config.mode == "train"
    er.mode = config.mode
    try:
        traced = trace_train(module, entry, path, config.loss) if train else trace(module, entry, path)
        er.notes += getattr(traced, "notes", [])
    except EntryError as exc:
        fail(er, exc)
        if not train:  # the agent translates a forward, never a training step
            _whole_entry_by_agent(er, module, entry, path, chips, config, exc)
        return
    er.inputs = [{"name": s.name, "dtype": s.dtype, "shape": list(s.shape)} for s in traced.input_specs]
    er.timings["trace_s"] = time.perf_counter() - t
    t = time.perf_counter()
    lowered = lower(traced)
    er.unsupported = [{"op": u.op, "line": u.line, "reason": u.reason} for u in lowered.unsupported]
    er.timings["lower_s"] = time.perf_counter() - t
    if lowered.unsupported:  # the LLM agent may fill these in (opt-in; docs/llm.md)
        _nodes_by_agent(er, traced, lowered, module, config)
    if train:
        _optimizer_step(er, traced, lowered, config)

    def verify() -> tuple[dict, float]:  # at a reduced size when the full one is too large
        from solar_lsp.pipeline.reduced_verify import verify_torch
        v, seconds = verify_torch(module, entry, path, traced, lowered, config)
        t = time.perf_counter()
        optimizer_verdict(v, lowered.program, config)  # the update's IR against torch.optim
        return v, seconds + time.perf_counter() - t

    aten = sum(1 for n in traced.exported.graph.nodes if n.op == "call_function")
    bound_and_verify(er, lowered.program, chips, config, config.policy, {"aten_nodes": aten}, verify)


def _optimizer_step(er: EntryReport, traced, lowered, config: Config) -> None:
    """Append the optimizer update of every trainable parameter to the training step's
    program (docs/training.md); its own time counts as lowering time."""
    from solar_lsp.frontend.torch.train import grad_tensors
    t = time.perf_counter()
    try:
        grads = grad_tensors(traced, lowered)
    except EntryError as exc:
        er.notes.append({"line": None, "kind": "train", "note": f"no optimizer update: {exc}"})
        return
    finish_train_program(lowered.program, grads, config)
    er.timings["lower_s"] += time.perf_counter() - t


def _nodes_by_agent(er: EntryReport, traced, lowered, module, config: Config) -> None:
    from solar_lsp.llm import integrate as agent  # the SDK, only for entries that need it
    t0 = time.perf_counter()
    result = agent.after_lowering(traced, lowered, module, config)
    if result is None:
        return
    er.llm = result.summary
    filled = list(result.filled)
    keep = []
    for u in er.unsupported:
        if (u.get("op"), u.get("line")) in filled:
            filled.remove((u.get("op"), u.get("line")))
        else:
            keep.append(u)
    er.unsupported = keep
    if result.asked:
        er.timings["llm_s"] = time.perf_counter() - t0


def _whole_entry_by_agent(er: EntryReport, module, entry: Entry, path: str, chips: list[Chip],
                          config: Config, exc: EntryError) -> None:
    from solar_lsp.llm import integrate as agent  # the SDK, only for entries that need it
    t0 = time.perf_counter()
    result = agent.after_trace_failure(module, entry, path, config, exc)
    if result is None:
        return
    if result.program is not None:
        program = result.program
        er.status, er.error, er.error_line = "ok", None, None
        er.inputs = [{"name": n, "dtype": program.tensors[n].dtype,
                      "shape": list(program.tensors[n].shape)} for n in program.inputs]
        bound_and_verify(er, program, chips, config, config.policy, {"aten_nodes": None}, None)
        er.verification = result.verification
        if result.eager_flops is not None and er.totals.get("tensor_flops", 0) > result.eager_flops > 0:
            er.notes.append({"line": None, "kind": "llm", "note": (
                f"the agent's IR counts {er.totals['tensor_flops']:,} matrix FLOPs; torch's "
                f"FlopCounterMode saw {result.eager_flops:,} in the eager run (numpy work is "
                "invisible to it)")})
    er.llm = result.summary
    if result.asked:
        er.timings["llm_s"] = time.perf_counter() - t0
