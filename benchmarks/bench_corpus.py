"""Corpus-wide speed and memory of solar-lsp: time per file in a warm process (with and without
verification), cold-CLI time for a few files, and peak RSS on the largest entry.

Usage::

    python benchmarks/bench_corpus.py                     # tests/corpus
    python benchmarks/bench_corpus.py --corpus DIR --fresh 5
    python benchmarks/bench_corpus.py --json > corpus.json

Warm process: one ``python -m solar_lsp.cli.main coverage DIR --json [--no-verify]`` child per
mode; the per-file seconds come from its JSON (``files[].seconds``, measured inside that
process after torch, torch.export and numba were imported once), so they compare files,
not interpreter start-up. Fresh CLI: ``python -m solar_lsp.cli.main analyze FILE --json`` timed
from outside, for the files at the median, p95 and maximum of the warm verified times.
Peak RSS: a child analyzes (and verifies) the largest entry, the one with the most unfused
DRAM bytes, and reports ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of itself. The peak
RSS of each whole-corpus child comes from ``os.wait4`` (that child alone).
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
TARGET_WARM_MEDIAN_S = 0.7
TARGET_FRESH_CLI_S = 4.0
TARGET_PEAK_RSS_MIB = 1536.0

RSS_CHILD = """
import json, resource, sys, time, warnings
warnings.filterwarnings("ignore")
from solar_lsp.pipeline.analyze import Config, analyze_file
t0 = time.perf_counter()
r = analyze_file(sys.argv[1], Config(entry=sys.argv[2]))
e = r.entries[0] if r.entries else None
print(json.dumps({"maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "seconds": time.perf_counter() - t0, "error": r.error or (e and e.error),
                  "verification": e.verification["status"] if e else None}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_child(argv: list[str]) -> tuple[float, int, int, str, str, float]:
    """(wall seconds, peak RSS KiB of this child alone, exit code, stdout, stderr, CPU seconds).
    CPU time (user + system) is the figure to compare on a shared, busy machine."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=ROOT, env=_env())
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (wall, ru.ru_maxrss, p.returncode, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), ru.ru_utime + ru.ru_stime)


def rank(n: int, q: float) -> int:
    """0-based index of the nearest-rank q-th percentile of n sorted values."""
    return min(n, max(1, math.ceil(n * q / 100))) - 1


def percentile(values: list[float], q: float) -> float:
    """Nearest rank, as `solar coverage` reports it."""
    return sorted(values)[rank(len(values), q)]


def warm_pass(corpus: str, verify: bool) -> dict:
    argv = [sys.executable, "-m", "solar_lsp.cli.main", "coverage", corpus, "--json"]
    if not verify:
        argv.append("--no-verify")
    wall, rss, rc, out, err, cpu = run_child(argv)
    if not out.strip():
        raise SystemExit(f"coverage child died (exit {rc}):\n{err[-3000:]}")
    doc = json.loads(out)
    times = [f["seconds"] for f in doc["files"]]
    return {"verify": verify, "wall_s": wall, "cpu_s": cpu, "maxrss_kib": rss, "exit_code": rc,
            "files": len(times), "passed": doc["summary"]["files_passed"],
            "median_s": statistics.median(times), "p95_s": percentile(times, 95),
            "max_s": max(times), "total_s": sum(times),
            "per_file": {f["file"]: f["seconds"] for f in doc["files"]}, "doc": doc}


def fresh_cli(path: str, repeat: int) -> dict:
    runs = [run_child([sys.executable, "-m", "solar_lsp.cli.main", "analyze", path, "--json"])
            for _ in range(repeat)]
    return {"file": path, "wall_s": statistics.median(r[0] for r in runs),
            "cpu_s": statistics.median(r[5] for r in runs),
            "maxrss_kib": max(r[1] for r in runs), "exit_codes": [r[2] for r in runs]}


def largest_entry(doc: dict) -> tuple[str, str, int]:
    best = max(((f["file"], e["name"], e["bytes"] or 0) for f in doc["files"] for e in f["detail"]),
               key=lambda t: t[2])
    return best


def peak_rss(path: str, entry: str) -> dict:
    wall, rss_outside, rc, out, err, _ = run_child([sys.executable, "-c", RSS_CHILD, path, entry])
    if rc != 0 or not out.strip():
        return {"file": path, "entry": entry, "error": f"exit {rc}: {err[-500:]}"}
    d = json.loads(out.strip().splitlines()[-1])
    return {"file": path, "entry": entry, "maxrss_mib": d["maxrss_kib"] / 1024,
            "wait4_maxrss_mib": rss_outside / 1024, "seconds": d["seconds"],
            "verification": d["verification"], "error": d["error"]}


def _s(x: float | None) -> str:
    return "—" if x is None else (f"{x * 1000:.0f} ms" if x < 0.1 else f"{x:.2f} s")


def _ratio(target: float, measured: float) -> str:
    r = target / measured if measured else float("inf")
    return f"[{'green' if r >= 1 else 'red'}]{r:.2f}[/]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(ROOT / "tests" / "corpus"))
    ap.add_argument("--fresh", type=int, default=3, help="files for the fresh-CLI timing (default 3)")
    ap.add_argument("--repeat", type=int, default=1, help="fresh-CLI runs per file (median shown)")
    ap.add_argument("--json", action="store_true", help="all figures as JSON on stdout; tables to stderr")
    args = ap.parse_args(argv)
    con = Console(stderr=args.json, width=max(120, Console().width))
    subprocess.run([sys.executable, "-c", "import torch"], check=False)  # page cache, untimed

    con.print("warm process, --no-verify …")
    nov = warm_pass(args.corpus, verify=False)
    con.print("warm process, with verification …")
    ver = warm_pass(args.corpus, verify=True)
    by_time = sorted(ver["per_file"].items(), key=lambda kv: kv[1])
    picks = []
    for q in (50, 95, 100)[: max(0, args.fresh)]:
        f = by_time[rank(len(by_time), q)][0]
        if f not in picks:
            picks.append(f)
    extra = [f for f, _ in reversed(by_time) if f not in picks][: max(0, args.fresh - len(picks))]
    picks += extra
    con.print(f"fresh CLI on {len(picks)} files …")
    fresh = [fresh_cli(f, args.repeat) for f in picks]
    path, entry, nbytes = largest_entry(ver["doc"])
    con.print(f"peak RSS on the largest entry ({os.path.relpath(path, ROOT)}::{entry}) …")
    rss = peak_rss(path, entry)

    t = Table(title=f"corpus {os.path.relpath(args.corpus, ROOT)}: time per file in a warm process",
              title_justify="left")
    for c in ("mode", "files", "passed", "median", "p95", "max", "sum", "process wall",
              "process CPU", "process RSS"):
        t.add_column(c, justify="left" if c == "mode" else "right")
    for name, r in (("--no-verify", nov), ("verify", ver)):
        t.add_row(name, str(r["files"]), str(r["passed"]), _s(r["median_s"]), _s(r["p95_s"]),
                  _s(r["max_s"]), _s(r["total_s"]), _s(r["wall_s"]), _s(r["cpu_s"]),
                  f"{r['maxrss_kib'] / 1024:.0f} MiB")
    con.print(t)
    t = Table(title="fresh CLI (solar analyze FILE --json, with verification)", title_justify="left")
    for c in ("file", "warm", "fresh CLI", "CPU", "RSS", "exit"):
        t.add_column(c, justify="left" if c == "file" else "right")
    for r in fresh:
        t.add_row(os.path.relpath(r["file"], ROOT), _s(ver["per_file"][r["file"]]), _s(r["wall_s"]),
                  _s(r["cpu_s"]), f"{r['maxrss_kib'] / 1024:.0f} MiB",
                  ",".join(map(str, r["exit_codes"])))
    con.print(t)
    t = Table(title="targets (ratio = target / measured; ≥ 1 meets it)", title_justify="left")
    for c in ("figure", "target", "measured", "ratio"):
        t.add_column(c, justify="left" if c == "figure" else "right")
    t.add_row("median time per file, warm, verified", _s(TARGET_WARM_MEDIAN_S), _s(ver["median_s"]),
              _ratio(TARGET_WARM_MEDIAN_S, ver["median_s"]))
    for r in fresh:
        t.add_row(f"fresh CLI {os.path.basename(r['file'])}", _s(TARGET_FRESH_CLI_S), _s(r["wall_s"]),
                  _ratio(TARGET_FRESH_CLI_S, r["wall_s"]))
    if "maxrss_mib" in rss:
        t.add_row(f"peak RSS {os.path.basename(path)}::{entry} ({nbytes / 1e6:.0f} MB unfused)",
                  f"{TARGET_PEAK_RSS_MIB:.0f} MiB", f"{rss['maxrss_mib']:.0f} MiB",
                  _ratio(TARGET_PEAK_RSS_MIB, rss["maxrss_mib"]))
    else:
        t.add_row("peak RSS", f"{TARGET_PEAK_RSS_MIB:.0f} MiB", "error", rss.get("error", ""))
    con.print(t)
    if args.json:
        for r in (nov, ver):
            r.pop("doc")
        print(json.dumps({"warm_no_verify": nov, "warm_verify": ver, "fresh_cli": fresh, "peak_rss": rss,
                          "targets": {"warm_median_s": TARGET_WARM_MEDIAN_S,
                                      "fresh_cli_s": TARGET_FRESH_CLI_S,
                                      "peak_rss_mib": TARGET_PEAK_RSS_MIB}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
