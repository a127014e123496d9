"""The meta tracer (frontend/torch/metatrace.py): the graph it records is the graph torch.export
records, it imports no torch._dynamo, and it takes what export refuses (a forward that
reassigns a tensor attribute, KernelBench L3 33_VanillaRNN)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from conftest import ROOT, line_of, only_entry, write

from solar_lsp.frontend.torch.build import build, load_module
from solar_lsp.frontend.torch.metatrace import MetaProgram
from solar_lsp.frontend.torch.trace import decomp_table, trace
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.source.discover import discover_file

MODELS = {
    # linear, norm and attention kept whole; a view, a factory, a cast, a tensor constant
    "mixed": '''
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = nn.LayerNorm(64)
                self.qkv = nn.Linear(64, 192)

            def forward(self, x):
                q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                m = torch.tril(torch.ones(x.shape[1], x.shape[1]))
                return (a + m.sum()).to(torch.float16) * torch.tensor(0.5)

        def get_inputs():
            return [torch.randn(2, 16, 64)]

        def get_init_inputs():
            return []
    ''',
    # a buffer updated in place: its new value is an output, before the forward's
    "buffer_update": '''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("count", torch.zeros(8))

            def forward(self, x):
                self.count.add_(x.sum(0))
                return torch.relu(x) * 2

        def get_inputs():
            return [torch.randn(4, 8)]

        def get_init_inputs():
            return []
    ''',
    # a recurrent layer (kept whole, its outputs from the shape rule) and a conv
    "lstm_conv": '''
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(8, 16, 3, padding=1)
                self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)

            def forward(self, x):
                y = torch.relu(self.conv(x)).transpose(1, 2)
                out, (h, c) = self.lstm(y)
                return out[:, -1] + h[-1]

        def get_inputs():
            return [torch.randn(4, 8, 20)]

        def get_init_inputs():
            return []
    ''',
}

VANILLA_RNN = '''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.hidden = torch.randn((batch_size, hidden_size))
            self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
            self.h2o = nn.Linear(hidden_size, output_size)
            self.tanh = nn.Tanh()

        def forward(self, x, initial_hidden=None):
            if initial_hidden is not None:
                self.hidden.copy_(initial_hidden)
            self.hidden = self.hidden.to(x.device)
            combined = torch.cat((x, self.hidden), dim=1)
            self.hidden = self.tanh(self.i2h(combined))
            output = self.h2o(self.hidden)
            return output

    batch_size = 8

    def get_inputs():
        return [torch.rand(batch_size, 32), torch.rand(batch_size, 48)]

    def get_init_inputs():
        return [32, 48, 16]
'''


def _signature(graph: torch.fx.Graph) -> list:
    """Each node's kind, op and output shapes and dtypes (names left out). Export's
    ``_assert_tensor_metadata`` nodes (checks its first trace adds to ``.to()``, no data, not
    lowered) are left out: the meta tracer does not record them."""
    out = []
    for n in graph.nodes:
        if n.target is torch.ops.aten._assert_tensor_metadata.default:
            continue
        v = n.meta.get("val")
        vals = [v] if isinstance(v, torch.Tensor) else \
            [x for x in v if isinstance(x, torch.Tensor)] if isinstance(v, (list, tuple)) else []
        out.append((n.op, str(n.target) if n.op == "call_function" else "",
                    [(tuple(x.shape), x.dtype) for x in vals]))
    return out


@pytest.mark.parametrize("case", sorted(MODELS))
def test_meta_graph_is_the_exported_graph(tmp_path, case):
    """Same nodes, in the same order, with the same shapes and dtypes, the same placeholder
    names and the same outputs as torch.export followed by run_decompositions."""
    path = os.path.realpath(write(tmp_path, f"{case}.py", MODELS[case]))
    module, [entry] = load_module(path), discover_file(path)
    traced = trace(module, entry, path)
    assert isinstance(traced.exported, MetaProgram)  # not the export fallback
    model, inputs = build(module, entry, path, "meta")
    with torch.device("meta"):
        ep = torch.export.export(model, inputs, strict=False).run_decompositions(decomp_table())
    assert _signature(traced.exported.graph) == _signature(ep.graph)
    names = [n.name for n in traced.exported.graph.nodes if n.op == "placeholder"]
    assert names == [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    if case == "buffer_update":  # the buffer's new value comes first, as export's mutation output
        assert traced.kinds["b_count"] == "buffer"
        assert len(traced.exported.graph.output_node().args[0]) == 2


def test_traced_lines_point_at_the_source(tmp_path):
    path = os.path.realpath(write(tmp_path, "mixed.py", MODELS["mixed"]))
    traced = trace(load_module(path), discover_file(path)[0], path)
    by_op = {str(n.target): traced.lines[n.name] for n in traced.exported.graph.nodes
             if n.op == "call_function"}
    assert by_op["aten.layer_norm.default"] == line_of(path, "self.qkv(self.norm(x))")
    assert by_op["aten.scaled_dot_product_attention.default"] == line_of(path, "scaled_dot_product")
    assert by_op["aten.tril.default"] == line_of(path, "torch.tril")


def test_tensor_constant_keeps_its_value(tmp_path):
    """torch.tensor(0.5) in the forward: traced on meta, verified with its real value."""
    e = only_entry(analyze_file(write(tmp_path, "mixed.py", MODELS["mixed"]), Config(verify=True)))
    assert e.status == "ok", e.error
    assert e.verification["status"] == "verified", e.verification


def test_reassigned_attribute_is_a_state(tmp_path):
    """KernelBench L3 33_VanillaRNN: export refuses it ("Constant hidden is mutated"); here
    the new hidden state is an output and the entry is counted and verified."""
    path = write(tmp_path, "vanilla_rnn.py", VANILLA_RNN)
    traced = trace(load_module(os.path.realpath(path)), discover_file(path)[0], os.path.realpath(path))
    assert traced.kinds["c_hidden"] == "constant" and traced.targets["c_hidden"] == "hidden"
    outs = traced.exported.graph.output_node().args[0]
    assert [str(o.target) for o in outs] == ["aten.tanh.default", "aten.linear.default"]
    e = only_entry(analyze_file(path, Config(verify=True)))
    assert e.status == "ok", e.error
    assert e.unsupported == []
    assert e.totals["macs"] == 8 * (32 + 48) * 48 + 8 * 48 * 16
    assert e.verification["status"] == "verified", e.verification


def test_analysis_imports_no_dynamo():
    """A cold analysis of an example imports neither torch._dynamo nor torch.export's tracer."""
    code = ("import sys; from solar_lsp.pipeline.analyze import Config, analyze_file; "
            "r = analyze_file('examples/mlp.py', Config(verify=False)); "
            "assert r.entries[0].status == 'ok', r.entries[0].error; "
            "print(sorted(m for m in ('torch._dynamo', 'torch.export._trace') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == "[]"
