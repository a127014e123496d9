"""Symbolic costs of analyzed entries (docs/sol-model.md, "Symbolic costs"): the entry is
analyzed again at small sizes of its pragma's symbols (no verification), the counts are fitted
exactly (``symbolic.fit_counts``), and the SOL times are built from the fitted work and bytes.

``add_symbolic`` fills ``EntryReport.symbolic`` and ``LineReport.symbolic`` (JSON, formulas as
sympy text) and keeps the fit on the report (``er.symbolic_fit``) for ``solar plot --sweep``.
"""

from __future__ import annotations

import ast
import copy
import re
import time
from collections.abc import Callable

import sympy

from solar_lsp.bounds.sol import Policy, boundary_bytes, op_costs, unit_peak
from solar_lsp.hardware.chips import Chip
from solar_lsp.ir.core import Op, Program
from solar_lsp.pipeline.analyze import analyze_file
from solar_lsp.pipeline.config import Config
from solar_lsp.pipeline.report import EntryReport, FileReport
from solar_lsp.pipeline.symbolic import (
    MAX_ANALYSES,
    MAX_DEGREE,
    Fit,
    fit_counts,
    fmt_sizes,
    global_values,
    symbol,
)
from solar_lsp.source.discover import DiscoveryError, Entry, discover
from solar_lsp.source.pragma import parse_pragma
from solar_lsp.source.reading import SourceError, read_source

QUANTITIES = ("tensor_flops", "vector_flops", "transcendentals", "bytes_unfused", "bytes_fused")
_TENSOR = re.compile(r"^([A-Za-z_][\w.]*)\s*\[(.*)\]$", re.DOTALL)
_SCALAR = re.compile(r"^(int|float|bool)\s*:(.*)$", re.DOTALL)
_PREFIX = re.compile(r"^\s*#?\s*solar\s*:", re.ASCII)


def pragma_items(text: str) -> list[tuple[str, str]]:
    """The ``(name, value)`` items of a pragma, split at the commas outside brackets and strings."""
    text = _PREFIX.sub("", text, count=1)
    items, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        cur += ch
    out = []
    for item in items + [cur]:
        name, eq, value = item.partition("=")
        if eq and name.strip().isidentifier():
            out.append((name.strip(), value.strip()))
    return out


def _names(src: str) -> set[str]:
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _is_dim(name: str, value: str) -> bool:
    return name != "init" and not _SCALAR.match(value) and not _TENSOR.match(value)


def pragma_symbols(pragma: str | None, dims: dict[str, int]) -> dict[str, int]:
    """The shape symbols of a pragma and their values: dims it defines by a number (``S=512``)
    that something in it uses, and config dims (``--dim``) it uses without defining them."""
    if not pragma:
        return {}
    items = pragma_items(pragma)
    used: set[str] = set()
    for _name, value in items:
        tm = _TENSOR.match(value)
        sm = _SCALAR.match(value)
        used |= _names(f"({tm.group(2)},)") if tm else _names(sm.group(2)) if sm else _names(value)
    defined = {name for name, value in items if _is_dim(name, value)}
    out: dict[str, int] = {}
    for name, value in items:
        if _is_dim(name, value) and name in used and not _names(value):
            try:
                out[name] = int(parse_pragma(f"_v=int:{value}")[0][0].scalar)
            except DiscoveryError:
                continue
    for name in sorted(used - defined):
        if name in dims:
            out[name] = dims[name]
    return out


def rewrite_pragma(pragma: str, sizes: dict[str, int]) -> str:
    """The pragma with its numeric definitions of ``sizes``'s symbols set to those sizes."""
    return ", ".join(f"{n}={sizes[n]}" if n in sizes and _is_dim(n, v) and not _names(v) else f"{n}={v}"
                     for n, v in pragma_items(pragma))


def line_fused_bytes(p: Program, ops: list[Op]) -> int:
    """DRAM bytes of ``ops`` run as one kernel: what they read from outside and what leaves
    them (read after them or returned), each once (``boundary_bytes`` of that sub-program)."""
    ids = {o.id for o in ops}
    made = {p.base(t) for o in ops for t in o.outputs}
    read_outside = {p.base(t) for o in p.ops if o.id not in ids and o.kind != "view" for t in o.inputs}
    sub = copy.copy(p)
    sub.ops = list(ops)
    sub.inputs = sorted({p.base(t) for o in ops if o.kind != "view" for t in o.inputs} - made)
    sub.params = []
    sub.outputs = sorted(t for t in made if t in read_outside or t in {p.base(x) for x in p.outputs})
    return boundary_bytes(sub)


