"""solar-lsp against another SOL tool (NVlabs/SOLAR) on the same KernelBench problems.

Usage::

    python benchmarks/side_by_side.py --kb /work/kb-head/KernelBench \\
        --peer-python /work/peer-venv/bin/python --peer-dir /work/solar-peer
    python benchmarks/side_by_side.py --kb DIR --peer-cmd 'peer-tool {file} --out {out}'
    python benchmarks/side_by_side.py --kb DIR --peer-python ... --problems 5 --repeat 3 \\
        --json /tmp/side_by_side.json

For each problem, interleaved (the order of the three runs rotates from problem to problem),
three fresh processes are timed from outside:

* ours: ``python -m solar_lsp.cli analyze FILE --json --hw h100-pcie`` (with verification,
  as the default run does), and the same with ``--no-verify``;
* ours warm (unless ``--no-warm``): afterwards, one ``solar coverage`` process over copies
  of all the problems, with and without verification, per-file seconds from its JSON: what
  the language server or a second file in one run costs, once torch and numba are imported;
* the peer: with ``--peer-python``/``--peer-dir``, a small driver (below, ``PEER_DRIVER``)
  that runs NVlabs/SOLAR's four stages in one interpreter by calling the ``main()`` of its
  own CLIs (process_model → toeinsum_model → analyze_model → predict_perf_model
  ``--arch-config H100_PCIe --precision fp32``), as its examples' ``run_solar.sh`` does in
  four processes; or any command given as ``--peer-cmd`` (``{file}``, ``{out}`` replaced).

Peak RSS: each child is reaped with ``os.wait4``, whose rusage is that child's own
(``ru_maxrss``, KiB on Linux); see benchmarks/README.md (bench_stages.py) for why deltas of
``RUSAGE_CHILDREN`` are not used. A child past ``--timeout`` is killed with its process group.

Nothing here is needed by the test suite or CI: the peer is optional and never imported.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEVELS = ("level1", "level2", "level3")
PEER_ARCH = "H100_PCIe"
OURS_HW = "h100-pcie"

# Runs the peer's four stages in one process by calling its CLIs' main() functions with argv
# set; a stage that exits non-zero stops the run and names itself on stderr.
PEER_DRIVER = f"""
import importlib, sys
from pathlib import Path
model, out = sys.argv[1], Path(sys.argv[2])
stages = [
    ("solar.cli.process_model", ["--model-file", model, "--output-dir", str(out / "graph"),
                                 "--force-rerun"]),
    ("solar.cli.toeinsum_model", ["--graph-path", str(out / "graph" / "pytorch_graph.yaml"),
                                  "--output-dir", str(out / "einsum"), "--no-copy-graph"]),
    ("solar.cli.analyze_model", ["--einsum-graph-path",
                                 str(out / "einsum" / "einsum_graph_renamed.yaml"),
                                 "--output-dir", str(out / "analysis")]),
    ("solar.cli.predict_perf_model", ["--analysis-path", str(out / "analysis" / "analysis.yaml"),
                                      "--output-dir", str(out / "perf"),
                                      "--arch-config", "{PEER_ARCH}", "--precision", "fp32"]),
]
for mod, argv in stages:
    sys.argv = [mod] + argv
    try:
        importlib.import_module(mod).main()
        rc = 0
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    if rc:
        print(f"side_by_side: stage {{mod}} exited {{rc}}", file=sys.stderr)
        sys.exit(rc)
if not (out / "perf" / "perf_{PEER_ARCH}.yaml").exists():
    print("side_by_side: no perf_{PEER_ARCH}.yaml written", file=sys.stderr)
    sys.exit(3)
