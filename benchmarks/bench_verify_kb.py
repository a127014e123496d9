"""How much of KernelBench solar verifies, how fast, in how much memory (issue 16 item 1).

For every k-th problem of KernelBench levels 1-3 (``--per-level N``) one fresh process runs

    python -m solar_lsp.cli.main analyze <problem> --json --hw h100-sxm

(with verification, the default) and the script reads, from the JSON, the ``Model`` entry's
verification status and detail (``verified`` at full size or "verified at B=..." at reduced
dims, ``unverified``, ``mismatch``) and ``timings.verify_s``; wall time and peak RSS of the
child come from ``os.wait4`` (that child alone, see bench_stages.py).

It prints one row per problem and a summary: problems analysed, the share of analysed entries
that are verified (the issue asks for all of them), how many at reduced size, the median and
max verification time and the max peak RSS (limits: 5 s median, 2 GB), and every entry that is
not verified with the reason solar gave.

Usage::

    python benchmarks/bench_verify_kb.py --kb /work/kb-head/KernelBench --per-level 10 \\
        [--timeout 600] [--json out.json]
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

BUDGET_KIB = 2 * 1024 * 1024  # the 2 GB, as ru_maxrss KiB
TARGET_MEDIAN_S = 5.0


def analyse(path: Path, timeout_s: float, env: dict[str, str]) -> dict:
    """One cold verified analysis of ``path``: outcome, verification status, times, RSS."""
    argv = ["timeout", str(int(timeout_s)), sys.executable, "-m", "solar_lsp.cli.main",
            "analyze", str(path), "--json", "--hw", "h100-sxm"]
    run = run_child(argv, env)
    row = {"problem": f"{path.parent.name}/{path.name}", "wall_s": round(run.wall_s, 2),
           "maxrss_kib": run.maxrss_kib, "rc": run.rc}
    if run.rc == 124:
        return row | {"outcome": "timeout"}
    try:
        doc = json.loads(run.stdout)
    except json.JSONDecodeError:
        tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return row | {"outcome": "crashed", "detail": tail[:200]}
    entries = doc.get("entries") or []
    entry = next((e for e in entries if e.get("name") == "Model"), entries[0] if entries else None)
    if entry is None or entry.get("error"):
        return row | {"outcome": "not analysed",
                      "detail": (entry or {}).get("error") or doc.get("error") or "no entry"}
    ver = entry.get("verification") or {}
    detail = ver.get("detail") or ""
    return row | {"outcome": "analysed", "status": ver.get("status"), "detail": detail[:200],
                  "reduced": "reduced" in ver,  # the report's reduced-size block
                  "verify_s": (entry.get("timings") or {}).get("verify_s")}


def summarize(rows: list[dict]) -> dict:
    """The figures the issue sets limits on."""
    done = [r for r in rows if r["outcome"] == "analysed"]
    verified = [r for r in done if r.get("status") == "verified"]
    times = [r["verify_s"] for r in done if r.get("verify_s") is not None]
    rss = [r["maxrss_kib"] for r in rows]
    return {
        "problems": len(rows), "analysed": len(done), "verified": len(verified),
        "verified_reduced": sum(1 for r in verified if r.get("reduced")),
        "share_verified": (len(verified) / len(done)) if done else None,
        "median_verify_s": statistics.median(times) if times else None,
        "max_verify_s": max(times) if times else None,
        "max_rss_mib": max(rss) / 1024 if rss else None,
        "over_2gb": sum(1 for x in rss if x > BUDGET_KIB),
        "not_verified": [(r["problem"], r.get("status") or r["outcome"], r.get("detail", ""))
                         for r in rows if r.get("status") != "verified"],
    }


def render(rows: list[dict], s: dict) -> str:
    """The per-problem table and the summary as text."""
    out = [f"{'problem':<48} {'outcome':<10} {'status':<11} {'verify_s':>8} {'wall_s':>7} "
           f"{'rss_MiB':>8}"]
    for r in rows:
        vs = "" if r.get("verify_s") is None else f"{r['verify_s']:.2f}"
        out.append(f"{r['problem'][:48]:<48} {r['outcome'][:10]:<10} {str(r.get('status') or ''):<11}"
                   f" {vs:>8} {r['wall_s']:>7.1f} {r['maxrss_kib'] / 1024:>8.0f}")
    share = "n/a" if s["share_verified"] is None else f"{100 * s['share_verified']:.1f} %"
    med = "n/a" if s["median_verify_s"] is None else f"{s['median_verify_s']:.2f} s"
    out += ["", f"problems {s['problems']}, analysed {s['analysed']}, verified {s['verified']} "
            f"({share} of analysed; {s['verified_reduced']} at reduced size)",
            f"verification time median {med} (limit {TARGET_MEDIAN_S:.0f} s), "
            f"max {s['max_verify_s'] or 0:.2f} s; peak RSS max {s['max_rss_mib'] or 0:.0f} MiB, "
            f"{s['over_2gb']} over 2 GB"]
    for prob, status, detail in s["not_verified"]:
        out.append(f"  not verified: {prob}: {status}: {detail}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Run the sample and print the table and summary."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", required=True, type=Path, help="KernelBench problem root (level1..3)")
    ap.add_argument("--per-level", type=int, default=10, metavar="N")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", metavar="OUT", help="write rows and summary here")
    args = ap.parse_args(argv)
    env, _ = child_env(False)
    problems = select_problems(args.kb, args.per_level)
    rows = []
    t0 = time.perf_counter()
    for i, path in enumerate(problems, 1):
        rows.append(analyse(path, args.timeout, env))
        print(f"[{i}/{len(problems)}] {rows[-1]['problem']}: {rows[-1].get('status') or rows[-1]['outcome']}"
              f" ({rows[-1]['wall_s']:.1f} s)", file=sys.stderr, flush=True)
    s = summarize(rows)
    load = os.getloadavg()[0]
    print(render(rows, s))
    print(f"\n{len(rows)} problems in {time.perf_counter() - t0:.0f} s, 1-min load at end {load:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "summary": s}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
