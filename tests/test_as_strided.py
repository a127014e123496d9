"""``as_strided`` from a decomposition (adaptive pooling of a transposed input, as in Swin's
head) is a reshape of its contiguous input and verifies; a striding that reads the storage in
another order stays unlowered with the reason."""

from __future__ import annotations

import textwrap

from solar_lsp.pipeline.analyze import Config, analyze_file

POOL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool1d(1)

    def forward(self, x):
        x = self.avgpool(x.transpose(1, 2))
        return torch.flatten(x, 1)

def get_inputs():
    return [torch.randn(4, 49, 96)]

def get_init_inputs():
    return []
"""

OVERLAP = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.as_strided(x, (3, 4), (1, 2)) * 2

def get_inputs():
    return [torch.randn(16)]

def get_init_inputs():
    return []
"""


def _entry(tmp_path, src):
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(src))
    return analyze_file(str(path), Config()).entries[0]


def test_pooled_transpose_is_lowered_and_verified(tmp_path):
    e = _entry(tmp_path, POOL)
    assert e.status == "ok", e.error
    assert e.unsupported == []
    assert e.verification["status"] == "verified", e.verification


def test_overlapping_strides_stay_unlowered(tmp_path):
    e = _entry(tmp_path, OVERLAP)
    assert [u["op"] for u in e.unsupported] == ["aten.as_strided.default"]
    assert "arbitrary strides" in e.unsupported[0]["reason"]
