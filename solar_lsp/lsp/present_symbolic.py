"""What the editor shows of symbolic costs (docs/editors.md, "Symbolic costs"): the formulas
of a line and of an entry under the numbers, and the "SOL at S=…" lens and its report. Pure
functions of the engine's JSON (``symbolic`` of an entry and of its lines, docs/sol-model.md
"Symbolic costs") and of a ``sol_at`` worker reply; no sympy here."""

from __future__ import annotations

import re

from solar_lsp import units
from solar_lsp.lsp.sizes import fmt_sizes, pragma_dims

_SUP = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
COUNTS = (("tensor_flops", "tensor FLOPs", units.flops), ("vector_flops", "vector FLOPs", units.flops),
          ("transcendentals", "transcendentals", lambda n: f"{n:,.0f}"),
          ("bytes_unfused", "bytes unfused", units.nbytes), ("bytes_fused", "bytes fused", units.nbytes))


def pretty(formula: str | None) -> str:
    """``4*B*S*D**2 + 2*B*S`` → ``4·B·S·D² + 2·B·S``; ``—`` when there is no formula."""
    if formula is None:
        return "—"
    text = re.sub(r"\*\*(\d+)", lambda m: m.group(1).translate(_SUP), formula)
    return text.replace("*", "·")


def line_formulas(line: dict) -> list[str]:
    """The line's counts as formulas, for its hover (empty without ``symbolic``)."""
    sym = line.get("symbolic") or {}
    if not sym:
        return []
    parts = [f"{label} = {pretty(sym.get(key))}" for key, label, _ in COUNTS
             if sym.get(key) not in (None, "0")]
    return ["", "formulas: " + " · ".join(parts)] if parts else []


def entry_formulas(entry: dict) -> list[str]:
    """The entry's counts as formulas of its shape symbols, each with its value at the
    pragma's sizes, and what could not be fitted (empty without ``symbolic``)."""
    sym = entry.get("symbolic") or {}
    names = sym.get("symbols") or []
    if not sym or not names:
        return []
    tot = entry.get("totals") or {}
    at = fmt_sizes(sym.get("values") or {})
    fit = sym.get("fit") or {}
    out = ["", f"Formulas in {', '.join(names)} (fitted from {fit.get('analyses', '?')} analyses at small "
           "sizes, checked off the fit's grid):", "",
           f"| quantity | formula | at {at} |", "|---|---|---:|"]
    for key, label, fmt in COUNTS:
        value = tot.get(key)
        out.append(f"| {label} | `{pretty(sym.get(key))}` | {fmt(value) if value is not None else '—'} |")
    for nf in sym.get("not_fitted") or []:
        if nf.get("line") is None:
            out.append(f"- no formula for {nf.get('quantity')}: {nf.get('why')}")
    out += [f"- {n}" for n in sym.get("notes") or []]
    return [*out, ""]


def symbols_of(entry: dict, pragma: str | None) -> dict[str, int]:
    """The entry's shape symbols and their values: from its formulas when fitted, else the
    numeric symbols its pragma defines."""
    sym = entry.get("symbolic") or {}
    if sym.get("symbols"):
        return {n: int((sym.get("values") or {}).get(n, 0)) for n in sym["symbols"]}
    return pragma_dims(pragma)


def sol_at_title(symbols: dict[str, int], chip: str, result: dict | None) -> str:
    """The "SOL at S=…" lens: before a size is chosen, the symbols to pick; after, the three
    fidelities at the chosen sizes."""
    if not result:
        return "SOL at " + ", ".join(f"{n}=…" for n in symbols) + " (pick sizes)"
    f = result.get("formulas_at") or {}
    a = (result.get("analysis_at") or {}).get("totals") or {}
    chosen = result.get("asked") or f.get("sizes") or {}
    cache = units.seconds(a.get("t_cache_aware_s")) if a else "—"
    return (f"SOL at {fmt_sizes(chosen)} ({chip}): unfused {units.seconds(f.get('t_unfused_s'))} · fused "
            f"{units.seconds(f.get('t_fused_s'))} ({f.get('bound', '?')}-bound) · cache-aware {cache}")


def sol_at_markdown(name: str, chip: str, result: dict) -> str:
    """The report of a "SOL at S=…" evaluation: the formulas evaluated at the sizes (the
    fused time as the max of its compute and memory terms) beside the entry analyzed there."""
    sym = result.get("symbolic") or {}
    f = result.get("formulas_at") or {}
    a = result.get("analysis_at") or {}
    tot = a.get("totals") or {}
    sizes = fmt_sizes(f.get("sizes") or {})
    out = [f"# SOL of {name} at {sizes} on {chip}", ""]
    if not f:
        out += [f"Formulas in {', '.join(sym.get('symbols') or []) or 'no symbols'}; pass sizes to "
                "evaluate them (`solar.solAt [uri, entry, \"S=4096\"]`).", ""]
    else:
        out += ["| fidelity | from the formulas | analyzed at these sizes |", "|---|---:|---:|",
                f"| unfused (Σ per-op max) | {units.seconds(f.get('t_unfused_s'))} | {units.seconds(tot.get('t_unfused_s'))} |",
                f"| fused = max(compute, memory) | {units.seconds(f.get('t_fused_s'))} | {units.seconds(tot.get('t_fused_s'))} |",
                f"| — compute term | {units.seconds(f.get('compute_s'))} | |",
                f"| — memory term | {units.seconds(f.get('memory_s'))} | |",
                f"| cache-aware | no formula (an ILP per size) | {units.seconds(tot.get('t_cache_aware_s'))} |", "",
                f"The fused bound is **{f.get('bound', '?')}-bound** at these sizes."]
        if a.get("error"):
            out.append(f"The analysis at these sizes failed: {a['error']}")
        out += ["", "| quantity | formula | value |", "|---|---|---:|"]
        for key, label, fmt in COUNTS:
            v = f.get(key)
            out.append(f"| {label} | `{pretty(sym.get(key))}` | {fmt(v) if v is not None else '—'} |")
    out += ["", f"`t_unfused_s` = `{sym.get('t_unfused_s')}`", "", f"`t_fused_s` = `{sym.get('t_fused_s')}`"]
    return "\n".join(out)
