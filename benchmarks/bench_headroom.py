"""Measured / SOL over the examples and the corpus on this machine's CPU (host profile).

Prints, per fidelity, the distribution (min, p10, median, p90, max) of measured/bound and any
violation (a ratio below 1 would mean a bound above a real run). With --device cuda on a GPU
machine, the same against the GPU's hardware file.

    python benchmarks/bench_headroom.py [--device cpu|cuda] [--limit N] [DIR_OR_FILE ...]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def files_of(args: list[str]) -> list[pathlib.Path]:
    out: list[pathlib.Path] = []
    for a in args or [str(ROOT / "examples"), str(ROOT / "tests" / "corpus")]:
        p = pathlib.Path(a)
        out += sorted(p.glob("*.py")) if p.is_dir() else [p]
    return out


def q(xs: list[float], f: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--hw", default=None)
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")
    from solar_lsp.measure import headroom as H
    H.MIN_RUNS, H.MIN_TIME_S = 5, 0.2
    files = files_of(a.paths)
    if a.limit:
        files = files[: a.limit]
    ratios: dict[str, list[float]] = {"unfused": [], "fused": [], "cache_aware": []}
    violations, failed = [], []
    diagnoses: dict[str, int] = {}
    if a.device == "cpu" and not os.environ.get("SOLAR_CACHE_DIR"):
        # a fresh host profile of its own: not one left in ~/.cache by an earlier (busy) probe
        import tempfile
        os.environ["SOLAR_CACHE_DIR"] = tempfile.mkdtemp(prefix="solar-bench-")
    t0 = time.perf_counter()
    for i, f in enumerate(files):
        print(f"[{i + 1}/{len(files)}] {f.name}", file=sys.stderr, flush=True)
        try:
            rep = H.headroom_file(str(f), a.device, a.hw)
        except Exception as exc:  # keep going: report it at the end
            failed.append(f"{f.name}: {type(exc).__name__}: {exc}")
            continue
        for e in rep.entries:
            h = e.headroom or {}
            if e.status != "ok" or "error" in h or not h:
                failed.append(f"{f.name}::{e.name}: {h.get('error') or e.error}")
                continue
            diagnoses[h["diagnosis"]] = diagnoses.get(h["diagnosis"], 0) + 1
            # a raised host profile or a beaten bound is a violation, even though the recomputed
            # ratios are >= 1 afterwards
            violations += [f"{f.name}::{e.name}: {w}" for w in h.get("warnings", [])]
            for k, v in h["ratios"].items():
                if v is None:
                    continue
                ratios[k].append(v)
                if v < 1.0 and k != "unfused":
                    violations.append(f"{f.name}::{e.name} {k}: measured {h['measured_s']:.3g} s = {v:.2f}× bound")
    print(f"\n{len(files)} files in {time.perf_counter() - t0:.0f} s on {a.device}")
    print(f"{'fidelity':12} {'n':>4} {'min':>8} {'p10':>8} {'median':>8} {'p90':>8} {'max':>9}")
    for k, xs in ratios.items():
        if xs:
            print(f"{k:12} {len(xs):4d} {min(xs):8.2f} {q(xs, .1):8.2f} {statistics.median(xs):8.2f} "
                  f"{q(xs, .9):8.2f} {max(xs):9.1f}")
    print("diagnoses:", ", ".join(f"{k} {v}" for k, v in sorted(diagnoses.items(), key=lambda x: -x[1])))
    print(f"violations (measured below the fused or cache-aware bound): {len(violations)}")
    for v in violations:
        print("  ", v)
    if failed:
        print(f"not measured: {len(failed)}")
        for x in failed[:20]:
            print("  ", x)


if __name__ == "__main__":
    main()
