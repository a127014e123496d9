"""``solar compare``: the three SOL fidelities of each entry on several chips, side by side,
with the bound and the fusion benefit (unfused / fused) per chip."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from solar_lsp import units
from solar_lsp.pipeline.report import FileReport

COLUMNS = ("chip", "unfused", "fused", "cache-aware", "bound", "on-chip", "fusion benefit",
           "cache-aware / fused")


def rows(entry) -> list[dict]:
    """One row per chip of an analyzed entry (the JSON of ``solar compare --json``)."""
    out = []
    for name, h in entry.by_hardware.items():
        tu, tf, tc = h["t_unfused_s"], h["t_fused_s"], h.get("t_cache_aware_s")
        out.append({"chip": name, "t_unfused_s": tu, "t_fused_s": tf, "t_cache_aware_s": tc,
                    "bound": h.get("bound_cache_aware") or h["bound"],
                    "onchip_bytes": h.get("onchip_bytes"),
                    "fusion_benefit": tu / tf if tf else None,
                    "cache_over_fused": tc / tf if tc is not None and tf else None})
    return out


def to_json(report: FileReport) -> dict:
    """Every entry\'s rows (``solar compare --json``)."""
    return {"file": report.file, "hardware": report.hardware,
            "entries": [{"name": e.name, "line": e.line, "status": e.status, "error": e.error,
                         "chips": rows(e) if e.status == "ok" else []} for e in report.entries]}


def render(report: FileReport, console: Console) -> None:
    """One table per entry: a row per chip."""
    for e in report.entries:
        head = f"[bold]{e.name}[/bold] (line {e.line})"
        if e.status != "ok":
            console.print(f"{head}: [red]error[/red]: {e.error}")
            continue
        t = Table(title=f"{head}: SOL per chip", title_justify="left")
        for col in COLUMNS:
            t.add_column(col, justify="left" if col in ("chip", "bound") else "right")
        for r in rows(e):
            t.add_row(r["chip"], units.seconds(r["t_unfused_s"]), units.seconds(r["t_fused_s"]),
                      units.seconds(r["t_cache_aware_s"]), r["bound"],
                      units.nbytes(r["onchip_bytes"]) if r["onchip_bytes"] else "—",
                      f"{r['fusion_benefit']:.2f}×" if r["fusion_benefit"] else "—",
                      f"{r['cache_over_fused']:.2f}×" if r["cache_over_fused"] else "—")
        console.print(t)
        tot = e.totals
        console.print(f"  {units.flops(tot['flops'])} · DRAM unfused {units.nbytes(tot['bytes_unfused'])}"
                      f" · fused {units.nbytes(tot['bytes_fused'])}")


def compare_command(report, args, out: Console) -> int:
    """``solar compare``: the table, or its rows as JSON."""
    if args.json:
        print(json.dumps(to_json(report), indent=1, default=str))
    else:
        render(report, out)
    return 0 if report.ok else 1
