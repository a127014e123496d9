"""``solar coverage``: analyze and verify every file of a corpus; exit 0 only if all pass."""

from __future__ import annotations

import json
import os
import sys

from rich.console import Console
from rich.table import Table

from solar_lsp import units
from solar_lsp.cli.args import hw_names
from solar_lsp.hardware.chips import HardwareError, load_chips
from solar_lsp.pipeline.config import Config
from solar_lsp.pipeline.coverage import corpus_files, run_coverage


def coverage_command(args, out: Console, err: Console) -> int:
    """``solar coverage``: exit 0 only when every entry of every file passed (coverage.py)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    try:
        chips = load_chips(hw_names(args.hw))
    except HardwareError as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
    if not os.path.exists(args.dir):
        err.print(f"[red]error:[/red] cannot read {args.dir}: no such file or directory")
        return 2
    files = corpus_files(args.dir)
    cfg = Config(hw=[c.name for c in chips], verify=not args.no_verify)
    if err.is_terminal:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err, transient=True) as bar:
            task = bar.add_task("coverage", total=len(files))

            def progress(i: int, n: int, path: str, res) -> None:
                bar.update(task, completed=i, description=os.path.basename(path))

            result = run_coverage(args.dir, cfg, chips, args.timeout or None, progress, files)
    else:  # CI logs: one line per file, written before it runs, so a crash names its file
        def log(i: int, n: int, path: str, res) -> None:
            if res is None:
                print(f"[{i + 1}/{n}] {path}", file=sys.stderr, flush=True)

        result = run_coverage(args.dir, cfg, chips, args.timeout or None, log, files)
    if args.json:
        print(json.dumps(result.to_json(), indent=1, default=str))
    else:
        _render_coverage(result, out)
    return result.exit_code


def _render_coverage(result, console: Console) -> None:
    t = Table(title=f"coverage of {result.root} ({result.hardware})", title_justify="left")
    for col in ("file", "entries", "analyzed", "verified", "unsupported", "time", "problem"):
        t.add_column(col, justify="left" if col in ("file", "problem") else "right")
    for f in result.files:
        ok = f.passed(result.verify)
        problems = f.errors + [f"{u['op']} (line {u['line']}): {u['reason']}" for u in f.unsupported]
        problems += [f"{e.name}: {e.verification}: {e.detail}" for e in f.entries
                     if e.status == "ok" and e.verification != "verified" and result.verify]
        name = os.path.relpath(f.file, result.root) if os.path.isdir(result.root) else f.file
        t.add_row(f"[{'green' if ok else 'red'}]{name}[/]", str(len(f.entries)), str(f.analyzed),
                  str(f.verified), str(len(f.unsupported)), units.seconds(f.seconds),
                  (problems[0][:100] if problems else ""))
    console.print(t)
    s = result.summary()
    console.print(f"{s['files_passed']}/{s['files']} files passed · {s['entries']} entries · "
                  f"{s['analyzed']} analyzed · {s['verified']} verified · time per file median "
                  f"{units.seconds(s['time_median_s'])}, p95 {units.seconds(s['time_p95_s'])}")
    for op, k in s["unsupported_ops"].items():
        console.print(f"  [yellow]unsupported[/yellow] {op}: {k['count']}× in {len(k['files'])} file(s)")