def counts_of(er: EntryReport, policy: Policy) -> dict:
    """Every integer the formulas are fitted to: the entry's totals, each line's counts and
    each op's work per (unit, dtype) and bytes (for the times)."""
    out: dict = {("entry", q): int(er.totals[q]) for q in QUANTITIES}
    program = er.program  # type: ignore[attr-defined]
    by_line: dict[int | None, list[Op]] = {}
    for c in op_costs(program, er.einsum_graph, policy):  # type: ignore[attr-defined]
        if c.op.kind in ("view", "alloc"):
            continue
        ln = c.op.line
        for q, v in (("tensor_flops", c.counts.tensor_flops), ("vector_flops", c.counts.vector_flops),
                     ("transcendentals", c.counts.transcendentals), ("bytes_unfused", c.bytes)):
            out[("line", ln, q)] = out.get(("line", ln, q), 0) + int(v)
        out[("op", c.op.id, "bytes")] = int(c.bytes)
        for (unit, dtype), w in c.work.work.items():
            out[("op", c.op.id, unit, dtype)] = int(round(w))
        by_line.setdefault(ln, []).append(c.op)
    for ln, ops in by_line.items():
        out[("line", ln, "bytes_fused")] = line_fused_bytes(program, ops)
    return out


def evaluator(path: str, entry: Entry, config: Config, chips: list[Chip]
              ) -> Callable[[dict[str, int]], EntryReport]:
    """Analyze ``entry`` again at other sizes of its symbols (no verification, no agent)."""
    def analyze(sizes: dict[str, int]) -> EntryReport:
        entries = dict(config.entries)
        if entry.pragma:  # a Model without one keeps get_inputs (its globals are set from dims)
            entries = {k: v for k, v in entries.items() if k.rsplit("::", 1)[-1] != entry.name}
            entries[entry.name] = rewrite_pragma(entry.pragma, sizes)
        cfg = Config(hw=list(config.hw), entry=entry.name, policy=config.policy, verify=False,
                     budget_bytes=config.budget_bytes, dims={**config.dims, **sizes},
                     entries=entries, onchip=config.onchip, mode=config.mode,
                     optimizer=config.optimizer, loss=config.loss,  # a training step's formulas too
                     symbols=dict(config.symbols))  # globals of get_inputs set from the dims
        rep = analyze_file(path, cfg, chips)
        if rep.error or not rep.entries:
            raise RuntimeError(rep.error or f"no entry {entry.name}")
        er = rep.entries[0]
        if er.status != "ok":
            raise RuntimeError(er.error)
        return er
    return analyze


def time_exprs(fit: Fit, ops: list[Op], chip: Chip) -> dict:
    """SOL times on ``chip`` as formulas: unfused (Σ_op max(work_u/peak_u, bytes/β)), fused
    (max(Σ work_u/peak_u, boundary bytes/β)) and its two terms, and each line's unfused time.
    None where a formula it needs is missing."""
    beta = sympy.Float(chip.dram_bytes_per_s)
    per_unit: dict[str, sympy.Expr] = {}
    total: sympy.Expr | None = sympy.Integer(0)
    lines: dict = {}
    for op in ops:
        keys = [k for k in fit.exprs if k[0] == "op" and k[1] == op.id]
        if not keys:
            continue
        if any(fit.exprs[k] is None for k in keys):
            total = None
            lines[op.line] = None
            continue
        units: dict[str, sympy.Expr] = {}
        for k in keys:
            if len(k) == 4:
                peak = unit_peak(chip, k[2], k[3])[0]
                units[k[2]] = units.get(k[2], 0) + (fit.exprs[k] / sympy.Float(peak) if peak != float("inf") else 0)
        for u, e in units.items():
            per_unit[u] = per_unit.get(u, 0) + e
        t = sympy.Max(*units.values(), fit.exprs[("op", op.id, "bytes")] / beta)
        total = None if total is None else total + t
        if lines.get(op.line, 0) is not None:
            lines[op.line] = lines.get(op.line, 0) + t
    fb = fit.exprs.get(("entry", "bytes_fused"))
    compute = sympy.Max(*per_unit.values()) if per_unit else sympy.Integer(0)
    memory = None if fb is None else fb / beta
    fused = None if memory is None or total is None else sympy.Max(compute, memory)
    return {"t_unfused_s": total, "t_fused_s": fused, "compute_s": compute if total is not None else None,
            "memory_s": memory, "lines": lines}


def _text(e) -> str | None:
    return None if e is None else str(e)


