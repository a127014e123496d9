"""Speed and peak memory of a training-step analysis (``--mode train``) next to the inference
analysis of the same file, from a cold CLI.

Usage::

    python benchmarks/bench_train.py                       # examples/mlp.py, examples/transformer_block.py
    python benchmarks/bench_train.py FILE...               # chosen files (KernelBench L3 1_MLP.py, ...)
    python benchmarks/bench_train.py --repeat 3 --json > train.json

Every measurement is a fresh ``python -m solar_lsp.cli.main analyze FILE --json [--mode train]``
process, with and without ``--no-verify``, timed from outside (wall time, and CPU time from the
growth of ``RUSAGE_CHILDREN``'s user + system times, which a loaded machine inflates far less);
peak RSS is that child's own ``ru_maxrss`` from ``os.wait4`` (``bench_stages.run_child``). The
two modes of a file run interleaved, so they meet the same load. ``python -c "import torch"`` is
timed in the same run, so each figure can be read against the fixed cost of every cold CLI on
the machine as loaded at that moment. The forward path's rules (issue 19: a training step must
stay within them) are checked on the train-mode figures: peak RSS ≤ ``TARGET_PEAK_RSS_MIB``
for every file, and for ``examples/mlp.py`` a cold CLI ≤ ``TARGET_E2E_S`` and trace + lower +
SOL ≤ ``TARGET_CORE_S``. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench_corpus import TARGET_PEAK_RSS_MIB
from bench_stages import (
    ROOT,
    TARGET_CORE_S,
    TARGET_E2E_S,
    TARGET_FILE,
    Run,
    child_env,
    fmt_s,
    med,
    run_child,
)
from rich.console import Console
from rich.table import Table

DEFAULT_FILES = ("examples/mlp.py", "examples/transformer_block.py")
MODES = ("inference", "train")


def timed(argv: list[str], env: dict[str, str]) -> tuple[Run, float]:
    """``run_child`` and the child's CPU seconds (user + system): the growth of
    ``RUSAGE_CHILDREN``'s times, which (unlike its ``ru_maxrss``) are sums over the reaped
    children, so the delta is this child's own. Less sensitive to a loaded machine than wall
    time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = run_child(argv, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return run, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@dataclass
class ModeResult:
    """The cold-CLI runs of one file in one mode, with and without verification."""

    mode: str
    wall_s: list[float] = field(default_factory=list)
    wall_noverify_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    cpu_noverify_s: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    rss_noverify_mib: list[float] = field(default_factory=list)
    core_s: list[float] = field(default_factory=list)  # trace + lower + SOL, summed over entries
    # entry name -> "status/verification" of the last verifying run
    entries: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def add(self, run: Run, cpu_s: float, noverify: bool) -> None:
        """Record one child: its wall and CPU time and RSS, and what its JSON says."""
        (self.wall_noverify_s if noverify else self.wall_s).append(run.wall_s)
        (self.cpu_noverify_s if noverify else self.cpu_s).append(cpu_s)
        (self.rss_noverify_mib if noverify else self.rss_mib).append(run.maxrss_kib / 1024)
        try:
            doc = json.loads(run.stdout)
        except json.JSONDecodeError:
            self.errors.append(f"exit {run.rc}, no JSON: {run.stderr.strip()[-300:]}")
            return
        if doc.get("error"):
            self.errors.append(str(doc["error"]))
        if run.rc != 0 and not doc.get("error"):
            self.errors.append(f"exit {run.rc}")
        core = 0.0
        for e in doc.get("entries", []):
            if e.get("error"):
                self.errors.append(f"{e['name']}: {e['error']}")
            t = e.get("timings") or {}
            core += sum(t.get(k, 0.0) for k in ("trace_s", "lower_s", "sol_s"))
            if not noverify:
                v = (e.get("verification") or {}).get("status", "-")
                self.entries[e["name"]] = f"{e['status']}/{v}"
        if not noverify:
            self.core_s.append(core)

    def summary(self) -> dict:
        """Medians and every run, as the JSON output lists them."""
        def both(xs: list[float]) -> dict:
            return {"median": med(xs), "runs": xs}
        return {"mode": self.mode, "e2e_s": both(self.wall_s),
                "e2e_noverify_s": both(self.wall_noverify_s), "cpu_s": both(self.cpu_s),
                "cpu_noverify_s": both(self.cpu_noverify_s), "core_s": both(self.core_s),
                "peak_rss_mib": both(self.rss_mib),
                "peak_rss_noverify_mib": both(self.rss_noverify_mib),
                "entries": self.entries, "errors": self.errors}


def bench_file(path: str, repeat: int) -> dict[str, ModeResult]:
    """``repeat`` cold CLIs of ``path`` per mode, with and without verification, interleaved
    (inference, train, inference -V, train -V, ...) so that both modes meet the same load."""
    res = {m: ModeResult(m) for m in MODES}
    env, _ = child_env(False)
    for _ in range(repeat):
        for noverify in (False, True):
            for mode in MODES:
                argv = [sys.executable, "-m", "solar_lsp.cli.main", "analyze", path, "--json"]
                argv += ["--mode", "train"] if mode == "train" else []
                argv += ["--no-verify"] if noverify else []
                res[mode].add(*timed(argv, env), noverify)
    return res


def short(path: str) -> str:
    """A file as the tables show it: relative to the repository, else its folder and name."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(Path(p.parent.name) / p.name)


def times(num: float | None, den: float | None) -> str:
    """``num / den`` as ``1.23×``, or ``-`` when either is missing."""
    return f"{num / den:.2f}×" if num and den else "-"


def both_times(wall: tuple[float | None, float | None], cpu: tuple[float | None, float | None]) -> str:
    """The ratio of wall times and of CPU times, as ``wall / cpu``."""
    return f"{times(*wall)} / {times(*cpu)}"


def torch_baseline(repeat: int) -> dict:
    """Wall and CPU seconds and peak RSS of ``python -c "import torch"`` (medians), after one
    untimed run that warms the OS page cache."""
    env, _ = child_env(False)
    argv = [sys.executable, "-c", "import torch"]
    timed(argv, env)
    runs = [timed(argv, env) for _ in range(repeat)]
    return {"wall_s": med([r.wall_s for r, _ in runs]), "cpu_s": med([c for _, c in runs]),
            "peak_rss_mib": med([r.maxrss_kib / 1024 for r, _ in runs]),
            "runs": [{"wall_s": r.wall_s, "cpu_s": c} for r, c in runs]}


def rules(path: str, by_mode: dict[str, ModeResult]) -> list[tuple[str, float, dict, bool | None]]:
    """The forward path's rules applied to a file's train-mode figures: (rule, limit,
    {mode: measured}, train meets it). Wall time is the rule; CPU time is shown beside it as
    what a quiet machine would come near."""
    def worst_rss(r: ModeResult) -> float | None:
        return max(med(r.rss_mib) or 0.0, med(r.rss_noverify_mib) or 0.0) or None
    checks = [("peak RSS (MiB)", TARGET_PEAK_RSS_MIB, worst_rss)]
    if Path(path).name == TARGET_FILE and Path(path).parent.name == "examples":
        checks += [("cold CLI wall (s)", TARGET_E2E_S, lambda r: med(r.wall_s)),
                   ("cold CLI CPU (s)", TARGET_E2E_S, lambda r: med(r.cpu_s)),
                   ("trace + lower + SOL (s)", TARGET_CORE_S, lambda r: med(r.core_s))]
    out = []
    for name, limit, get in checks:
        got = {m: get(r) for m, r in by_mode.items()}
        out.append((name, limit, got, None if got["train"] is None else got["train"] <= limit))
    return out


def _table(results: dict[str, dict[str, ModeResult]], torch: dict, repeat: int) -> Table:
    tab = Table(title=f"train vs inference — medians of {repeat} cold CLI run(s) per mode; "
                      "ratios: wall / CPU")
    cols = ("file", "mode", "entries (status/verification)", "wall", "CPU", "wall -V", "CPU -V",
            "t+l+SOL", "train/inf", "train/inf -V", "/torch", "/torch -V", "RSS", "RSS -V")
    for c in cols:
        tab.add_column(c, justify="left" if c in cols[:3] else "right")
    tw, tc = torch["wall_s"], torch["cpu_s"]
    for path, by_mode in results.items():
        inf = by_mode["inference"]
        for mode, r in by_mode.items():
            w, c, wv, cv = (med(x) for x in (r.wall_s, r.cpu_s, r.wall_noverify_s, r.cpu_noverify_s))
            is_train = mode == "train"
            ents = ", ".join(f"{k} {v}" for k, v in r.entries.items()) or "-"
            if r.errors:
                ents += f" [red]{r.errors[0][:80]}[/]"
            tab.add_row(
                short(path) if not is_train else "", mode, ents, fmt_s(w), fmt_s(c), fmt_s(wv), fmt_s(cv),
                fmt_s(med(r.core_s)),
                both_times((w, med(inf.wall_s)), (c, med(inf.cpu_s))) if is_train else "",
                both_times((wv, med(inf.wall_noverify_s)), (cv, med(inf.cpu_noverify_s)))
                if is_train else "",
                both_times((w, tw), (c, tc)), both_times((wv, tw), (cv, tc)),
                f"{med(r.rss_mib) or 0:.0f} MiB", f"{med(r.rss_noverify_mib) or 0:.0f} MiB")
    return tab


def _rules_table(results: dict[str, dict[str, ModeResult]]) -> Table:
    tab = Table(title="train mode against the forward path's rules (met: train ≤ limit; RSS: the "
                      "larger of with and without verification)")
    for c in ("file", "rule", "limit", "inference", "train", "met"):
        tab.add_column(c, justify="left" if c in ("file", "rule") else "right")
    for path, by_mode in results.items():
        for name, limit, got, met in rules(path, by_mode):
            tab.add_row(short(path), name, f"{limit:g}",
                        *("-" if got[m] is None else f"{got[m]:.2f}" for m in MODES),
                        "-" if met is None else ("[green]yes[/]" if met else "[red]no[/]"))
    return tab


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its tables (and the JSON with ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help=f"Python files (default: {' '.join(DEFAULT_FILES)})")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="cold CLI runs per file, mode and verification; medians are shown")
    ap.add_argument("--json", action="store_true",
                    help="dump all figures as one JSON document on stdout (tables go to stderr)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    files = args.files or list(DEFAULT_FILES)
    out = sys.stderr if args.json else sys.stdout
    console = Console(file=out, width=None if out.isatty() else 200)
    load = [os.getloadavg()[0]]
    with console.status("timing `import torch`"):
        torch_imp = torch_baseline(args.repeat)
    results: dict[str, dict[str, ModeResult]] = {}
    for f in files:
        with console.status(f"analyzing {f}: {4 * args.repeat} cold CLIs"):
            results[f] = bench_file(str(Path(f).resolve()) if Path(f).exists() else f, args.repeat)
        load.append(os.getloadavg()[0])
    console.print(_table(results, torch_imp, args.repeat))
    console.print(f"`python -c \"import torch\"`: {fmt_s(torch_imp['wall_s'])} wall, "
                  f"{fmt_s(torch_imp['cpu_s'])} CPU, {torch_imp['peak_rss_mib']:.0f} MiB; "
                  "1-min load average at the start and "
                  f"after each file: {', '.join(f'{x:.2f}' for x in load)} on {os.cpu_count()} CPUs")
    console.print(_rules_table(results))
    if args.json:
        doc = {"python": sys.version.split()[0], "repeat": args.repeat, "import_torch": torch_imp,
               "load_average_1min": load, "cpus": os.cpu_count(),
               "files": [{"file": f, "modes": [r.summary() for r in rs.values()],
                          "rules": [dict(zip(("rule", "limit", "measured", "train_met"), x))
                                    for x in rules(f, rs)]}
                         for f, rs in results.items()]}
        print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
