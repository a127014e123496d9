"""Counts checked at run time beside the values (solar_lsp/verify/counts*.py): tensor FLOPs
against FlopCounterMode / XLA's cost analysis, reductions covering their inputs, the counter
audited against the IR, JAX loop trip counts, and the golden run's redrawn parameters."""

from __future__ import annotations

import dataclasses

import torch
from conftest import only_entry, write

from solar_lsp.bounds import einsum_graph
from solar_lsp.ir.core import Affine, Guard, Kernel, Load, Op, Program, TensorType, call
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.verify.counts import check_counts
from solar_lsp.verify.counts_torch import randomize_parameters

LINEAR = """
    import torch.nn as nn
    import torch


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(96, 48)

        def forward(self, x):
            return torch.relu(self.fc(x))


    def get_inputs():
        return [torch.randn(40, 96)]


    def get_init_inputs():
        return []
    """

ELEMENTWISE = """
    import torch


    # solar: x=f32[32,64]
    def act(x):
        return torch.sigmoid(x) * x + x.sum(dim=1, keepdim=True)
    """

LSTM = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(16, 32)

        def forward(self, x):
            return self.rnn(x)[0]


    def get_inputs():
        return [torch.randn(6, 2, 16)]


    def get_init_inputs():
        return []
    """

SCAN = """
    import jax.numpy as jnp
    from jax import lax


    # solar: x=f32[12,8,32], w=f32[32,32]
    def rnn(x, w):
        def step(h, xt):
            h = jnp.tanh(h @ w + xt)
            return h, h
        return lax.scan(step, jnp.zeros((8, 32)), x)[1]
    """


def verified(path: str):
    e = only_entry(analyze_file(path, Config(verify=True)))
    assert e.status == "ok", e.error
    return e


def test_linear_tensor_flops_match_flop_counter(tmp_path):
    e = verified(write(tmp_path, "lin.py", LINEAR))
    v = e.verification
    assert v["status"] == "verified", v
    c = v["counts"]
    assert c["status"] == "checked", c
    flops = 2 * 40 * 96 * 48  # the hand formula: 2 M N K
    assert c["tensor_flops"] == {"ir": flops, "framework": flops, "counter": "FlopCounterMode",
                                 "ops_compared": 1}
    assert e.totals["tensor_flops"] == flops
    assert "tensor FLOPs match FlopCounterMode" in c["detail"]
    assert c["kernels_audited"] >= 2 and c["issues"] == []


def test_elementwise_model_counts_no_tensor_flops(tmp_path):
    e = verified(write(tmp_path, "ew.py", ELEMENTWISE))
    c = e.verification["counts"]
    assert c["status"] == "checked", c
    assert c["tensor_flops"]["ir"] == c["tensor_flops"]["framework"] == 0
    assert "FlopCounterMode counts no tensor FLOPs, nor does the IR" in c["detail"]
    assert c["reductions_checked"] == 1  # the row sum covers its 64 columns


def test_tensor_flops_counted_as_macs_is_a_count_mismatch(tmp_path, monkeypatch):
    orig = einsum_graph.count_kernel

    def as_macs(k, *a, **kw):
        got = orig(k, *a, **kw)
        return dataclasses.replace(got, tensor_flops=got.macs) if k.unit == "matrix" else got
    monkeypatch.setattr(einsum_graph, "count_kernel", as_macs)
    e = verified(write(tmp_path, "lin.py", LINEAR))
    v = e.verification
    assert v["status"] == "mismatch" and v["detail"].startswith("counts: "), v
    issues = {i["check"]: i["detail"] for i in v["counts"]["issues"]}
    assert set(issues) == {"tensor_flops", "counter"}  # FlopCounterMode, and the audit
    assert f"{40 * 96 * 48:,} tensor FLOPs, FlopCounterMode {2 * 40 * 96 * 48:,}" in issues["tensor_flops"]
    assert all(o["status"] == "verified" for o in v["issues"])  # the values are right


def test_lstm_is_left_unchecked_not_failed(tmp_path):
    """FlopCounterMode counts nothing for the CPU's oneDNN LSTM: that op is unchecked, and
    says why; the entry still verifies."""
    e = verified(write(tmp_path, "lstm.py", LSTM))
    v = e.verification
    assert v["status"] == "verified", v
    c = v["counts"]
    assert c["status"] == "checked"
    [u] = c["unchecked"]
    assert "oneDNN" in u["detail"] and u["check"] == "tensor_flops"


def test_jax_scan_counts_match_xla_times_trips(tmp_path):
    e = verified(write(tmp_path, "scan.py", SCAN))
    c = e.verification["counts"]
    assert c["status"] == "checked", c
    flops = 2 * 8 * 32 * 32 * 12  # one dot per step, 12 steps
    assert c["tensor_flops"]["ir"] == c["tensor_flops"]["framework"] == flops
    assert c["tensor_flops"]["counter"] == "XLA cost_analysis"


def test_jax_scan_counted_one_trip_short_is_caught(tmp_path, monkeypatch):
    from solar_lsp.pipeline import analyze_jax
    orig = analyze_jax.lower

    def short(*a, **kw):
        out = orig(*a, **kw)
        for op in out.program.ops:
            if op.repeat == 12:
                op.repeat = 11
        return out
    monkeypatch.setattr(analyze_jax, "lower", short)
    e = verified(write(tmp_path, "scan.py", SCAN))
    v = e.verification
    assert v["status"] == "mismatch" and v["detail"].startswith("counts: "), v
    checks = {i["check"] for i in v["counts"]["issues"]}
    assert checks == {"repeat", "tensor_flops"}, v["counts"]["issues"]


def _program(extent: int, guard: bool = False) -> Program:
    p = Program("t", tensors={"x": TensorType((4, 16), "float32"), "y": TensorType((4,), "float32")})
    gs = (Guard(Affine.var("j"), 0, 16),) if guard else ()
    k = Kernel("s", (("i", 4), ("j", extent)), Load("y", (Affine.var("i"),)), "+=",
               Load("x", (Affine.var("i"), Affine.var("j"))), guards=gs)
    p.ops.append(Op("sum", "aten.sum.dim_IntList", 3, ["x"], ["y"], [k]))
    return p


def test_reduction_dropping_its_last_element_is_caught():
    assert check_counts(_program(16), None).issues == []
    cc = check_counts(_program(15), None)
    assert cc.status == "mismatch"
    [issue] = cc.issues
    assert issue["check"] == "reduction" and "elements 0..14, missing 15..15" in issue["detail"]
    assert check_counts(_program(15, guard=True), None).issues == []  # a guard reads what it may


def test_counter_audit_catches_a_free_exp(monkeypatch):
    p = Program("t", tensors={"x": TensorType((8,), "float32"), "y": TensorType((8,), "float32")})
    k = Kernel("e", (("i", 8),), Load("y", (Affine.var("i"),)), "=", call("exp", Load("x", (Affine.var("i"),))))
    p.ops.append(Op("exp", "aten.exp.default", 1, ["x"], ["y"], [k]))
    assert check_counts(p, None).issues == []
    monkeypatch.setattr(einsum_graph, "FREE_FUNCS", einsum_graph.FREE_FUNCS | {"exp"})
    table = dict(einsum_graph.SCALAR_FUNCS, exp=(1, False))
    monkeypatch.setattr(einsum_graph, "SCALAR_FUNCS", table)
    [issue] = check_counts(p, None).issues
    assert issue["check"] == "counter" and "0 transcendentals (expected 8)" in issue["detail"]


def test_golden_run_redraws_constant_parameters():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.BatchNorm1d(8)).eval()
    lin = m[0].weight.detach().clone()
    assert randomize_parameters(m, 0) == 6  # LN weight, bias; BN weight, bias, mean, var
    ln, bn = m[1], m[2]
    assert torch.equal(m[0].weight, lin)  # a drawn weight keeps its values
    for t in (ln.weight, ln.bias, bn.weight, bn.bias, bn.running_mean, bn.running_var):
        assert t.unique().numel() == 8, t
    assert bool((bn.running_var >= 1e-3).all() and (bn.running_var <= 2).all())
    assert bool((ln.weight > 0.5 - 1e-6).all() and (ln.weight < 1.5 + 1e-6).all())
    assert int(bn.num_batches_tracked) == 0  # integers are left alone


def test_cli_prints_the_counts_line(tmp_path, cli):
    path = write(tmp_path, "lin.py", LINEAR)
    r = cli("analyze", path)
    assert r.code == 0, r.err
    assert "counts: checked — tensor FLOPs match FlopCounterMode (1 op, " in r.out
