"""The ``solar`` command line: analyze, compare, plot, coverage, headroom, hw, graph, ir.

Each command lives in its own module of this package; this one parses and dispatches.
Exit codes: 0 every entry analyzed, 1 some entry failed, 2 bad usage or unreadable input.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from solar_lsp.cli.args import build_parser


class LazyConsole:
    """A rich Console made on first use: ``solar analyze --json`` that prints no warning never
    imports rich (0.06-0.1 s of a cold start)."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            self._console = _console(self._stderr)
        return getattr(self._console, name)


def _console(stderr: bool) -> Any:
    """On a terminal, rich fits its width; piped or captured, lines are never wrapped (a wrap
    would split numbers from their units) and tables get room to stay one row per line."""
    from rich.console import Console

    if stderr:
        err = Console(stderr=True)
        return err if err.is_terminal else Console(stderr=True, soft_wrap=True, width=200)
    out = Console(soft_wrap=False, width=max(120, Console().width))
    return out if out.is_terminal else Console(soft_wrap=True, width=200)


def main(argv: list[str] | None = None) -> int:
    """Run one ``solar`` command; returns the exit code."""
    warnings.filterwarnings("ignore")
    args = build_parser().parse_args(argv)
    out, err = LazyConsole(stderr=False), LazyConsole(stderr=True)
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