def _entry_json(er: EntryReport, fit: Fit, values: dict[str, int], chips: list[Chip], seconds: float) -> dict:
    ops = [o for o in er.program.ops if o.kind not in ("view", "alloc")]  # type: ignore[attr-defined]
    times = {c.name: time_exprs(fit, ops, c) for c in chips}
    first = times[chips[0].name]
    out = {q: _text(fit.exprs.get(("entry", q))) for q in QUANTITIES}
    out.update({"symbols": list(fit.symbols), "values": dict(values),
                "t_unfused_s": _text(first["t_unfused_s"]), "t_fused_s": _text(first["t_fused_s"]),
                "hardware": chips[0].name,
                "by_hardware": {n: {"t_unfused_s": _text(t["t_unfused_s"]), "t_fused_s": _text(t["t_fused_s"])}
                                for n, t in times.items()},
                "fit": {"analyses": fit.analyses, "seconds": seconds, "max_degree": MAX_DEGREE,
                        "grid": fit.grid(), "checked_at": fit.checked_at,
                        "steps": {n: a.step for n, a in fit.axes.items()},
                        "periods": {n: a.period for n, a in fit.axes.items()}},
                "not_fitted": [{"line": k[1] if k[0] == "line" else None, "quantity": k[-1], "why": w}
                               for k, w in fit.why.items() if k[0] in ("entry", "line")],
                "notes": list(fit.notes) + ([
                    "ops without a lowering are not counted: every formula is a lower bound, and the "
                    "time formulas do not raise the unfused time to the fused one as the totals do"]
                    if er.totals.get("incomplete") else [])})
    for ln in er.lines:
        ln.symbolic = {q: _text(fit.exprs.get(("line", ln.line, q))) for q in QUANTITIES}
        ln.symbolic["t_unfused_s"] = _text(first["lines"].get(ln.line))
    return out


def _check_at_values(er: EntryReport, fit: Fit, values: dict[str, int], policy: Policy) -> None:
    """The formulas at the pragma's own sizes against the analysis already made there."""
    subs = {symbol(n): v for n, v in values.items()}
    for key, want in counts_of(er, policy).items():
        e = fit.exprs.get(key)
        if e is not None and e.subs(subs) != want:
            fit.why[key] = (f"the formula gives {e.subs(subs)} at the pragma's sizes "
                            f"({fmt_sizes(values)}), the analysis counts {want}")
            fit.exprs[key] = None
    if dict(values) not in fit.checked_at:
        fit.checked_at.append(dict(values))


def entry_evaluator(path: str, name: str, config: Config, chips: list[Chip]
                    ) -> tuple[Entry | None, Callable[[dict[str, int]], EntryReport] | None]:
    """The entry ``name`` of ``path`` as discovered, and its re-analysis at other sizes."""
    try:
        found = discover(read_source(path), path, {"dims": config.dims, "entries": config.entries})
    except (SourceError, DiscoveryError):
        return None, None
    entry = next((e for e in found if e.name == name), None)
    return entry, (evaluator(path, entry, config, chips) if entry is not None else None)


def _fit_entry(er: EntryReport, entry: Entry | None, analyze, values: dict[str, int], config: Config,
               budget: int) -> Fit:
    if values and analyze is not None:
        return fit_counts(lambda sizes: counts_of(analyze(sizes), config.policy), list(values), budget)
    fit = fit_counts(lambda sizes: counts_of(er, config.policy), [], 1)
    fit.notes.append("no shape symbols: the formulas are the counts" + (
        " (a Model's get_inputs sizes are symbolic when their module globals are marked: "
        "--symbol batch_size, or [tool.solar] symbols)"
        if entry is not None and entry.kind == "model" else ""))
    return fit


def file_global_symbols(path: str, config: Config) -> dict[str, int]:
    """The symbols named by module globals (``config.symbols``) and their values in the file
    as analyzed (a ``--dim`` of the symbol's name sets it); ValueError naming a bad one."""
    if not config.symbols:
        return {}
    from solar_lsp.frontend.errors import EntryError
    from solar_lsp.frontend.torch.trace import load_module
    try:
        module = load_module(path)
    except EntryError as exc:
        raise ValueError(str(exc)) from None
    values = global_values(module, config.symbols)
    return {sym: int(config.dims.get(sym, v)) for sym, v in values.items()}


def add_symbolic(report: FileReport, path: str, config: Config, chips: list[Chip],
                 budget: int = MAX_ANALYSES, needs: str | None = None) -> None:
    """Formulas of every analyzed entry of ``report`` in its shape symbols (``er.symbolic``);
    with ``needs``, only of the entries that have that symbol. The module globals marked as
    symbols (``config.symbols``) are symbols of every entry; one the file lacks, or that is
    not an int, sets ``report.error`` naming it."""
    try:
        globals_ = file_global_symbols(path, config)
    except ValueError as exc:
        report.error = str(exc)
        return
    for er in report.entries:
        if er.status != "ok" or getattr(er, "program", None) is None:
            continue
        entry, analyze = entry_evaluator(path, er.name, config, chips)
        values = {**pragma_symbols(entry.pragma if entry else None, config.dims), **globals_}
        if needs is not None and needs not in values:
            continue
        t0 = time.perf_counter()
        fit = _fit_entry(er, entry, analyze, values, config, budget)
        _check_at_values(er, fit, values, config.policy)
        er.symbolic = _entry_json(er, fit, values, chips, time.perf_counter() - t0)
        er.symbolic_fit = fit  # type: ignore[attr-defined]  # for `solar plot --sweep`