"""


@dataclass
class Run:
    """One timed child process."""

    wall_s: float
    rss_mib: float
    rc: int
    timed_out: bool
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)


def run_child(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> Run:
    """Run argv; wall time from outside, peak RSS of this child alone, killed past timeout_s."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                             env=env, start_new_session=True)
        fired = threading.Event()

        def kill() -> None:
            fired.set()
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout_s, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped already; keep Popen quiet
        out.seek(0)
        err.seek(0)
        return Run(wall, ru.ru_maxrss / 1024, p.returncode, fired.is_set(),
                   out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def _number(path: Path) -> tuple[int, str]:
    m = re.match(r"(\d+)_", path.name)
    return (int(m.group(1)) if m else 10**9, path.name)


def select_problems(kb: Path, per_level: int) -> list[Path]:
    """Every k-th problem file of each level (by problem number), k = files // per_level."""
    chosen = []
    for level in LEVELS:
        files = sorted((kb / level).glob("*.py"), key=_number)
        if not files or per_level < 1:
            continue
        step = max(1, len(files) // per_level)
        chosen += files[::step][:per_level]
    return chosen


def first_error_line(text: str) -> str:
    """The line that says what went wrong: a ❌ line, an exception line, else the last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for pat in (r"^side_by_side: ", r"^❌", r"^\w+(\.\w+)*(Error|Exception|Interrupt)\b"):
        hits = [ln for ln in lines if re.search(pat, ln)]
        if hits:
            return hits[-1][:240] if "Error" in pat else hits[0][:240]
    return lines[-1][:240] if lines else "(no output)"


def ours_outcome(r: Run) -> str | None:
    """None when our CLI analyzed the file, else the first line of why not."""
    if r.timed_out:
        return f"timed out after {r.wall_s:.0f} s"
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError:
        return f"exit {r.rc}, no JSON: {first_error_line(r.stderr)}"
    if doc.get("error"):
        return str(doc["error"]).splitlines()[0][:240]
    bad = [e for e in doc.get("entries", []) if e.get("status") != "ok"]
    if r.rc != 0 or bad or not doc.get("entries"):
        why = bad[0].get("error") or bad[0].get("status") if bad else "no entries"
        return f"exit {r.rc}: {str(why).splitlines()[0][:240]}"
    return None


def ours_note(r: Run) -> str | None:
    """Verification status and incompleteness of our analysis, for the rows."""
    try:
        entries = json.loads(r.stdout).get("entries", [])
    except json.JSONDecodeError:
        return None
    notes = []
    for e in entries:
        v = (e.get("verification") or {}).get("status")
        inc = (e.get("totals") or {}).get("incomplete")
        notes.append(f"{e.get('name')}: {v or 'not verified'}{', incomplete' if inc else ''}")
    return "; ".join(notes) or None


def peer_outcome(r: Run) -> str | None:
    """None when the peer finished with exit 0, else the first line of why not."""
    if r.timed_out:
        return f"timed out after {r.wall_s:.0f} s"
    if r.rc != 0:
        return f"exit {r.rc}: {first_error_line(r.stderr + chr(10) + r.stdout)}"
    return None


@dataclass
class Tool:
    """How to start one tool on one problem."""

    name: str
    argv: list[str]  # with "{file}" and "{out}" placeholders
    cwd: Path
    env: dict[str, str]
    outcome: object  # Run -> str | None

    def run(self, file: Path, timeout_s: float) -> tuple[Run, str | None]:
        """One fresh process on file; the run and None, or why it failed."""
        with tempfile.TemporaryDirectory(prefix="side-by-side-") as out:
            argv = [a.replace("{file}", str(file)).replace("{out}", out) for a in self.argv]
            r = run_child(argv, self.cwd, self.env, timeout_s)
        return r, self.outcome(r)


def make_tools(args: argparse.Namespace) -> list[Tool]:
    """Ours with verification, ours without, and the peer."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ours_env = dict(env, PYTHONPATH=str(ROOT))
    ours = [args.ours_python, "-m", "solar_lsp.cli", "analyze", "{file}", "--json",
            "--hw", OURS_HW]
    tools = [Tool("ours", ours, ROOT, ours_env, ours_outcome),
             Tool("ours -V", ours + ["--no-verify"], ROOT, ours_env, ours_outcome)]
    peer_dir = Path(args.peer_dir).resolve() if args.peer_dir else Path.cwd()
    if args.peer_cmd:
        argv = shlex.split(args.peer_cmd)
        peer_env = env
    else:
        argv = [args.peer_python, "-c", PEER_DRIVER, "{file}", "{out}"]
        peer_env = dict(env, PYTHONPATH=str(peer_dir))
    tools.append(Tool("peer", argv, peer_dir, peer_env, peer_outcome))
    return tools


def bench(problems: list[Path], tools: list[Tool], repeat: int, timeout_s: float,
          log=sys.stderr) -> list[dict]:
    """Per problem, per tool: median wall time and peak RSS over repeat runs, or the failure."""
    rows = []
    for i, f in enumerate(problems):
        runs: dict[str, list[tuple[Run, str | None]]] = {t.name: [] for t in tools}
        for rep in range(repeat):
            k = (i + rep) % len(tools)  # rotate who goes first
            for t in tools[k:] + tools[:k]:
                runs[t.name].append(t.run(f, timeout_s))
        row = {"problem": f"{f.parent.name}/{f.name}", "loadavg_1m": os.getloadavg()[0]}
        for name, rs in runs.items():
            errs = [e for _, e in rs if e]
            row[name] = {"ok": not errs, "error": errs[0] if errs else None,
                         "wall_s": statistics.median(r.wall_s for r, _ in rs),
                         "rss_mib": statistics.median(r.rss_mib for r, _ in rs),
                         "runs_s": [round(r.wall_s, 3) for r, _ in rs],
                         "note": ours_note(rs[0][0]) if name.startswith("ours") else None}
        rows.append(row)
        print(f"[{i + 1}/{len(problems)}] {row['problem']}: " + "  ".join(
            f"{n} {row[n]['wall_s']:.1f}s {row[n]['rss_mib']:.0f}MiB"
            f"{'' if row[n]['ok'] else ' FAIL'}" for n in runs), file=log, flush=True)
    return rows


def warm_rows(problems: list[Path], rows: list[dict], python: str, timeout_s: float,
              log=sys.stderr) -> None:
    """Add "ours warm" and "ours warm -V" to each row: one ``solar coverage`` process over
    copies of all the problems (the way the language server and ``solar coverage`` run: torch,
    numba and the tracer imported once), per-file seconds from its JSON. The process's peak
    RSS is the max over all files, so each row gets that same figure."""
    env = dict({k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="side-by-side-warm-") as tmp:
        names = {}
        for f in problems:
            name = f"{f.parent.name}_{f.name}"
            (Path(tmp) / name).write_bytes(f.read_bytes())
            names[name] = f"{f.parent.name}/{f.name}"
        for tool, extra in (("ours warm", []), ("ours warm -V", ["--no-verify"])):
            argv = [python, "-m", "solar_lsp.cli", "coverage", tmp, "--json", "--hw", OURS_HW,
                    "--timeout", str(int(timeout_s))] + extra
            r = run_child(argv, ROOT, env, timeout_s * (len(problems) + 1))
            try:
                files = json.loads(r.stdout)["files"]
            except (json.JSONDecodeError, KeyError):
                files = []
            by_name = {Path(x["file"]).name: x for x in files}
            for row in rows:
                x = next((v for k, v in by_name.items() if names.get(k) == row["problem"]), None)
                ok = bool(x) and x.get("analyzed", 0) >= 1 and not x.get("errors")
                row[tool] = {"ok": ok, "error": None if ok else (
                                 (x or {}).get("errors") or "not in coverage output"),
                             "wall_s": (x or {}).get("seconds") or float("nan"),
                             "rss_mib": r.rss_mib, "runs_s": [], "note": None}
            print(f"{tool}: {len(files)} files in {r.wall_s:.1f} s (one process, "
                  f"{r.rss_mib:.0f} MiB peak)", file=log, flush=True)


def _mmm(xs: list[float]) -> dict:
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)} if xs else {}


def summarize(rows: list[dict], tools: list[str]) -> dict:
    """Statistics over the problems every tool analyzed, and the failures of each tool."""
    both = [r for r in rows if all(r[t]["ok"] for t in tools)]
    out = {"problems": len(rows), "all_analyzed": len(both), "tools": {}, "ratios": {},
           "failures": {t: [(r["problem"], r[t]["error"]) for r in rows if not r[t]["ok"]]
                        for t in tools}}
    for t in tools:
        out["tools"][t] = {"wall_s": _mmm([r[t]["wall_s"] for r in both]),
                           "rss_mib": _mmm([r[t]["rss_mib"] for r in both])}
    for t in tools:
        if t == "peer":
            continue
        for q in ("wall_s", "rss_mib"):
            out["ratios"][f"peer/{t} {q}"] = _mmm([r["peer"][q] / r[t][q] for r in both])
    return out


def render(s: dict, header: str) -> str:
    """The summary as plain text (for a terminal and for benchmarks/README.md)."""
    lines = [header, f"problems: {s['problems']}; analyzed by every tool: {s['all_analyzed']}",
             "", f"{'tool':<14}{'time min':>10}{'median':>10}{'max':>10}"
             f"{'RSS min':>12}{'median':>10}{'max':>10}"]
    for t, st in s["tools"].items():
        w, m = st["wall_s"], st["rss_mib"]
        if not w:
            lines.append(f"{t:<14}{'-':>10}")
            continue
        lines.append(f"{t:<14}{w['min']:>9.1f}s{w['median']:>9.1f}s{w['max']:>9.1f}s"
                     f"{m['min']:>8.0f} MiB{m['median']:>6.0f} MiB{m['max']:>6.0f} MiB")
    lines += ["", "per-problem ratio             median     min     max"]
    for k, v in s["ratios"].items():
        if v:
            lines.append(f"{k:<29}{v['median']:>6.2f}×{v['min']:>7.2f}×{v['max']:>7.2f}×")
    for t, fails in s["failures"].items():
        lines.append("")
        lines.append(f"{t} failed on {len(fails)}:" if fails else f"{t} failed on none")
        lines += [f"  {p}: {e}" for p, e in fails]
    return "\n".join(lines)


def warm(tools: list[Tool]) -> None:
    """Untimed `import torch` in each Python tool's interpreter, so the page cache holds torch."""
    seen = set()
    for t in tools:
        if t.argv[1:2] in (["-m"], ["-c"]) and t.argv[0] not in seen:
            seen.add(t.argv[0])
            subprocess.run([t.argv[0], "-c", "import torch"], cwd=t.cwd, env=t.env, check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", required=True, help="KernelBench problem root (holds level1..3)")
    peer = ap.add_mutually_exclusive_group(required=True)
    peer.add_argument("--peer-cmd", help="the peer's command; {file} and {out} are replaced")
    peer.add_argument("--peer-python", help="python of an NVlabs/SOLAR install (its venv)")
    ap.add_argument("--peer-dir", help="NVlabs/SOLAR work tree (cwd of the peer)")
    ap.add_argument("--ours-python", default=sys.executable)
    ap.add_argument("--problems", type=int, default=10, metavar="N", help="per level")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool and problem (median)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run")
    ap.add_argument("--json", metavar="OUT", help="write the rows and the summary here")
    ap.add_argument("--no-warm", action="store_true",
                    help="skip the warm runs (one `solar coverage` process over all problems)")
    args = ap.parse_args(argv)
    if args.peer_python and not args.peer_dir:
        ap.error("--peer-python needs --peer-dir")
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run both tools on the chosen problems and print the comparison."""
    args = parse_args(argv)
    problems = select_problems(Path(args.kb), args.problems)
    if not problems:
        print(f"no problem files under {args.kb}/level1..3", file=sys.stderr)
        return 2
    tools = make_tools(args)
    warm(tools)
    t0 = time.time()
    rows = bench(problems, tools, args.repeat, args.timeout)
    names = [t.name for t in tools]
    if not args.no_warm:
        warm_rows(problems, rows, args.ours_python, args.timeout)
        names = names[:2] + ["ours warm", "ours warm -V"] + names[2:]
    s = summarize(rows, names)
    load = [r["loadavg_1m"] for r in rows]
    header = (f"side_by_side.py: {len(problems)} problems ({args.problems} per level), "
              f"{args.repeat} run(s) per tool, interleaved; {time.time() - t0:.0f} s in all; "
              f"1-min load average after each problem: min {min(load):.2f}, "
              f"median {statistics.median(load):.2f}, max {max(load):.2f} on {os.cpu_count()} CPUs")
    print(render(s, header))
    if args.json:
        doc = {"summary": s, "rows": rows, "header": header,
               "tools": [{"name": t.name, "argv": t.argv, "cwd": str(t.cwd)} for t in tools]}
        Path(args.json).write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
