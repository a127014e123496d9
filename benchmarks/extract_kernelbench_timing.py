"""Regenerate benchmarks/data/kernelbench_timing.csv from KernelBench checkouts.

KernelBench (github.com/ScalingIntelligence/KernelBench, MIT) publishes the runtime of its
PyTorch reference problems on several GPUs under ``results/timing/<machine>/baseline_time_torch*.json``
(one file per execution mode: eager, torch.compile with various backends/modes; per level and
problem file: mean/std/min/max over 100 trials, in ms). This script flattens those files into one
CSV row per (problem set, machine, level, problem, mode), keeping the MIN of the 100 trials as
``ms`` (the mean/std/max are kept too).

Two problem sets are read, each from its own git checkout (a clone or ``git worktree``):

* ``--kb-v02 DIR`` (env ``KB_V02``, else ``KB_DIR``): KernelBench HEAD, v0.2 problem sizes.
* ``--kb-v01 DIR`` (env ``KB_V01``): commit 7dd9cfa (or a147f37), v0.1 problem sizes.

Provenance columns make the CSV checkable against the problem files that were actually timed:
``timing_commit`` is the last commit that wrote the JSON file, ``problem_blob`` the git blob id
of the problem file at that commit (which can differ from the checkout: e.g. level1/97 was fp16
when H100_Modal was timed and is fp32 at HEAD). ``torch_version`` is the torch pin of the
repository at ``timing_commit`` (requirements.txt or pyproject.toml). ``chip`` is solar's chip
name for the JSON's ``hardware`` string (a machine directory can mix cards: A10G_modal holds
both "NVIDIA A10G" and "NVIDIA A10" rows, A100_modal a few "A100-SXM4-80GB" rows).

Usage::

    python benchmarks/extract_kernelbench_timing.py --kb-v02 /work/kb-head --kb-v01 /work/kb-v01
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "data" / "kernelbench_timing.csv"

#: torch.cuda.get_device_name() as recorded in the JSON "hardware" field -> solar chip name.
HARDWARE_TO_CHIP = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA B200": "b200",
    "NVIDIA A100-SXM4-80GB": "a100-sxm",
    "NVIDIA A100-SXM4-40GB": "a100-40gb",
    "NVIDIA L40S": "l40s",
    "NVIDIA L4": "l4",
    "Tesla T4": "t4",
    "NVIDIA A10G": "a10g",
    "NVIDIA A10": "a10",
}

COLUMNS = [
    "problem_set",
    "kb_commit",
    "timing_commit",
    "machine",
    "hardware",
    "chip",
    "level",
    "problem",
    "problem_blob",
    "mode",
    "ms",
    "mean_ms",
    "std_ms",
    "max_ms",
    "num_trials",
    "torch_version",
    "l2_flush",
]

#: Files that held the timing loop KernelBench's baseline scripts call, over its history.
TIMING_SOURCES = ("src/kernelbench/timing.py", "src/kernelbench/eval.py", "src/eval.py")


def git(repo: pathlib.Path, *args: str) -> str | None:
    """Output of ``git -C repo args``, or None when git or the object is unavailable."""
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout


def blob_id(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def mode_of(json_name: str) -> str:
    """``baseline_time_torch_compile_inductor_default.json`` -> ``compile-inductor-default``."""
    stem = json_name.removesuffix(".json").removeprefix("baseline_time_torch").strip("_")
    return stem.replace("_", "-") if stem else "eager"


def torch_pin(repo: pathlib.Path, commit: str | None) -> str:
    """The ``torch==X`` pin of the repository at ``commit`` ('' when unknown)."""
    # pyproject.toml first: from late 2025 the timing scripts install with `uv sync`, which
    # follows pyproject.toml (requirements.txt then only pins a range, e.g. torch==2.9.*).
    for path in ("pyproject.toml", "requirements.txt"):
        text = git(repo, "show", f"{commit}:{path}") if commit else None
        if text is None and commit is None:
            try:
                text = (repo / path).read_text()
            except OSError:
                text = None
        if text:
            m = re.search(r"""["']?torch==([0-9][^"',\s]*)""", text)
            if m:
                return m.group(1)
    return ""


def flushes_l2(repo: pathlib.Path, commit: str | None) -> str:
    """'yes' when ``time_execution_with_cuda_event`` at ``commit`` thrashes L2 before each trial.

    KernelBench added ``clear_l2_cache()`` to its timing loop in late 2025 ("we care about cold
    cache performance"); earlier timings ran the trials back to back, so inputs and weights that
    fit in L2 stay there from one trial to the next. Returns 'no' when the loop has no such call
    and '' when the loop cannot be found.
    """
    for path in TIMING_SOURCES:
        text = git(repo, "show", f"{commit}:{path}") if commit else None
        if not text:
            continue
        m = re.search(r"^def time_execution_with_cuda_event\(.*?(?=^def |\Z)", text, re.M | re.S)
        if not m:
            continue
        code = "\n".join(line.split("#", 1)[0] for line in m.group(0).splitlines())
        return "yes" if "clear_l2_cache(" in code else "no"
    return ""


def problem_blobs(repo: pathlib.Path, commit: str | None) -> dict[str, str]:
    """``KernelBench/levelN/file.py`` -> blob id at ``commit`` (or of the checkout's files)."""
    if commit:
        out = git(repo, "ls-tree", "-r", commit, "--", "KernelBench")
        if out is not None:
            blobs = {}
            for line in out.splitlines():
                meta, path = line.split("\t", 1)
                blobs[path] = meta.split()[2]
            return blobs
    return {
        str(p.relative_to(repo)): blob_id(p.read_bytes())
        for p in (repo / "KernelBench").glob("level*/*.py")
    }


def extract(repo: pathlib.Path, problem_set: str) -> tuple[list[dict], list[str]]:
    """Rows for one checkout, and notes on entries that were skipped."""
    repo = repo.resolve()
    timing = repo / "results" / "timing"
    if not timing.is_dir():
        raise SystemExit(f"{repo}: no results/timing directory (is this a KernelBench checkout?)")
    kb_commit = (git(repo, "rev-parse", "HEAD") or "").strip()
    rows: list[dict] = []
    notes: list[str] = []
    unknown: set[str] = set()
    for path in sorted(timing.glob("*/baseline_time_torch*.json")):
        machine = path.parent.name
        if machine == "old":  # superseded L40S runs kept by KernelBench for reference
            continue
        rel = str(path.relative_to(repo))
        timing_commit = (git(repo, "log", "-1", "--format=%H", "HEAD", "--", rel) or "").strip()
        blobs = problem_blobs(repo, timing_commit or None)
        torch_version = torch_pin(repo, timing_commit or None)
        l2_flush = flushes_l2(repo, timing_commit or None)
        mode = mode_of(path.name)
        data = json.loads(path.read_text())
        for level_key, problems in data.items():
            level = int(level_key.removeprefix("level"))
            for problem, stats in problems.items():
                if not stats:
                    notes.append(
                        f"{problem_set} {machine} {mode} level{level}/{problem}: null entry"
                    )
                    continue
                hardware = stats.get("hardware", "")
                chip = HARDWARE_TO_CHIP.get(hardware)
                if chip is None:
                    unknown.add(hardware)
                    continue
                rows.append(
                    {
                        "problem_set": problem_set,
                        "kb_commit": kb_commit,
                        "timing_commit": timing_commit,
                        "machine": machine,
                        "hardware": hardware,
                        "chip": chip,
                        "level": level,
                        "problem": problem,
                        "problem_blob": blobs.get(f"KernelBench/level{level}/{problem}", ""),
                        "mode": mode,
                        "ms": stats["min"],
                        "mean_ms": stats.get("mean", ""),
                        "std_ms": stats.get("std", ""),
                        "max_ms": stats.get("max", ""),
                        "num_trials": stats.get("num_trials", ""),
                        "torch_version": torch_version,
                        "l2_flush": l2_flush,
                    }
                )
    if unknown:
        raise SystemExit(
            f"{repo}: hardware strings with no chip mapping: {sorted(unknown)}; "
            "add them to HARDWARE_TO_CHIP"
        )
    return rows, notes


def problem_number(name: str) -> int:
    m = re.match(r"(\d+)_", name)
    return int(m.group(1)) if m else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--kb-v02",
        type=pathlib.Path,
        default=os.environ.get("KB_V02") or os.environ.get("KB_DIR"),
        help="KernelBench checkout with v0.2 problems (HEAD); env KB_V02 or KB_DIR",
    )
    ap.add_argument(
        "--kb-v01",
        type=pathlib.Path,
        default=os.environ.get("KB_V01"),
        help="KernelBench checkout with v0.1 problems (7dd9cfa / a147f37); env KB_V01",
    )
    ap.add_argument("-o", "--out", type=pathlib.Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    if not args.kb_v02 and not args.kb_v01:
        ap.error("give --kb-v02 and/or --kb-v01 (or set KB_V02 / KB_V01)")

    rows: list[dict] = []
    notes: list[str] = []
    for problem_set, repo in (("v0.1", args.kb_v01), ("v0.2", args.kb_v02)):
        if repo:
            r, n = extract(pathlib.Path(repo), problem_set)
            rows += r
            notes += n
    rows.sort(
        key=lambda r: (
            r["problem_set"],
            r["machine"],
            r["level"],
            problem_number(r["problem"]),
            r["problem"],
            r["mode"],
            r["chip"],
        )
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {args.out}")
    for note in notes:
        print(f"  skipped: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
