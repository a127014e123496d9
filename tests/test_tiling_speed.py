"""The pruned schedule search (tiling.frontier, issue 17) finds exactly what the exhaustive one
finds: the same frontier, schedule for schedule (tile choices, loop order, working set, bytes),
so the same cache-aware plan and bound. Checked on models whose segments have many split sets
(the concatenations of a DenseNet block, where the exhaustive search took minutes) and on
convolution, inception and residual blocks. The reference is the exhaustive search
(tiling.exhaustive_frontier), the unchanged code path of before the pruning; its time against
the pruned one is printed by benchmarks/bench_tiling.py."""

from __future__ import annotations

import math

import pytest
from conftest import CORPUS, write

from solar_lsp.bounds import cache_ilp, tiling
from solar_lsp.bounds.einsum_graph import build_graph
from solar_lsp.bounds.sol import Policy, op_costs
from solar_lsp.frontend.torch.lower import lower
from solar_lsp.frontend.torch.trace import load_module, trace
from solar_lsp.hardware.chips import load_chip
from solar_lsp.source.discover import discover

DENSE = '''
import torch
import torch.nn as nn


class Layer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.net = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, 2 * growth, 1, bias=False),
                                 nn.BatchNorm2d(2 * growth), nn.ReLU(),
                                 nn.Conv2d(2 * growth, growth, 3, padding=1, bias=False))

    def forward(self, x):
        return self.net(x)


class Model(nn.Module):
    def __init__(self, cin, layers, growth):
        super().__init__()
        self.layers = nn.ModuleList(Layer(cin + i * growth, growth) for i in range(layers))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


def get_inputs():
    return [torch.randn(2, 16, 8, 8)]


def get_init_inputs():
    return [16, 10, 8]
'''


def program_of(path: str):
    src = open(path).read()
    entry = discover(src, path, {"dims": {}, "entries": {}})[0]
    program = lower(trace(load_module(path), entry, path)).program
    return program, op_costs(program, build_graph(program), Policy())


def split_sets(m: tiling.SegModel) -> int:
    n = sum(1 for d in m.dims if len(d.ladder) > 1)
    return sum(math.comb(n, k) for k in range(tiling.max_split(m) + 1))


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    return program_of(write(tmp_path_factory.mktemp("dense"), "dense_block.py", DENSE))


def distinct_models(plan: cache_ilp.Plan) -> list[tiling.SegModel]:
    return list({c.model.key(): c.model for cands in plan.cands for c in cands if c.model is not None}.values())


def test_dense_block_frontiers_equal_the_exhaustive_search(dense):
    plan = cache_ilp.build_plan(*dense)
    models = distinct_models(plan)
    big = [m for m in models if split_sets(m) >= tiling.PRUNE_FROM]
    assert len(big) >= 10, "the block must have segments the pruning applies to"
    assert max(split_sets(m) for m in big) >= 400
    for m in models:
        assert tiling.frontier(m) == tiling.exhaustive_frontier(m), [d.label for d in m.dims]


@pytest.mark.parametrize("name", ["arch_densenet_block.py", "arch_inception_block.py",
                                  "arch_resnet_bottleneck_stage.py", "arch_yolo_c2f.py"])
def test_corpus_frontiers_equal_the_exhaustive_search(name):
    plan = cache_ilp.build_plan(*program_of(str(CORPUS / name)))
    for m in distinct_models(plan):
        assert tiling.frontier(m) == tiling.exhaustive_frontier(m), [d.label for d in m.dims]


def cache_aware(program, costs, chip) -> tuple:
    tiling._FRONTIER.clear()
    cache_ilp._SOLVED.clear()
    plan = cache_ilp.build_plan(program, costs)
    out = []
    for onchip in ("l2", "smem"):
        sol = cache_ilp.solve(plan, cache_ilp.capacity_of(chip, onchip))
        ca = cache_ilp.evaluate_solution(plan, sol, chip)
        out.append((sol.bytes, ca.t_s, ca.bytes, ca.bound, ca.segments))
    return tuple(out)


def test_cache_aware_bound_is_the_same_with_the_exhaustive_search(dense, monkeypatch):
    chip = load_chip("h100-sxm")
    pruned = cache_aware(*dense, chip)
    monkeypatch.setattr(cache_ilp, "frontier", tiling.exhaustive_frontier)
    exhaustive = cache_aware(*dense, chip)
    tiling._FRONTIER.clear()
    assert pruned == exhaustive
    assert pruned[0][0] > 0
