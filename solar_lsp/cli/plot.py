"""``solar plot``: the roofline plot of an analyzed file, written to PNG, SVG or PDF; with
``--sweep S=LO..HI``, the SOL times against a shape symbol instead."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape


def plot_command(report, args, chips, cfg, out: Console, err: Console) -> int:
    """Write the roofline of ``report`` to ``args.output``; 2 for a bad or unwritable path."""
    from solar_lsp.pipeline.plot import roofline  # matplotlib, only for this command
    if not args.output.lower().endswith((".png", ".svg", ".pdf")):
        err.print(f"[red]error:[/red] -o must end in .png, .svg or .pdf: {args.output}")
        return 2
    if getattr(args, "sweep", None):
        return _sweep_command(report, args, chips, cfg, out, err)
    try:
        roofline(report, chips, args.output, cfg.policy)
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write {args.output}: {exc.strerror or exc}")
        return 2
    out.print(f"wrote {args.output}")
    return 0 if report.ok else 1


def _sweep_command(report, args, chips, cfg, out: Console, err: Console) -> int:
    """``--sweep``: fit the formulas of the entries with the symbol, evaluate, draw."""
    from solar_lsp.cli.args import parse_sweep
    from solar_lsp.pipeline.plot import sweep_figure
    from solar_lsp.pipeline.sweep import sweep
    from solar_lsp.pipeline.symbolic_costs import add_symbolic, entry_evaluator
    try:
        name, lo, hi = parse_sweep(args.sweep)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
    add_symbolic(report, args.file, cfg, chips, needs=name)
    sweeps = []
    for er in report.entries:
        if getattr(er, "symbolic_fit", None) is None:
            continue
        try:
            sweeps.append(sweep(er, name, lo, hi, chips[0], entry_evaluator(args.file, er.name, cfg, chips)[1]))
        except ValueError as exc:
            err.print(f"[yellow]warning:[/yellow] {escape(str(exc))}", highlight=False)
    if not sweeps:
        err.print(f"[red]error:[/red] no analyzed entry of {args.file} has the shape symbol {name} "
                  "in its pragma (`# solar: S=512, x=f32[S, 64]`), nor a module global marked as "
                  f"{name} (`--symbol batch_size={name}`, `[tool.solar] symbols`)", highlight=False)
        return 1
    try:
        sweep_figure(sweeps, args.output, f"SOL time against {name}: {args.file}")
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write {args.output}: {exc.strerror or exc}")
        return 2
    out.print(f"wrote {args.output}")
    for sw in sweeps:
        for c in sw.crossovers:
            out.print(f"{sw.entry}: fused time turns {c['to']}-bound at {name}={c['x']} on {sw.chip}",
                      highlight=False)
        for note in sw.notes:
            out.print(f"{sw.entry}: note: {escape(note)}", highlight=False)
    return 0 if report.ok else 1
