"""Cache-aware SOL cost against graph size: fusion plan (groups, candidate segments, schedule
frontiers) and ILP build + solve, for synthesized deep models.

Usage::

    python benchmarks/bench_ilp.py                  # transformer and MLP stacks, several depths
    python benchmarks/bench_ilp.py --layers 1 4 8   # chosen depths
    python benchmarks/bench_ilp.py --json           # figures as JSON on stdout

Each model is written to a temporary file as a ``Model`` with ``get_inputs`` (the convention
``solar analyze`` reads), traced and lowered like any user file; only the fusion plan and the
ILP are timed, from cold caches (frontier and solution caches cleared per model); the ILP is
solved once more for the shared-memory capacity. Wall and this process's CPU time are shown
(the CBC solver runs as a child process, so its time is in the wall figure only).
Target: plan + ILP ≤ 2 s for a 200-node einsum graph.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TRANSFORMER = '''
import sys

import torch
import torch.nn as nn

sys.path.insert(0, ROOT_DIR)
from examples.transformer_block import Model as Block  # the bundled block, stacked


class Model(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.blocks = nn.ModuleList([Block(512, 8, 2048) for _ in range(layers)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


def get_inputs():
    return [torch.randn(4, 256, 512)]


def get_init_inputs():
    return [LAYERS]
'''

MLP = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(1024, 1024) for _ in range(layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(1024) for _ in range(layers)])

    def forward(self, x):
        for lin, ln in zip(self.layers, self.norms):
            x = x + torch.relu(lin(ln(x)))
        return x


def get_inputs():
    return [torch.randn(2048, 1024)]


def get_init_inputs():
    return [LAYERS]
'''


def measure(kind: str, layers: int) -> dict:
    from solar_lsp.bounds import cache_ilp, tiling
    from solar_lsp.bounds.einsum_graph import build_graph
    from solar_lsp.bounds.sol import Policy, op_costs
    from solar_lsp.frontend.torch.lower import lower
    from solar_lsp.frontend.torch.trace import load_module, trace
    from solar_lsp.hardware.chips import load_chip
    from solar_lsp.source.discover import discover

    src = (TRANSFORMER if kind == "transformer" else MLP).replace("LAYERS", str(layers)).replace("ROOT_DIR", repr(str(ROOT)))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
        path = f.name
    try:
        entry = discover(src, path, {"dims": {}, "entries": {}})[0]
        module = load_module(path)
        program = lower(trace(module, entry, path)).program
    finally:
        os.unlink(path)
    graph = build_graph(program)
    costs = op_costs(program, graph, Policy())
    chip = load_chip("h100-sxm")
    tiling._FRONTIER.clear()
    cache_ilp._SOLVED.clear()
    c0 = time.process_time()
    t0 = time.perf_counter()
    plan = cache_ilp.build_plan(program, costs)
    t1 = time.perf_counter()
    sol = cache_ilp.solve(plan, cache_ilp.capacity_of(chip, "l2"))
    t2 = time.perf_counter()
    cpu = time.process_time() - c0
    cache_ilp._SOLVED.clear()
    t3 = time.perf_counter()
    sol_smem = cache_ilp.solve(plan, cache_ilp.capacity_of(chip, "smem"))
    t4 = time.perf_counter()
    ca = cache_ilp.evaluate_solution(plan, sol, chip)
    return {"model": kind, "layers": layers, "graph_nodes": graph.number_of_nodes(),
            "ops": len(program.ops), "groups": len(plan.groups),
            "candidate_segments": sum(len(c) for c in plan.cands),
            "ilp_vars": sol.ilp_vars, "plan_s": t1 - t0, "ilp_s": t2 - t1, "ilp_smem_s": t4 - t3,
            "total_s": t2 - t0, "cpu_s": cpu, "segments": len(ca.segments), "bytes_cache_aware": ca.bytes,
            "segments_smem": len(sol_smem.chosen)}


def main() -> None:
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, nargs="*", default=None)
    ap.add_argument("--models", nargs="*", default=["transformer", "mlp"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from solar_lsp.frontend.torch.trace import warm_up
    warm_up()
    depth = {"transformer": [1, 2, 4, 8, 12], "mlp": [4, 16, 32, 64]}
    rows = []
    for kind in args.models:
        for n in args.layers or depth[kind]:
            rows.append(measure(kind, n))
            if not args.json:
                r = rows[-1]
                print(f"{r['model']:<12} layers {r['layers']:>3}  nodes {r['graph_nodes']:>5}  "
                      f"ops {r['ops']:>5}  groups {r['groups']:>4}  segments {r['candidate_segments']:>5}  "
                      f"ILP vars {r['ilp_vars']:>5}  plan {r['plan_s']:.3f} s  ILP {r['ilp_s']:.3f} s "
                      f"(smem {r['ilp_smem_s']:.3f} s)  total {r['total_s']:.3f} s "
                      f"(CPU {r['cpu_s']:.3f} s; CBC runs in a child process)", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
