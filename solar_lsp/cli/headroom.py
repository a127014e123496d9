"""``solar headroom``: the command-line face of :mod:`solar_lsp.measure.headroom`."""

from __future__ import annotations

import json
import os

from rich.console import Console
from rich.table import Table

from solar_lsp import units
from solar_lsp.cli.args import llm_config, parse_dims


def headroom_command(args, out: Console, err: Console) -> int:
    """Measure each entry and print (or dump as JSON) its ratios to the three bounds."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # the profiler's start/stop chatter
    from solar_lsp.hardware.chips import HardwareError
    from solar_lsp.measure.headroom import HeadroomError, headroom_file
    from solar_lsp.pipeline.config import Config
    if not os.path.isfile(args.file):
        err.print(f"[red]error:[/red] cannot read {args.file}: no such file")
        return 2
    try:
        dims = parse_dims(args.dim)
        llm = llm_config(args)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
    try:
        with err.status(f"measuring on {args.device}…"):
            report = headroom_file(args.file, args.device, args.hw, args.entry, args.compile, Config(dims=dims, llm=llm))
    except (HeadroomError, HardwareError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
    if report.error:
        err.print(f"[red]error:[/red] {report.error}")
        return 2
    if args.json:
        print(json.dumps(report.to_json(), indent=1, default=str))
    else:
        render(report, out)
    ok = all(e.status == "ok" and e.headroom and "error" not in e.headroom for e in report.entries)
    return 0 if ok else 1


def render(report, console: Console) -> None:
    """Measured time, ratio per fidelity, the widest-gap lines and the diagnosis per entry."""
    for e in report.entries:
        head = f"[bold]{e.name}[/bold] (line {e.line})"
        if e.status != "ok":
            console.print(f"{head}: [red]error[/red]: {e.error}")
            continue
        h = e.headroom or {}
        if "error" in h:
            where = f" (line {h['line']})" if h.get("line") else ""
            console.print(f"{head}: [red]cannot measure{where}[/red]: {h['error']}")
            continue
        tot = e.totals
        console.print(f"{head} on {h['device']} vs {h['chip']}: measured [bold]{units.seconds(h['measured_s'])}"
                      f"[/bold] ({h['runs']} runs, caches flushed)"
                      + (f" · torch.compile {units.seconds(h['compiled_s'])}" if h.get("compiled_s") else ""))
        t = Table(title_justify="left")
        for col in ("fidelity", "bound", "measured / bound"):
            t.add_column(col, justify="left" if col == "fidelity" else "right")
        for fid, key in (("unfused", "t_unfused_s"), ("fused", "t_fused_s"), ("cache-aware", "t_cache_aware_s")):
            r = h["ratios"].get(fid.replace("-", "_"))
            t.add_row(fid, units.seconds(tot.get(key)), f"{r:.1f}×" if r else "—")
        console.print(t)
        if h["top_lines"]:
            lt = Table(title="lines with the largest gap", title_justify="left")
            for col in ("line", "measured", "SOL (unfused)", "ratio"):
                lt.add_column(col, justify="right")
            for g in h["top_lines"]:
                lt.add_row(str(g["line"]), units.seconds(g["measured_s"]), units.seconds(g["t_sol_s"]),
                           f"{g['ratio']:.1f}×" if g["ratio"] != float("inf") else "—")
            console.print(lt)
        console.print(f"  diagnosis: [bold]{h['diagnosis']}[/bold]")
        for r in h["reasons"]:
            console.print(f"   · {r}")
        for w in h.get("warnings", []):
            console.print(f"  [yellow]warning[/yellow]: {w}")
