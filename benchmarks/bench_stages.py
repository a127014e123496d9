"""Per-stage timings, cold-CLI wall time, peak RSS and graph size for solar-lsp.

Usage::

    python benchmarks/bench_stages.py                      # every file in examples/
    python benchmarks/bench_stages.py examples/mlp.py      # chosen files
    python benchmarks/bench_stages.py --repeat 3 --json > out.json
    python benchmarks/bench_stages.py --fresh-cache        # empty numba disk cache per run

Every measurement is a fresh ``python -m solar_lsp.cli.main analyze FILE --json`` process
(a cold CLI), timed from outside.  Stage times come from the JSON the CLI prints
(``entries[].timings``), graph size from ``entries[].graph``.

Peak RSS: each child is started with ``subprocess.Popen`` and reaped with
``os.wait4(pid, 0)``, which returns the ``struct rusage`` of *that* child alone
(including any descendants it reaped itself).  ``ru_maxrss`` from it is the child's own
high-water mark.  Deltas of ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` are not used: that
field is the maximum over all children reaped so far, not a sum, so once a large child
has run, a smaller later one shows a delta of 0.

See benchmarks/README.md for what each column means.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("discover_s", "import_s", "trace_s", "lower_s", "sol_s", "verify_s")
# The targets, for examples/mlp.py.
TARGET_E2E_S = 4.0
TARGET_CORE_S = 1.0  # trace + lower + SOL
TARGET_FILE = "mlp.py"


@dataclass
class Run:
    wall_s: float
    maxrss_kib: int
    rc: int
    stdout: str
    stderr: str


def run_child(argv: list[str], env: dict[str, str]) -> Run:
    """Run argv to completion; wall time from outside, peak RSS of this child only."""
    import subprocess

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             cwd=ROOT, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # already reaped; keep Popen quiet
        out.seek(0)
        err.seek(0)
        return Run(wall, ru.ru_maxrss, p.returncode,
                   out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def child_env(fresh_cache: bool) -> tuple[dict[str, str], tempfile.TemporaryDirectory | None]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    tmp = None
    if fresh_cache:
        tmp = tempfile.TemporaryDirectory(prefix="solar-bench-cache-")
        env["SOLAR_CACHE_DIR"] = tmp.name
    return env, tmp


def med(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


@dataclass
class FileResult:
    file: str
    e2e_s: list[float] = field(default_factory=list)
    e2e_noverify_s: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    rss_noverify_mib: list[float] = field(default_factory=list)
    rc: list[int] = field(default_factory=list)
    error: str | None = None
    # entry name -> {"status", "graph", "timings": {stage: [values...]}}
    entries: dict[str, dict] = field(default_factory=dict)

    def other_s(self) -> float | None:
        """Median e2e minus the stage times (discover/import are per file, counted once)."""
        e2e = med(self.e2e_s)
        if e2e is None or not self.entries:
            return None
        first = next(iter(self.entries.values()))["timings"]
        staged = sum(med(first[k]) or 0 for k in ("discover_s", "import_s"))
        for e in self.entries.values():
            staged += sum(med(e["timings"][k]) or 0
                          for k in ("trace_s", "lower_s", "sol_s", "verify_s"))
        return e2e - staged

    def summary(self) -> dict:
        return {
            "file": self.file,
            "error": self.error,
            "exit_codes": self.rc,
            "e2e_s": {"median": med(self.e2e_s), "runs": self.e2e_s},
            "other_s": self.other_s(),
            "e2e_noverify_s": {"median": med(self.e2e_noverify_s), "runs": self.e2e_noverify_s},
            "peak_rss_mib": {"median": med(self.rss_mib), "runs": self.rss_mib},
            "peak_rss_noverify_mib": {"median": med(self.rss_noverify_mib),
                                      "runs": self.rss_noverify_mib},
            "entries": [
                {"name": name, "status": e["status"], "graph": e["graph"],
                 "timings": {k: {"median": med(v), "runs": v} for k, v in e["timings"].items()},
                 "core_s": med(e["core"])}
                for name, e in self.entries.items()
            ],
        }


def bench_file(path: str, repeat: int, fresh_cache: bool) -> FileResult:
    res = FileResult(file=path)
    base = [sys.executable, "-m", "solar_lsp.cli.main", "analyze", path, "--json"]
    for _ in range(repeat):
        for noverify in (False, True):
            env, tmp = child_env(fresh_cache)
            try:
                r = run_child(base + (["--no-verify"] if noverify else []), env)
            finally:
                if tmp is not None:
                    tmp.cleanup()
            mib = r.maxrss_kib / 1024  # Linux reports KiB
            (res.e2e_noverify_s if noverify else res.e2e_s).append(r.wall_s)
            (res.rss_noverify_mib if noverify else res.rss_mib).append(mib)
            res.rc.append(r.rc)
            try:
                doc = json.loads(r.stdout)
            except json.JSONDecodeError:
                res.error = f"exit {r.rc}, no JSON: {r.stderr.strip()[-300:]}"
                continue
            if doc.get("error"):
                res.error = doc["error"]
            if noverify:
                continue  # stage times are taken from the full (verifying) run
            for e in doc.get("entries", []):
                slot = res.entries.setdefault(
                    e["name"], {"status": e["status"], "graph": e.get("graph") or {},
                                "timings": {k: [] for k in STAGES}, "core": []})
                slot["status"] = e["status"] if e["status"] != "ok" else slot["status"]
                t = e.get("timings") or {}
                for k in STAGES:
                    if k in t:
                        slot["timings"][k].append(t[k])
                if all(k in t for k in ("trace_s", "lower_s", "sol_s")):
                    slot["core"].append(t["trace_s"] + t["lower_s"] + t["sol_s"])
    return res


def bench_baseline(code: str, repeat: int) -> dict:
    env, _ = child_env(False)
    runs = [run_child([sys.executable, "-c", code], env) for _ in range(repeat)]
    return {"wall_s": {"median": med([r.wall_s for r in runs]), "runs": [r.wall_s for r in runs]},
            "peak_rss_mib": med([r.maxrss_kib / 1024 for r in runs])}


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.1f}ms" if x < 0.1 else f"{x:.2f}s"


def ratio(target: float, measured: float | None) -> str:
    if not measured:
        return "-"
    r = target / measured
    return f"[{'green' if r >= 1 else 'red'}]{r:.2f}×[/]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="Python files to analyze (default: examples/*.py)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="cold CLI runs per file and mode; the table shows medians")
    ap.add_argument("--json", action="store_true",
                    help="dump all figures as one JSON document on stdout (tables go to stderr)")
    ap.add_argument("--fresh-cache", action="store_true",
                    help="point SOLAR_CACHE_DIR at an empty directory for every run, so the "
                         "numba kernels of the verifier are compiled from scratch")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    files = args.files or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*.py"))
    out = sys.stderr if args.json else sys.stdout
    console = Console(file=out, width=None if out.isatty() else 220)

    with console.status("timing python startup and `import torch`"):
        bench_baseline("import torch", 1)  # untimed: warm the OS page cache first
        py = bench_baseline("pass", args.repeat)
        torch_imp = bench_baseline("import torch", args.repeat)
    results = []
    for f in files:
        with console.status(f"analyzing {f} ({args.repeat}× with verify, {args.repeat}× without)"):
            results.append(bench_file(f, args.repeat, args.fresh_cache))

    title = (f"solar-lsp stages — medians of {args.repeat} cold CLI run(s)"
             f"{', fresh numba cache' if args.fresh_cache else ''}")
    tab = Table(title=title)
    for col in ("file", "entry", "status", "discover", "import", "trace", "lower", "SOL",
                "verify", "t+l+SOL", "e2e", "other", "e2e -V", "RSS", "RSS -V",
                "ATen", "IR ops", "kernels", "graph"):
        tab.add_column(col, justify="left" if col in ("file", "entry", "status") else "right")
    for r in results:
        file_cols = [fmt_s(med(r.e2e_s)), fmt_s(r.other_s()), fmt_s(med(r.e2e_noverify_s)),
                     f"{med(r.rss_mib):.0f} MiB", f"{med(r.rss_noverify_mib):.0f} MiB"]
        if not r.entries:
            tab.add_row(r.file, "-", f"[red]{r.error or 'no entries'}[/]", *["-"] * 7,
                        *file_cols, *["-"] * 4)
            continue
        for i, (name, e) in enumerate(r.entries.items()):
            g = e["graph"]
            tab.add_row(
                r.file if i == 0 else "", name, e["status"],
                *(fmt_s(med(e["timings"][k])) for k in STAGES), fmt_s(med(e["core"])),
                *(file_cols if i == 0 else [""] * 5),
                *(str(g.get(k, "-")) for k in ("aten_nodes", "ops", "kernels", "nodes")),
            )
    console.print(tab)
    console.print(f"python startup: {fmt_s(py['wall_s']['median'])} "
                  f"({py['peak_rss_mib']:.0f} MiB);  `import torch`: "
                  f"{fmt_s(torch_imp['wall_s']['median'])} ({torch_imp['peak_rss_mib']:.0f} MiB) "
                  f"— a fixed cost of every cold CLI, inside the `import` column")

    targets = []
    for r in results:
        if Path(r.file).name != TARGET_FILE:
            continue
        e2e = med(r.e2e_s)
        core = max((med(e["core"]) or 0 for e in r.entries.values()), default=None)
        targets.append({"file": r.file, "e2e_s": e2e, "core_s": core,
                        "e2e_ratio": TARGET_E2E_S / e2e if e2e else None,
                        "core_ratio": TARGET_CORE_S / core if core else None})
        tt = Table(title=f"targets for {r.file} (ratio = target / measured; ≥ 1 meets it)")
        for col in ("target", "goal", "measured", "ratio"):
            tt.add_column(col, justify="left" if col == "target" else "right")
        tt.add_row("cold CLI end to end", fmt_s(TARGET_E2E_S), fmt_s(e2e), ratio(TARGET_E2E_S, e2e))
        tt.add_row("trace + lower + SOL", fmt_s(TARGET_CORE_S), fmt_s(core),
                   ratio(TARGET_CORE_S, core))
        console.print(tt)

    if args.json:
        doc = {"python": sys.version.split()[0], "repeat": args.repeat,
               "fresh_cache": args.fresh_cache, "python_startup": py, "import_torch": torch_imp,
               "targets": targets, "files": [r.summary() for r in results]}
        print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
