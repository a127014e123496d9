"""``solar plot``: the roofline plot of an analyzed file, written to PNG, SVG or PDF."""

from __future__ import annotations

from rich.console import Console


def plot_command(report, args, chips, cfg, out: Console, err: Console) -> int:
    """Write the roofline of ``report`` to ``args.output``; 2 for a bad or unwritable path."""
    from solar_lsp.pipeline.plot import roofline  # matplotlib, only for this command
    if not args.output.lower().endswith((".png", ".svg", ".pdf")):
        err.print(f"[red]error:[/red] -o must end in .png, .svg or .pdf: {args.output}")
        return 2
    try:
        roofline(report, chips, args.output, cfg.policy)
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write {args.output}: {exc.strerror or exc}")
        return 2
    out.print(f"wrote {args.output}")
    return 0 if report.ok else 1
