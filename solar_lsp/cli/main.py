"""The ``solar`` command line: analyze, compare, plot, coverage, headroom, hw, graph, ir.

Each command lives in its own module of this package; this one parses and dispatches.
Exit codes: 0 every entry analyzed, 1 some entry failed, 2 bad usage or unreadable input.
"""

from __future__ import annotations

import os
import sys
import warnings

from rich.console import Console

from solar_lsp.cli.args import build_parser


def main(argv: list[str] | None = None) -> int:
    """Run one ``solar`` command; returns the exit code."""
    warnings.filterwarnings("ignore")
    args = build_parser().parse_args(argv)
    # on a terminal, rich fits its width; piped or captured, lines are never wrapped (a wrap
    # would split numbers from their units) and tables get room to stay one row per line
    out = Console(soft_wrap=False, width=max(120, Console().width))
    if not out.is_terminal:
        out = Console(soft_wrap=True, width=200)
    err = Console(stderr=True)
    if not err.is_terminal:
        err = Console(stderr=True, soft_wrap=True, width=200)
    if args.cmd == "hw":
        from solar_lsp.cli.hw import hw_command
        return hw_command(args, out, err)
    if args.cmd == "headroom":
        from solar_lsp.cli.headroom import headroom_command
        return headroom_command(args, out, err)
    if args.cmd == "coverage":
        from solar_lsp.cli.coverage import coverage_command
        return coverage_command(args, out, err)
    from solar_lsp.cli.analyze import analyze_command
    return analyze_command(args, out, err)


def run() -> None:
    """Console-script entry: exit without tearing down torch and numba, which costs a cold
    CLI about 1.5 s after the work is done (output is flushed first; nothing else is pending)."""
    try:
        rc = main()
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code if isinstance(exc.code, int) else 2
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == "__main__":
    run()
