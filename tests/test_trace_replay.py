"""Replayed op calls (frontend/torch/metatrace.py ``_Recorder``): an op called again with the
same inputs' metadata, arguments and Python stack gets copies of the nodes its first call
recorded instead of being traced again. The graph must be the one tracing every call gives,
node for node: same ops, same arguments (constants included), same shapes, strides and
dtypes, same source lines; and what the replay may not reuse (a step's own constant, a value
made from Python data, an in-place update) is traced anew."""

from __future__ import annotations

import os

import pytest
import torch
from conftest import only_entry, write

from solar_lsp.frontend.torch import metatrace
from solar_lsp.frontend.torch.build import load_module
from solar_lsp.frontend.torch.trace import trace
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.source.discover import discover_file

MODELS = {
    # a Python loop over time steps (KernelBench L3 34's form)
    "rnn_loop": '''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.i2h = nn.Linear(16 + 32, 32)
                self.h2o = nn.Linear(32, 8)

            def forward(self, x, h):
                outs = []
                for t in range(x.shape[0]):
                    h = torch.tanh(self.i2h(torch.cat((x[t], h), dim=1)))
                    outs.append(self.h2o(h))
                return torch.stack(outs, dim=0)

        def get_inputs():
            return [torch.randn(12, 4, 16), torch.randn(4, 32)]

        def get_init_inputs():
            return []
    ''',
    # identical layers: the same calls at the same lines on different weights
    "layers": '''
        import torch
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = nn.LayerNorm(64)
                self.fc = nn.Linear(64, 64)

            def forward(self, x):
                return x + torch.nn.functional.gelu(self.fc(self.norm(x)))

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.Sequential(*[Block() for _ in range(6)])

            def forward(self, x):
                return self.blocks(x).softmax(-1)

        def get_inputs():
            return [torch.randn(2, 8, 64)]

        def get_init_inputs():
            return []
    ''',
    # what a step must not reuse: its own scalar, a tensor from Python data, an in-place update
    "per_step_values": '''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                acc = torch.zeros_like(x)
                for t in range(5):
                    y = x * (t + 0.5) - 0.0 * t
                    y = y + torch.tensor(float(t))
                    acc.add_(torch.relu(y))
                    acc = acc * -0.0 if t == 3 else acc
                return acc

        def get_inputs():
            return [torch.randn(3, 7)]

        def get_init_inputs():
            return []
    ''',
    # CPU tensors (an explicit device="cpu" stays on the CPU): their results depend on their
    # values, which a replay keyed on metadata would copy from the first step
    "cpu_values": '''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, x):
                lens = torch.tensor([3, 5, 7], device="cpu")
                a = torch.arange(4, device="cpu")
                out = []
                for i in range(3):
                    k = int(lens[i].item())
                    b = torch.ones(4, dtype=torch.long, device="cpu")
                    out.append(x[:, :k].sum() * (a + b).sum())
                return torch.stack(out)

        def get_inputs():
            return [torch.randn(2, 8)]

        def get_init_inputs():
            return []
    ''',
}


def graph_of(path: str, replay: bool, monkeypatch) -> tuple[list, int]:
    """Each node's op, target, arguments (nodes by position), values' metadata and line; and
    the number of replayed calls."""
    monkeypatch.setattr(metatrace, "REPLAY", replay)
    path = os.path.realpath(path)
    traced = trace(load_module(path), discover_file(path)[0], path)
    assert isinstance(traced.exported, metatrace.MetaProgram)  # (not export's fallback)
    nodes = list(traced.exported.graph.nodes)
    at = {n: i for i, n in enumerate(nodes)}

    def arg(a):
        return ("node", at[a]) if isinstance(a, torch.fx.Node) else \
            [arg(x) for x in a] if isinstance(a, (list, tuple)) else (type(a).__name__, repr(a))

    out = []
    for n in nodes:
        v = n.meta.get("val")
        vals = [v] if isinstance(v, torch.Tensor) else \
            [x for x in v if isinstance(x, torch.Tensor)] if isinstance(v, (list, tuple)) else []
        out.append((n.op, str(n.target), arg(n.args), {k: arg(x) for k, x in n.kwargs.items()},
                    [(tuple(x.shape), x.stride(), x.dtype) for x in vals], traced.lines[n.name]))
    return out, traced.exported.replayed


@pytest.mark.parametrize("case", sorted(MODELS))
def test_replayed_graph_is_the_traced_graph(tmp_path, monkeypatch, case):
    path = write(tmp_path, f"{case}.py", MODELS[case])
    traced, none = graph_of(path, False, monkeypatch)
    replayed, n = graph_of(path, True, monkeypatch)
    assert none == 0
    assert replayed == traced
    if case == "rnn_loop":  # every step after the first: cat, two linears, tanh
        assert n >= 4 * 11
    if case == "layers":  # five blocks of six replay the first one's calls
        assert n >= 5 * 3


def test_a_key_blind_to_arguments_would_be_caught(tmp_path, monkeypatch):
    """The comparison above has teeth: a replay keyed without the non-tensor arguments reuses
    step 0's scalar in every step, and the graphs differ."""
    path = write(tmp_path, "per_step_values.py", MODELS["per_step_values"])
    traced, _ = graph_of(path, False, monkeypatch)
    key = metatrace._Recorder._key

    def blind(self, func, args, kwargs):
        k = key(self, func, args, kwargs)
        return None if k is None else (k[0], k[3], k[4], tuple(p for p in k[2] if len(p) > 2))

    monkeypatch.setattr(metatrace._Recorder, "_key", blind)
    wrong, n = graph_of(path, True, monkeypatch)
    assert n > 0 and wrong != traced


def test_replayed_loop_counts_and_verifies_as_traced(tmp_path, monkeypatch):
    """The analysis of a replayed trace: the same totals per line as tracing every call, and
    verified against torch."""
    path = write(tmp_path, "rnn_loop.py", MODELS["rnn_loop"])
    results = []
    for replay in (False, True):
        monkeypatch.setattr(metatrace, "REPLAY", replay)
        e = only_entry(analyze_file(path, Config(verify=True)))
        assert e.status == "ok", e.error
        assert e.verification["status"] == "verified", e.verification
        results.append((e.totals["flops"], e.totals["bytes_unfused"], e.totals["bytes_fused"],
                        [(ln.line, ln.flops, ln.bytes, ln.t_unfused_s) for ln in e.lines]))
    assert results[0] == results[1]
