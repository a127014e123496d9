"""gpu_truth.py: solar's bounds against published GPU timings of the KernelBench problems.

A Speed-of-Light bound must never exceed a real runtime. KernelBench publishes the runtime of
its PyTorch reference problems on several GPUs (benchmarks/data/kernelbench_timing.csv, made by
extract_kernelbench_timing.py). For every level 1-3 problem with a published time this script runs

    solar analyze <problem file> --hw <every chip timed for that problem> --json --no-verify

(one process per problem, ``--timeout`` seconds each), reads each chip's ``t_fused_s`` and
``t_cache_aware_s`` from the ``Model`` entry's ``by_hardware`` table and compares them with the
MIN over every published mode (eager, torch.compile ...) for that (problem set, machine, chip,
problem). A row is a violation when measured < bound; tightness = measured / bound (>= 1 is sound,
closer to 1 is tighter). Published times have 3 significant digits, so a violation whose bound is
within half a unit of the last digit is marked ``within_rounding``.

The analysed file is the version that was timed: the CSV's ``problem_blob`` is the problem file's
git blob at the commit that wrote the timing JSON. When the checkout's file differs (KernelBench
changed level1/12, 92 and 97 after some v0.2 timings), the timed version is read from the
checkout's git history (``git cat-file``) into the cache directory; when that is impossible the
row is reported as ``stale`` and not compared.

Analyses are cached in ``--cache-dir`` (default ~/.cache/solar-lsp/gpu-truth), keyed on the
problem file's content, the chip files' contents, the extra solar arguments and a fingerprint of
the solar_lsp sources (``--solar-src``), so reruns on unchanged code are cheap.

Usage::

    python benchmarks/gpu_truth.py --kb-v02 /work/kb-head --kb-v01 /work/kb-v01 \\
        --json /tmp/gpu_truth.json [--jobs 1] [--levels 1,2] [--problems '97_*,91_*'] [--limit 10]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import fnmatch
import hashlib
import json
import math
import os
import pathlib
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_CSV = HERE / "data" / "kernelbench_timing.csv"
DEFAULT_CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
DEFAULT_CACHE = DEFAULT_CACHE / "solar-lsp" / "gpu-truth"
SETS = ("v0.1", "v0.2")
WARM_L2 = "@warm-l2"  # solar's chip suffix for runs whose L2 is not flushed between trials


def priced_as(chip: str, l2_flush: str, cold: bool = False) -> str:
    """The ``--hw`` chip a machine's times are checked against: on a machine that does not
    flush L2 between trials (CSV ``l2_flush`` other than ``yes``) the chip's warm-L2 variant,
    whose bound prices what a warm L2 can serve at the L2 bandwidth (docs/sol-model.md
    "Warm L2"); ``cold`` checks every machine against the plain DRAM bound."""
    return chip if cold or l2_flush == "yes" else chip + WARM_L2


# --------------------------------------------------------------------------------------- inputs
def blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def read_timings(path: pathlib.Path) -> list[dict]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["level"] = int(r["level"])
        r["ms"] = float(r["ms"])
    return rows


def problem_number(name: str) -> int:
    m = re.match(r"(\d+)_", name)
    return int(m.group(1)) if m else 0


def matches(problem: str, level: int, patterns: list[str]) -> bool:
    """``problem`` matches a glob or substring, or an ``L<level>/<glob>`` pattern."""
    for pat in patterns:
        lvl = None
        m = re.match(r"[Ll](\d)/(.+)", pat)
        if m:
            lvl, pat = int(m.group(1)), m.group(2)
        if lvl is not None and lvl != level:
            continue
        if fnmatch.fnmatch(problem, pat) or fnmatch.fnmatch(problem, pat + ".py") or pat in problem:
            return True
    return False


def half_ulp_3sig(v: float) -> float:
    """Half a unit of the 3rd significant digit of ``v`` (the rounding of published times)."""
    if v <= 0:
        return 0.0
    return 0.5 * 10 ** (math.floor(math.log10(v)) - 2)


# ------------------------------------------------------------------------------------- solar CLI
def default_solar() -> list[str]:
    exe = pathlib.Path(sys.executable).with_name("solar")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("solar")
    return [found] if found else [sys.executable, "-m", "solar_lsp.cli"]


def code_fingerprint(src: pathlib.Path | None) -> str:
    """Hash of every .py under ``src`` (the solar_lsp package), '' when not given."""
    if src is None or not src.is_dir():
        return ""
    h = hashlib.sha256()
    for p in sorted(src.rglob("*.py")):
        h.update(str(p.relative_to(src)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


class Chips:
    """Resolves chip names to ``--hw`` arguments (TOML paths when known) and checks them once."""

    def __init__(
        self,
        solar: list[str],
        overrides: dict[str, pathlib.Path],
        timeout: float,
        hardware_dir: pathlib.Path = REPO / "hardware",
    ):
        self.solar = solar
        self.hardware_dir = hardware_dir
        self.overrides = overrides
        self.timeout = timeout
        self._ok: dict[str, str | None] = {}

    def arg(self, chip: str) -> str:
        if chip.endswith(WARM_L2):
            return self.arg(chip[: -len(WARM_L2)]) + WARM_L2
        if chip in self.overrides:
            return str(self.overrides[chip])
        path = self.hardware_dir / f"{chip}.toml"
        return str(path) if path.is_file() else chip

    def content(self, chip: str) -> bytes:
        if chip.endswith(WARM_L2):
            return self.content(chip[: -len(WARM_L2)]) + WARM_L2.encode()
        p = pathlib.Path(self.arg(chip))
        return p.read_bytes() if p.is_file() else chip.encode()

    def problem(self, chip: str) -> str | None:
        """None when solar loads the chip, else why not."""
        if chip not in self._ok:
            try:
                r = subprocess.run(
                    [*self.solar, "hw", "show", self.arg(chip)],
                    capture_output=True,
                    text=True,
                    timeout=self.timeout,
                )
                self._ok[chip] = (
                    None
                    if r.returncode == 0
                    else ((r.stderr or r.stdout).strip().splitlines() or ["hw show failed"])[-1]
                )
            except (OSError, subprocess.TimeoutExpired) as e:
                self._ok[chip] = f"hw show failed: {e}"
        return self._ok[chip]


def run_solar(
    solar: list[str], src: pathlib.Path, hw: list[str], extra: list[str], timeout: float
) -> tuple[dict | None, str | None, float]:
    """(JSON document, error text, seconds) of one ``solar analyze`` run."""
    cmd = [*solar, "analyze", str(src), "--hw", ",".join(hw), "--json", "--no-verify", *extra]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(src.parent),
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        return None, f"timeout after {timeout:g} s", time.monotonic() - t0
    dt = time.monotonic() - t0
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        tail = (err or out).strip().splitlines()
        return None, f"exit {proc.returncode}: " + (tail[-1] if tail else "no output"), dt
    return doc, None, dt


def pick_entry(doc: dict) -> tuple[dict | None, str | None]:
    """The ``Model`` entry of an analysis (or the only entry), or why there is none."""
    if doc.get("error"):
        return None, str(doc["error"])
    entries = doc.get("entries") or []
    entry = next((e for e in entries if e.get("name") == "Model"), None)
    if entry is None and len(entries) == 1:
        entry = entries[0]
    if entry is None:
        names = [e.get("name") for e in entries]
        return None, f"no Model entry (entries: {names})"
    if entry.get("status") != "ok":
        return None, str(entry.get("error") or f"entry status {entry.get('status')}")
    return entry, None


# ------------------------------------------------------------------------------------- the jobs
def build_jobs(
    rows: list[dict], kb_dirs: dict[str, pathlib.Path], args
) -> tuple[list[dict], list[dict]]:
    """Group timing rows into analyses: one per (set, level, problem, timed version)."""
    groups: dict[tuple, dict] = {}
    for r in rows:
        s = r["problem_set"]
        if s not in kb_dirs or r["level"] not in args.levels:
            continue
        if args.chips and r["chip"] not in args.chips:
            continue
        if args.problems and not matches(r["problem"], r["level"], args.problems):
            continue
        key = (s, r["level"], r["problem"], r["problem_blob"])
        g = groups.setdefault(
            key,
            {
                "set": s,
                "level": r["level"],
                "problem": r["problem"],
                "blob": r["problem_blob"],
                "timings": defaultdict(dict),
                "timing_commits": set(),
            },
        )
        g["timings"][(r["machine"], r["chip"])][r["mode"]] = r["ms"]
        g.setdefault("l2_flush", {})[r["machine"]] = r.get("l2_flush", "")
        g["timing_commits"].add(r["timing_commit"])

    jobs = sorted(
        groups.values(),
        key=lambda g: (g["set"], g["level"], problem_number(g["problem"]), g["problem"], g["blob"]),
    )
    if args.limit:
        kept, seen = [], defaultdict(set)
        for g in jobs:
            ids = seen[g["set"]]
            if len(ids) < args.limit or (g["level"], g["problem"]) in ids:
                ids.add((g["level"], g["problem"]))
                kept.append(g)
        jobs = kept

    skipped: list[dict] = []
    src_dir = args.cache_dir / "src"
    for g in jobs:
        kb = kb_dirs[g["set"]]
        path = kb / "KernelBench" / f"level{g['level']}" / g["problem"]
        data = path.read_bytes() if path.is_file() else None
        if data is not None and (not g["blob"] or blob_id(data) == g["blob"]):
            g["src"], g["source"] = path, "checkout"
            continue
        if data is not None and args.checkout_files:
            g["src"], g["source"] = path, "checkout-differs"
            continue
        timed = None
        if g["blob"]:
            try:
                timed = subprocess.run(
                    ["git", "-C", str(kb), "cat-file", "blob", g["blob"]],
                    capture_output=True,
                    check=True,
                ).stdout
            except (OSError, subprocess.CalledProcessError):
                timed = None
        if timed is not None:
            dst = src_dir / g["blob"] / g["problem"]
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(timed)
            g["src"], g["source"] = (
                dst,
                "git:" + ",".join(sorted(c[:7] for c in g["timing_commits"])),
            )
        else:
            g["src"], g["source"] = None, "stale"
            why = (
                "missing from the checkout"
                if data is None
                else "checkout differs from the timed version, which git cannot provide"
            )
            skipped.append(
                {"set": g["set"], "level": g["level"], "problem": g["problem"], "reason": why}
            )
    return [g for g in jobs if g["src"] is not None], skipped


def analyse(g: dict, chips: Chips, args, fingerprint: str) -> dict:
    """Run (or fetch from the cache) the analysis of one job; returns the job with results."""
    g["priced_as"] = {
        (m, c): priced_as(c, g["l2_flush"].get(m, ""), args.cold_l2) for m, c in g["timings"]
    }
    names = sorted(set(g["priced_as"].values()))
    g["chip_problems"] = {c: chips.problem(c) for c in names if chips.problem(c)}
    usable = [c for c in names if c not in g["chip_problems"]]
    g["doc"], g["error"], g["seconds"], g["cached"] = None, None, 0.0, False
    if not usable:
        g["error"] = "no loadable chip file"
        return g
    data = g["src"].read_bytes()
    h = hashlib.sha256()
    h.update(hashlib.sha256(data).digest())
    for c in usable:
        h.update(c.encode() + b"\0" + hashlib.sha256(chips.content(c)).digest())
    h.update(("\0".join(args.solar_args) + "\0" + fingerprint).encode())
    key = h.hexdigest()[:32]
    cache = args.cache_dir / "analyses" / f"{key}.json"
    if cache.is_file() and not args.refresh:
        rec = json.loads(cache.read_text())
        g["doc"], g["error"], g["seconds"], g["cached"] = (
            rec["doc"],
            rec["error"],
            rec["seconds"],
            True,
        )
        return g
    doc, err, dt = run_solar(
        chips.solar, g["src"], [chips.arg(c) for c in usable], args.solar_args, args.timeout
    )
    g["doc"], g["error"], g["seconds"] = doc, err, dt
    if doc is not None:  # deterministic outcome (ok or an analysis error): cache it
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {"doc": doc, "error": err, "seconds": dt, "problem": g["problem"], "chips": usable}
            )
        )
        tmp.replace(cache)
    return g


def rows_of(g: dict) -> list[dict]:
    """One output row per (machine, chip) of an analysed job."""
    entry, err = (None, g["error"])
    if g["doc"] is not None and err is None:
        entry, err = pick_entry(g["doc"])
    by_hw = (entry or {}).get("by_hardware") or {}
    out = []
    for (machine, chip), modes in sorted(g["timings"].items()):
        best_mode = min(modes, key=modes.get)
        measured = modes[best_mode]
        row = {
            "set": g["set"],
            "level": g["level"],
            "problem": g["problem"],
            "problem_blob": g["blob"],
            "source": g["source"],
            "machine": machine,
            "chip": chip,
            "measured_ms": measured,
            "best_mode": best_mode,
            "modes": modes,
            "l2_flush": g["l2_flush"].get(machine, ""),
            "analysis_s": round(g["seconds"], 2),
            "cached": g["cached"],
        }
        name = g.get("priced_as", {}).get((machine, chip), chip)
        row["priced_as"] = name
        cp = g["chip_problems"].get(name)
        hw = by_hw.get(name)
        if cp:
            row.update(status="no-chip", error=cp)
        elif err is not None:
            row.update(status="error", error=err)
        elif hw is None:
            row.update(status="error", error=f"no by_hardware entry for {name}")
        else:
            t_f = hw["t_fused_s"] * 1e3
            t_c = hw.get("t_cache_aware_s", hw["t_fused_s"]) * 1e3
            t_u = hw.get("t_unfused_s")
            slack = half_ulp_3sig(measured)
            row.update(
                status="ok",
                error=None,
                t_fused_ms=t_f,
                t_cache_aware_ms=t_c,
                t_unfused_ms=None if t_u is None else t_u * 1e3,
                bound=hw.get("bound"),
                bound_cache_aware=hw.get("bound_cache_aware"),
                tight_fused=measured / t_f if t_f > 0 else None,
                tight_cache_aware=measured / t_c if t_c > 0 else None,
                violation_fused=measured < t_f,
                violation_cache_aware=measured < t_c,
                fused_within_rounding=measured < t_f <= measured + slack,
                cache_aware_within_rounding=measured < t_c <= measured + slack,
            )
        out.append(row)
    return out


# ---------------------------------------------------------------------------------------- report
def fmt_ms(v: float) -> str:
    return f"{v:.4g}"


def report(rows: list[dict], skipped: list[dict], file=sys.stdout) -> None:
    p = lambda *a: print(*a, file=file)  # noqa: E731
    by_chip: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        by_chip[(r["set"], r["machine"], r["chip"])].append(r)
    p("# gpu_truth: solar bounds vs. published KernelBench timings (min over modes)")
    p("# violation: measured < bound; tightness = measured / bound (>= 1 is sound)")
    for (s, machine, chip), rs in sorted(by_chip.items()):
        ok = [r for r in rs if r["status"] == "ok"]
        failed = [r for r in rs if r["status"] != "ok"]
        flush = {r["l2_flush"] for r in rs}
        note = {"yes": "L2 flushed before each trial", "no": "warm L2: no flush between trials"}
        as_ = sorted({r.get("priced_as", chip) for r in rs} - {chip})
        chip = chip + (f" (priced as {', '.join(as_)})" if as_ else "")
        p(
            f"\n## {s} {machine} -> {chip}: {len(ok)} problems checked, {len(failed)} not analysed"
            + (
                f" ({note[next(iter(flush))]})"
                if len(flush) == 1 and next(iter(flush)) in note
                else ""
            )
        )
        if ok:
            tf = [r["tight_fused"] for r in ok if r["tight_fused"]]
            tc = [r["tight_cache_aware"] for r in ok if r["tight_cache_aware"]]
            p(
                f"   measured/t_fused:       median {statistics.median(tf):.3f}  min {min(tf):.3f}"
                f"  max {max(tf):.1f}"
            )
            p(
                f"   measured/t_cache_aware: median {statistics.median(tc):.3f}  min {min(tc):.3f}"
                f"  max {max(tc):.1f}"
            )
        for kind in ("fused", "cache_aware"):
            bad = sorted(
                (r for r in ok if r[f"violation_{kind}"]), key=lambda r: r[f"tight_{kind}"]
            )
            p(
                f"   violations of t_{kind}: {len(bad)}"
                + (
                    f" ({sum(r[f'{kind}_within_rounding'] for r in bad)} within the 3-digit rounding"
                    " of the published time)"
                    if bad
                    else ""
                )
            )
            for r in bad:
                p(
                    f"     L{r['level']} {r['problem']}: bound {fmt_ms(r[f't_{kind}_ms'])} ms > "
                    f"measured {fmt_ms(r['measured_ms'])} ms ({r['best_mode']}), tightness "
                    f"{r[f'tight_{kind}']:.3f}"
                    + ("  [within rounding]" if r[f"{kind}_within_rounding"] else "")
                )
    fails = defaultdict(list)
    seen = set()
    for r in rows:
        if r["status"] != "ok" and (r["set"], r["level"], r["problem"], r["chip"]) not in seen:
            seen.add((r["set"], r["level"], r["problem"], r["chip"]))
            msg = re.sub(r"\s+", " ", str(r["error"]))[:200]
            fails[(r["status"], msg)].append(
                f"{r['set']} L{r['level']}/{r['problem']}[{r['chip']}]"
            )
    problems_failed = {(r["set"], r["level"], r["problem"]) for r in rows if r["status"] == "error"}
    p(f"\n## not analysed: {len(problems_failed)} problem versions failed to analyse")
    for (status, msg), items in sorted(fails.items(), key=lambda kv: -len(kv[1])):
        probs = sorted({i.split("[")[0] for i in items})
        p(f"   [{status}] {msg}\n     {len(probs)} problems: " + ", ".join(probs))
    if skipped:
        p(f"\n## stale (timed version unavailable): {len(skipped)}")
        for s in skipped:
            p(f"   {s['set']} L{s['level']}/{s['problem']}: {s['reason']}")


# ------------------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--kb-v02",
        type=pathlib.Path,
        default=os.environ.get("KB_V02") or os.environ.get("KB_DIR"),
        help="KernelBench git checkout for the v0.2 set (HEAD); env KB_V02 or KB_DIR",
    )
    ap.add_argument(
        "--kb-v01",
        type=pathlib.Path,
        default=os.environ.get("KB_V01"),
        help="KernelBench git checkout for the v0.1 set (7dd9cfa); env KB_V01",
    )
    ap.add_argument("--kb-dir", type=pathlib.Path, default=None, help="alias of --kb-v02")
    ap.add_argument("--csv", type=pathlib.Path, default=DEFAULT_CSV)
    ap.add_argument("--sets", default=",".join(SETS), help="problem sets to check (v0.1,v0.2)")
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument(
        "--problems",
        default="",
        help="comma-separated globs/substrings of problem files; 'L1/97_*' limits a level",
    )
    ap.add_argument("--chips", default="", help="only these chips (comma-separated)")
    ap.add_argument("--limit", type=int, default=0, help="at most N problems per set")
    ap.add_argument("--jobs", type=int, default=1, help="analyses run in parallel (default 1)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per analysis")
    ap.add_argument("--cache-dir", type=pathlib.Path, default=DEFAULT_CACHE)
    ap.add_argument("--refresh", action="store_true", help="ignore cached analyses")
    ap.add_argument(
        "--solar", default="", help="command that runs the solar CLI (default: the venv's solar)"
    )
    ap.add_argument(
        "--solar-src",
        type=pathlib.Path,
        default=REPO / "solar_lsp",
        help="solar_lsp sources hashed into the cache key (default: this checkout)",
    )
    ap.add_argument(
        "--solar-arg",
        action="append",
        default=[],
        dest="solar_args",
        help="extra argument for solar analyze (repeatable), e.g. --solar-arg=--tf32=all",
    )
    ap.add_argument(
        "--hardware-dir",
        type=pathlib.Path,
        default=REPO / "hardware",
        help="where <chip>.toml files are taken from (default: this checkout's hardware/)",
    )
    ap.add_argument(
        "--chip-file",
        action="append",
        default=[],
        metavar="CHIP=PATH",
        help="TOML for a chip the repo lacks, e.g. a10=/path/a10.toml (repeatable)",
    )
    ap.add_argument(
        "--checkout-files",
        action="store_true",
        help="analyse the checkout's file even where it differs from the timed version "
        "(rows are marked source=checkout-differs)",
    )
    ap.add_argument(
        "--cold-l2",
        action="store_true",
        help="check every machine against the DRAM-bandwidth bound, also those that do not "
        "flush L2 between trials (by default those are checked against CHIP@warm-l2)",
    )
    ap.add_argument("--json", type=pathlib.Path, dest="json_out", help="write every row here")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)

    args.levels = {int(x) for x in args.levels.split(",") if x}
    args.problems = [x for x in args.problems.split(",") if x]
    args.chips = {x for x in args.chips.split(",") if x}
    want = [s for s in args.sets.split(",") if s]
    kb_v02 = args.kb_v02 or args.kb_dir
    kb_dirs = {
        s: pathlib.Path(d).resolve()
        for s, d in (("v0.1", args.kb_v01), ("v0.2", kb_v02))
        if d and s in want
    }
    if not kb_dirs:
        ap.error("give --kb-v02 and/or --kb-v01 (or KB_V02 / KB_V01)")
    overrides = {}
    for spec in args.chip_file:
        name, _, path = spec.partition("=")
        if not path:
            ap.error(f"--chip-file wants CHIP=PATH, got {spec!r}")
        overrides[name] = pathlib.Path(path).resolve()
    solar = shlex.split(args.solar) if args.solar else default_solar()
    args.cache_dir = args.cache_dir.expanduser()
    fingerprint = code_fingerprint(args.solar_src)

    rows = read_timings(args.csv)
    jobs, skipped = build_jobs(rows, kb_dirs, args)
    chips = Chips(solar, overrides, timeout=120, hardware_dir=args.hardware_dir.resolve())
    if not args.quiet:
        print(
            f"# {len(jobs)} analyses ({', '.join(f'{s}: {d}' for s, d in kb_dirs.items())}); "
            f"solar: {' '.join(solar)}; code fingerprint {fingerprint or '-'}",
            file=sys.stderr,
        )

    out_rows: list[dict] = []
    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futs = [pool.submit(analyse, g, chips, args, fingerprint) for g in jobs]
        for i, fut in enumerate(cf.as_completed(futs), 1):
            g = fut.result()
            rs = rows_of(g)
            out_rows += rs
            if not args.quiet:
                st = "cached" if g["cached"] else f"{g['seconds']:.1f}s"
                bad = [
                    r["chip"]
                    for r in rs
                    if r["status"] == "ok" and (r["violation_fused"] or r["violation_cache_aware"])
                ]
                err = next((r["error"] for r in rs if r["status"] != "ok"), None)
                print(
                    f"[{i}/{len(jobs)} {time.monotonic() - t0:.0f}s] {g['set']} L{g['level']} "
                    f"{g['problem']} ({st})"
                    + (f" VIOLATION on {','.join(bad)}" if bad else "")
                    + (f" ERROR {str(err)[:120]}" if err else ""),
                    file=sys.stderr,
                    flush=True,
                )
    out_rows.sort(
        key=lambda r: (
            r["set"],
            r["machine"],
            r["chip"],
            r["level"],
            problem_number(r["problem"]),
            r["problem"],
        )
    )
    report(out_rows, skipped)
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(
            json.dumps(
                {
                    "csv": str(args.csv),
                    "kb_dirs": {k: str(v) for k, v in kb_dirs.items()},
                    "solar": solar,
                    "solar_args": args.solar_args,
                    "cold_l2": args.cold_l2,
                    "code_fingerprint": fingerprint,
                    "rows": out_rows,
                    "stale": skipped,
                },
                indent=1,
                default=str,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
