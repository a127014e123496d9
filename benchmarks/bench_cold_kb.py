"""Cold `solar analyze` against `import torch`, on KernelBench problems (issue 17 items 1, 2, 4).

For every k-th problem of the chosen levels (``--per-level N``, as side_by_side.py picks them)
three fresh processes run back to back, in an order that rotates from one problem to the next:

    python -c "import torch"
    python -m solar_lsp.cli.main analyze <problem> --json              (verified, the default)
    python -m solar_lsp.cli.main analyze <problem> --json --no-verify  (bounds alone)

Each is timed from outside, with its peak RSS from ``os.wait4`` (bench_stages.run_child). Each
problem's ratios divide by the ``import torch`` measured beside it, so both meet the same load.
The script prints one row per problem and, per level, the median ratios against the issue's
limits (verified <= 2x, bounds alone <= 1.3x, recurrent L3 problems verified <= 2x), the peak
RSS of verified runs against 1 GB, and how many verified runs imported numba or sympy (from
the ``--json`` report's ``tool.imported``). ``--repeat R`` runs the triple R times per problem
and keeps the median of each.

Usage::

    python benchmarks/bench_cold_kb.py --kb /work/kb-head/KernelBench --per-level 10 \\
        [--levels level1 level2] [--repeat 1] [--json out.json]
    python benchmarks/bench_cold_kb.py --files A.py B.py        # chosen problems
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_stages import child_env, run_child  # noqa: E402
from side_by_side import select_problems  # noqa: E402

LIMIT_VERIFIED = 2.0
LIMIT_BOUNDS = 1.3
LIMIT_RSS_KIB = 1024 * 1024  # 1 GiB


def _solar(path: Path, verify: bool, timeout_s: float) -> list[str]:
    argv = ["timeout", str(int(timeout_s)), sys.executable, "-m", "solar_lsp.cli.main", "analyze",
            str(path), "--json", "--hw", "h100-sxm"]
    return argv + ([] if verify else ["--no-verify"])


def _status(stdout: str) -> tuple[str, dict]:
    """The Model entry's verification status (or why there is none), and which optional
    libraries the run imported."""
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError:
        return "crashed", {}
    loaded = {m: True for m in (doc.get("tool") or {}).get("imported") or []}
    entries = doc.get("entries") or []
    entry = next((e for e in entries if e.get("name") == "Model"), entries[0] if entries else None)
    if entry is None or entry.get("error"):
        return "not analysed", loaded
    return (entry.get("verification") or {}).get("status") or "?", loaded


def measure(path: Path, turn: int, repeat: int, timeout_s: float, env: dict[str, str]) -> dict:
    """The triple of cold runs for one problem, ``repeat`` times, in rotating order."""
    kinds = ["import", "verified", "bounds"]
    argv = {"import": [sys.executable, "-c", "import torch"],
            "verified": _solar(path, True, timeout_s), "bounds": _solar(path, False, timeout_s)}
    walls: dict[str, list[float]] = {k: [] for k in kinds}
    rss: dict[str, list[int]] = {k: [] for k in kinds}
    status, process = "?", {}
    for r in range(repeat):
        shift = (turn + r) % 3
        for kind in kinds[shift:] + kinds[:shift]:
            run = run_child(argv[kind], env)
            walls[kind].append(run.wall_s)
            rss[kind].append(run.maxrss_kib)
            if kind == "verified":
                status, process = ("timeout", {}) if run.rc == 124 else _status(run.stdout)
    w = {k: statistics.median(v) for k, v in walls.items()}
    return {"problem": f"{path.parent.name}/{path.name}", "import_s": w["import"],
            "verified_s": w["verified"], "bounds_s": w["bounds"],
            "ratio_verified": w["verified"] / w["import"], "ratio_bounds": w["bounds"] / w["import"],
            "rss_verified_kib": max(rss["verified"]), "rss_bounds_kib": max(rss["bounds"]),
            "status": status, "numba": bool(process.get("numba")), "sympy": bool(process.get("sympy"))}


def summarize(rows: list[dict], label: str) -> list[str]:
    """Median ratios and RSS for one group of rows, against the issue's limits."""
    if not rows:
        return []
    mv = statistics.median(r["ratio_verified"] for r in rows)
    mb = statistics.median(r["ratio_bounds"] for r in rows)
    over = [r for r in rows if r["rss_verified_kib"] > LIMIT_RSS_KIB]
    top = max(r["rss_verified_kib"] for r in rows) / 1024
    return [f"{label}: {len(rows)} problems; median verified/import {mv:.2f}x (limit "
            f"{LIMIT_VERIFIED:.1f}x: {'met' if mv <= LIMIT_VERIFIED else 'NOT met'}); median "
            f"bounds/import {mb:.2f}x (limit {LIMIT_BOUNDS:.1f}x: "
            f"{'met' if mb <= LIMIT_BOUNDS else 'NOT met'}); peak RSS verified max {top:.0f} MiB, "
            f"{len(over)} over 1 GiB; numba imported in {sum(r['numba'] for r in rows)}, sympy in "
            f"{sum(r['sympy'] for r in rows)}"]


def render(rows: list[dict]) -> str:
    """One row per problem, then the per-level and overall summaries."""
    out = [f"{'problem':<46} {'import':>6} {'verif':>6} {'bounds':>6} {'v/imp':>6} {'b/imp':>6} "
           f"{'rss_MiB':>7} {'status':<10} numba sympy"]
    for r in rows:
        out.append(f"{r['problem'][:46]:<46} {r['import_s']:>6.2f} {r['verified_s']:>6.2f} "
                   f"{r['bounds_s']:>6.2f} {r['ratio_verified']:>6.2f} {r['ratio_bounds']:>6.2f} "
                   f"{r['rss_verified_kib'] / 1024:>7.0f} {r['status'][:10]:<10} "
                   f"{'yes' if r['numba'] else 'no':<5} {'yes' if r['sympy'] else 'no'}")
    out.append("")
    levels = sorted({r["problem"].split("/")[0] for r in rows})
    for level in levels:
        out += summarize([r for r in rows if r["problem"].startswith(level + "/")], level)
    if len(levels) > 1:
        out += summarize(rows, "all")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Run the sample and print the table and the summaries."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", type=Path, help="KernelBench problem root (level1..3)")
    ap.add_argument("--per-level", type=int, default=10, metavar="N")
    ap.add_argument("--levels", nargs="+", default=["level1", "level2"])
    ap.add_argument("--files", nargs="+", type=Path, help="these problems instead of a sample")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", metavar="OUT", help="write the rows here")
    args = ap.parse_args(argv)
    if args.files:
        problems = args.files
    elif args.kb:
        problems = [p for p in select_problems(args.kb, args.per_level) if p.parent.name in args.levels]
    else:
        ap.error("give --kb or --files")
    env, _ = child_env(False)
    rows = []
    t0 = time.perf_counter()
    for i, path in enumerate(problems):
        rows.append(measure(path, i, args.repeat, args.timeout, env))
        r = rows[-1]
        print(f"[{i + 1}/{len(problems)}] {r['problem']}: verified {r['ratio_verified']:.2f}x, bounds "
              f"{r['ratio_bounds']:.2f}x ({r['status']})", file=sys.stderr, flush=True)
    print(render(rows))
    print(f"\n{len(rows)} problems in {time.perf_counter() - t0:.0f} s, 1-min load at end "
          f"{os.getloadavg()[0]:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
