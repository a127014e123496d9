"""Every lowering family of the engine issue: analyzed, verified by numba against torch,
and the matrix-unit FLOPs equal torch's own FlopCounterMode."""

from __future__ import annotations

import os

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from solar_lsp.frontend.torch.trace import build, load_module
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.source.discover import discover_file

ZOO = os.path.join(os.path.dirname(__file__), "zoo", "ops.py")
NAMES = [e.name for e in discover_file(ZOO)]


@pytest.fixture(scope="module")
def report():
    return {e.name: e for e in analyze_file(ZOO, Config()).entries}


@pytest.fixture(scope="module")
def module():
    return load_module(ZOO)


def test_zoo_has_every_family():
    assert len(NAMES) >= 20


@pytest.mark.parametrize("name", NAMES)
def test_lowering_verified(report, name):
    e = report[name]
    assert e.status == "ok", e.error
    assert e.unsupported == []
    assert e.verification["status"] == "verified", e.verification


@pytest.mark.parametrize("name", NAMES)
def test_tensor_flops_equal_flop_counter(report, module, name):
    entry = next(x for x in discover_file(ZOO) if x.name == name)
    model, inputs = build(module, entry, ZOO, device="cpu")
    # On the CPU, sdpa dispatches to a flash kernel FlopCounterMode does not count; its math
    # backend runs the same contractions as matmuls, which it does count.
    with sdpa_kernel([SDPBackend.MATH]), FlopCounterMode(display=False) as fc, torch.no_grad():
        model(*inputs)
    # FlopCounterMode prices a causal mask's full square; tensor_flops leaves the masked half out
    assert report[name].totals["tensor_flops_dense"] == fc.get_total_flops()
    assert report[name].totals["tensor_flops"] <= report[name].totals["tensor_flops_dense"]
