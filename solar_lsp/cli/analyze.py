"""``solar analyze`` and the commands that show one analysis another way (graph, ir, compare,
plot): the file is analyzed once through the pipeline, then rendered by the command."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from solar_lsp import units
from solar_lsp.bounds.sol import Policy
from solar_lsp.cli.args import (
    hw_names,
    llm_config,
    mode_config,
    parse_dims,
    parse_onchip,
    shadowed_chip_warnings,
)
from solar_lsp.hardware.chips import HardwareError, load_chips
from solar_lsp.pipeline.analyze import analyze_file
from solar_lsp.pipeline.config import Config
from solar_lsp.pipeline.limits import FileTimeout, time_limit
from solar_lsp.source.symbols import file_symbols, parse_symbols, pyproject_solar

if TYPE_CHECKING:
    from rich.console import Console


def escape(text: str) -> str:
    """rich's markup escape, imported when something is printed (rich.markup pulls in rich)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


class UsageError(ValueError):
    """A bad option value: printed as ``error: ...``, exit code 2."""


def analyze_command(args, out: Console, err: Console) -> int:
    """analyze / graph / ir / compare / plot: one analysis, rendered per command."""
    try:
        chips = load_chips(hw_names(args.hw))
        cfg = _config(args, chips)
    except (HardwareError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
    for w in shadowed_chip_warnings(chips):
        err.print(f"[yellow]warning:[/yellow] {escape(w)}", highlight=False)
    try:
        with time_limit(args.timeout):
            if args.cmd == "analyze" and not args.json:
                with err.status("analyzing…"):
                    report = analyze_file(args.file, cfg, chips)
            else:
                report = analyze_file(args.file, cfg, chips)
            if getattr(args, "symbolic", False) and not report.error:
                from solar_lsp.pipeline.symbolic_costs import add_symbolic  # sympy, when asked
                if args.json:
                    add_symbolic(report, args.file, cfg, chips)
                else:
                    with err.status("fitting formulas (re-analysis at small sizes)…"):
                        add_symbolic(report, args.file, cfg, chips)
    except FileTimeout:
        err.print(f"[red]error:[/red] {args.file}: the analysis did not finish in {args.timeout:g} s "
                  "(is there an endless loop at import or in forward?); --timeout S allows longer",
                  markup=True, highlight=False)
        return 1
    if report.error:
        if args.cmd == "analyze" and args.json:
            print(json.dumps(report.to_json(), indent=1))
        where = "" if args.file in report.error else f"{args.file}: "
        err.print(f"[red]error:[/red] {where}{escape(report.error)}", highlight=False)
        return 2
    if not report.entries:
        if args.cmd == "analyze" and args.json:
            print(json.dumps(report.to_json(), indent=1))
        err.print(f"[red]error:[/red] no entry points found in {args.file}. Mark one with a shape "
                  "pragma above a function (`# solar: x=f32[8,512]`), or define `class Model("
                  "nn.Module)` with `get_inputs()` (docs/entry-points.md)", highlight=False)
        return 1
    missing = untrained(report, cfg)
    for m in missing:
        err.print(f"[red]error:[/red] {args.file}: {escape(m)}", highlight=False)
    if missing:
        for e in report.entries:
            if e.status == "ok" and e.mode != "train":
                e.status, e.error = "error", "--mode train: no training step for this entry"
        if args.cmd == "analyze" and args.json:
            print(json.dumps(report.to_json(), indent=1, default=str))
        return 2
    return _show(report, args, chips, cfg, out, err)


def _config(args, chips) -> Config:
    """The run's Config from the options; ValueError (with the option's name) when one is bad."""
    dims = parse_dims(args.dim)
    if os.path.isdir(args.file):
        raise UsageError(f"{args.file} is a directory; `solar coverage {args.file}` analyzes "
                         "every file in it")
    if not os.path.isfile(args.file):
        raise UsageError(f"cannot read {args.file}: no such file")
    cfg = Config(hw=[c.name for c in chips], entry=args.entry, dims=dims)
    if getattr(args, "symbol", None) and not getattr(args, "sweep", None):
        args.symbolic = True
    if getattr(args, "symbolic", False) or getattr(args, "sweep", None):
        try:
            cfg.symbols = {**file_symbols(args.file, pyproject_solar(args.file).get("symbols")),
                           **parse_symbols(args.symbol)}
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if getattr(args, "onchip", None) is not None:
        try:
            cfg.onchip = parse_onchip(args.onchip)
        except ValueError as exc:
            raise UsageError(f"bad --onchip: {exc}") from None
    cfg.verify = False
    if args.cmd == "analyze":
        if args.target_latency:
            cfg.target_s = units.parse_latency(args.target_latency)
        elif args.target_hz:
            cfg.target_s = units.parse_hz(args.target_hz)
        cfg.budget_bytes = units.parse_size(args.budget)
        cfg.budget_max_bytes = max(cfg.budget_bytes, units.parse_size(args.budget_max))
        cfg.verify = not args.no_verify
        cfg.policy = Policy(tf32_matmul=args.tf32 == "all", tf32_conv=args.tf32 != "none")
    cfg.llm = llm_config(args)
    try:
        mode_config(args, cfg)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return cfg


def untrained(report, cfg: Config) -> list[str]:
    """Entries analyzed without the training step ``--mode train`` asked for (their frontend
    returned the forward only): one message each."""
    if cfg.mode != "train":
        return []
    return [f"{e.name} (line {e.line}): the {e.frontend} frontend has no training step for this "
            "entry yet (--mode train); its forward alone was analyzed, so no train-mode figures "
            "are reported. Run without --mode train for the inference bound"
            for e in report.entries if e.status == "ok" and getattr(e, "mode", "inference") != "train"]


def _show(report, args, chips, cfg: Config, out: Console, err: Console) -> int:
    if args.cmd == "graph":
        from solar_lsp.cli.inspect import graph_command
        return graph_command(report, args, err)
    if args.cmd == "ir":
        from solar_lsp.cli.inspect import ir_command
        return ir_command(report)
    if args.cmd == "compare":
        from solar_lsp.cli.compare import compare_command
        return compare_command(report, args, out)
    if args.cmd == "plot":
        from solar_lsp.cli.plot import plot_command
        return plot_command(report, args, chips, cfg, out, err)
    if args.json:
        print(json.dumps(report.to_json(), indent=1, default=str))
    else:
        from solar_lsp.cli.render import render
        from solar_lsp.llm.present import render_llm
        render(report, out, chips)
        render_llm(report, out)
    return 0 if report.ok else 1
