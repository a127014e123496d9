"""Cache-aware stage: the pruned schedule search (tiling.frontier) against the exhaustive one
(tiling.exhaustive_frontier, the search before issue 17), on big KernelBench level-3 models.

Usage::

    python benchmarks/bench_tiling.py --kb /work/kb-head        # the default models below
    python benchmarks/bench_tiling.py --kb DIR --models 16_DenseNet201 12_VGG19
    python benchmarks/bench_tiling.py --kb DIR --exhaustive-limit 120   # cap the slow side

For each model (``DIR/KernelBench/level3/NAME.py``, or any path given) the file is traced and
lowered as ``solar analyze`` does; then, from cold caches:

* ``plan s``: ``build_plan`` (groups, candidate segments, schedule frontiers) with the pruned
  search: the cache-aware stage before the ILP;
* ``pruned s`` / ``exhaustive s``: the schedule search alone, over the distinct segment models of
  that plan (cheapest first, the two searches alternating model by model), by each search;
  ``ratio`` = exhaustive / pruned. The exhaustive side stops once it has spent
  ``--exhaustive-limit`` seconds; its time and ratio then read ``>``;
* ``same``: whether every frontier the exhaustive side finished equals the pruned one, schedule
  for schedule.

Times are wall seconds of this process; run it on an idle machine for stable figures.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = ["14_DenseNet121DenseBlock", "15_DenseNet121", "16_DenseNet201", "10_ResNet101", "12_VGG19",
          "24_EfficientNetB2", "20_MobileNetV2"]


def program_of(path: str):
    """The lowered program and per-op costs of a model file, as ``solar analyze`` builds them."""
    from solar_lsp.bounds.einsum_graph import build_graph
    from solar_lsp.bounds.sol import Policy, op_costs
    from solar_lsp.frontend.torch.lower import lower
    from solar_lsp.frontend.torch.trace import load_module, trace
    from solar_lsp.source.discover import discover

    src = Path(path).read_text()
    entry = discover(src, path, {"dims": {}, "entries": {}})[0]
    program = lower(trace(load_module(path), entry, path)).program
    return program, op_costs(program, build_graph(program), Policy())


def measure(path: str, limit: float) -> dict:
    from solar_lsp.bounds import cache_ilp, tiling

    program, costs = program_of(path)
    tiling._FRONTIER.clear()
    cache_ilp._SOLVED.clear()
    t0 = time.perf_counter()
    plan = cache_ilp.build_plan(program, costs)
    plan_s = time.perf_counter() - t0
    models = list({c.model.key(): c.model for cands in plan.cands for c in cands if c.model is not None}.values())
    models.sort(key=_split_sets)  # cheapest first; the two searches alternate model by model
    pruned_s, exhaustive_s, done, same = 0.0, 0.0, 0, True
    for m in models:
        t = time.perf_counter()
        front = tiling._frontier(m)
        pruned_s += time.perf_counter() - t
        if exhaustive_s <= limit:
            t = time.perf_counter()
            same = same and tiling.exhaustive_frontier(m) == front
            exhaustive_s += time.perf_counter() - t
            done += 1
    return {"model": Path(path).stem, "ops": len(program.ops), "segment_models": len(models),
            "split_sets": sum(_split_sets(m) for m in models), "plan_s": plan_s, "pruned_s": pruned_s,
            "exhaustive_s": exhaustive_s, "exhaustive_done": done, "same": same}


def _split_sets(m) -> int:
    from solar_lsp.bounds import tiling

    n = sum(1 for d in m.dims if len(d.ladder) > 1)
    return sum(math.comb(n, k) for k in range(tiling.max_split(m) + 1))


def main() -> None:
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", default=os.environ.get("KB_DIR", "/work/kb-head"), help="KernelBench checkout")
    ap.add_argument("--models", nargs="*", default=MODELS, help="level-3 problem names or file paths")
    ap.add_argument("--exhaustive-limit", type=float, default=300.0, help="seconds per model for the exhaustive side")
    args = ap.parse_args()
    from solar_lsp.frontend.torch.trace import warm_up
    warm_up()
    print(f"{'model':<26} {'ops':>4} {'segs':>5} {'split sets':>10} {'plan s':>8} {'pruned s':>9} "
          f"{'exhaustive s':>13} {'ratio':>7}  same")
    for name in args.models:
        path = name if name.endswith(".py") else str(Path(args.kb) / "KernelBench" / "level3" / f"{name}.py")
        r = measure(path, args.exhaustive_limit)
        cut = r["exhaustive_done"] < r["segment_models"]
        mark = ">" if cut else ""
        ratio = r["exhaustive_s"] / max(r["pruned_s"], 1e-9)
        note = f" ({r['exhaustive_done']} of {r['segment_models']} segment models)" if cut else ""
        print(f"{r['model']:<26} {r['ops']:>4} {r['segment_models']:>5} {r['split_sets']:>10} "
              f"{r['plan_s']:>8.2f} {r['pruned_s']:>9.2f} {mark + format(r['exhaustive_s'], '.2f'):>13} "
              f"{mark + format(ratio, '.1f'):>7}  {'yes' if r['same'] else 'NO'}{note}", flush=True)


if __name__ == "__main__":
    main()
