"""Recurrent layers lowered once per step with ``repeat`` = T (frontend/torch/lower_recurrent.py)
against the unrolled form, and their verification by replaying the loop (verify/parts.py); the
recurrent ops' shape rule while tracing (frontend/torch/fake_recurrent.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import re

import pytest
import torch
from conftest import only_entry, write

from solar_lsp.bounds.sol import part_of, parts_by_owner
from solar_lsp.frontend.torch import lower_recurrent, metatrace
from solar_lsp.frontend.torch import trace as torch_trace
from solar_lsp.frontend.torch.lower import lower
from solar_lsp.frontend.torch.trace import load_module
from solar_lsp.ir.core import Call, Kernel
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.source.discover import discover_file
from solar_lsp.verify.check_torch import golden_run
from solar_lsp.verify.parts import check_with_parts

MODEL = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.{cls}(6, 8, num_layers=2, batch_first={bf}, bidirectional={bd}{extra})

    def forward(self, x{hx}):
        out, state = self.rnn(x{hxarg})
        return out, state


def get_inputs():
    return [torch.randn({xs}){hxin}]


def get_init_inputs():
    return []
"""

T = 7
CASES = {  # name: (cls, batch_first, bidirectional, extra, given initial states)
    "lstm_bidir_bf_states": ("LSTM", True, True, "", True),
    "lstm_proj": ("LSTM", False, False, ", proj_size=3", False),
    "gru_bidir": ("GRU", False, True, "", False),
    "gru_states_nobias": ("GRU", True, False, ", bias=False", True),
    "rnn_relu_bidir": ("RNN", False, True, ", nonlinearity='relu'", False),
    "rnn_tanh": ("RNN", True, False, "", False),
}
TOTALS = ("macs", "flops", "tensor_flops", "vector_flops", "transcendentals", "sfu_ops",
          "bytes_unfused", "bytes_fused", "bytes_cache_aware", "t_unfused_s", "t_fused_s",
          "t_cache_aware_s")


def model_source(cls: str, bf: bool, bd: bool, extra: str, states: bool) -> str:
    xs = f"3, {T}, 6" if bf else f"{T}, 3, 6"
    d = 2 if bd else 1
    hx = hxarg = hxin = ""
    if states:
        hout = 8
        if cls == "LSTM":
            hx, hxarg = ", h, c", ", (h, c)"
            hxin = f", torch.randn({2 * d}, 3, {hout}), torch.randn({2 * d}, 3, 8)"
        else:
            hx, hxarg, hxin = ", h", ", h", f", torch.randn({2 * d}, 3, {hout})"
    return MODEL.format(cls=cls, bf=bf, bd=bd, extra=extra, hx=hx, hxarg=hxarg, xs=xs, hxin=hxin)


def analyze(path: str, unrolled: bool, verify: bool = False):
    old = lower_recurrent.UNROLLED
    lower_recurrent.UNROLLED = unrolled
    try:
        return only_entry(analyze_file(path, Config(verify=verify, hw=["h100-sxm", "a100-sxm"])))
    finally:
        lower_recurrent.UNROLLED = old


@pytest.mark.parametrize("case", sorted(CASES))
def test_loop_form_counts_and_bounds_equal_the_unrolled(tmp_path, case):
    """Counts, unfused/fused/cache-aware bytes and times on two chips: the same whether each
    step is emitted once per time step or once with ``repeat`` = T."""
    path = write(tmp_path, f"{case}.py", model_source(*CASES[case]))
    unrolled, looped = analyze(path, True), analyze(path, False)
    assert unrolled.status == looped.status == "ok", (unrolled.error, looped.error)
    assert not looped.unsupported
    for key in TOTALS:
        assert looped.totals[key] == unrolled.totals[key], key
    for chip, fid in unrolled.by_hardware.items():
        for key in ("t_unfused_s", "t_fused_s", "t_cache_aware_s"):
            assert looped.by_hardware[chip][key] == fid[key], (chip, key)
    assert looped.graph["kernels"] * 2 < unrolled.graph["kernels"]  # the steps are not copied


def test_each_direction_is_one_loop_body_run_t_times(tmp_path):
    path = write(tmp_path, "m.py", model_source(*CASES["lstm_bidir_bf_states"]))
    p = lower(torch_trace.trace(load_module(path), discover_file(path)[0], path)).program
    owners = parts_by_owner(p)
    [(owner, parts)] = owners.items()
    steps = [q for q in parts if q.repeat > 1]
    assert [q.repeat for q in steps] == [T] * 4  # 2 layers x 2 directions
    assert all(q.inputs == [] and q.outputs == [] for q in parts)  # traffic is on the owner
    assert [op.id for op in p.ops].index(owner) > max(p.ops.index(q) for q in parts)
    assert sum(part_of(op) is None for op in p.ops if op.target.startswith("aten.lstm")) == 1


@pytest.mark.parametrize("case", ["lstm_bidir_bf_states", "lstm_proj", "gru_bidir", "rnn_relu_bidir"])
def test_loop_form_verifies_against_torch(tmp_path, case):
    path = write(tmp_path, f"{case}.py", model_source(*CASES[case]))
    e = analyze(path, False, verify=True)
    assert e.verification["status"] == "verified", e.verification
    assert e.verification["counts"]["status"] == "checked", e.verification["counts"]


def _mutated(k: Kernel) -> Kernel:
    """``k`` with its outermost function swapped (tanh <-> sigmoid, add -> sub, max(x, 0) -> tanh)."""
    e = k.expr
    assert isinstance(e, Call)
    if e.fn == "max":
        return dataclasses.replace(k, expr=Call("tanh", e.args[:1]))
    swap = {"tanh": "sigmoid", "sigmoid": "tanh", "add": "sub", "mul": "add"}
    return dataclasses.replace(k, expr=Call(swap[e.fn], e.args))


@pytest.mark.parametrize("case", ["rnn_tanh", "gru_bidir"])
def test_replay_catches_a_wrong_step(tmp_path, case):
    """A step kernel computing something else is a mismatch: the replay runs the loop body,
    not the unrolled form."""
    path = write(tmp_path, f"{case}.py", model_source(*CASES[case]))
    module = load_module(path)
    traced = torch_trace.trace(module, discover_file(path)[0], path)
    lowered = lower(traced)
    p = lowered.program
    golden = golden_run(traced, lowered, module, 0)
    [(owner_id, parts)] = parts_by_owner(p).items()
    owner = next(op for op in p.ops if op.id == owner_id)
    assert check_with_parts(p, owner, parts, golden).status == "verified"
    step = next(q for q in parts if q.repeat > 1)
    i = next(i for i, k in enumerate(step.kernels) if re.fullmatch(r"h\d+", k.name.split("_")[-1]))
    step.kernels[i] = _mutated(step.kernels[i])
    bad = check_with_parts(p, owner, parts, golden)
    assert bad.status == "mismatch", bad.detail


def _signature(path: str) -> list:
    t = torch_trace.trace(load_module(path), discover_file(path)[0], path)
    out = []
    for n in t.exported.graph.nodes:
        v = n.meta.get("val")
        vals = [v] if isinstance(v, torch.Tensor) else [x for x in (v or ()) if isinstance(x, torch.Tensor)] \
            if isinstance(v, (list, tuple)) else []
        out.append((n.op, str(n.target), [(tuple(x.shape), x.stride(), x.dtype) for x in vals]))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_shape_rule_traces_what_the_decomposition_traces(tmp_path, case, monkeypatch):
    """The exported graph (ops, output shapes, strides, dtypes) is the same with the shape rule
    as with torch's step-by-step decomposition on fake tensors."""
    path = write(tmp_path, f"{case}.py", model_source(*CASES[case]))
    fast = _signature(path)
    monkeypatch.setattr(metatrace, "RECURRENT_OPS", frozenset())  # the tracer's own rule
    monkeypatch.setattr(torch_trace, "recurrent_shape_rules", contextlib.nullcontext)  # export's
    assert _signature(path) == fast
    assert any("aten.lstm" in t or "aten.gru" in t or "aten.rnn" in t for _, t, _ in fast)


def test_shape_rule_still_rejects_a_wrong_state_shape(tmp_path):
    """A state of the wrong batch size fails the trace, as torch's own check makes it fail."""
    src = model_source(*CASES["gru_states_nobias"]).replace("torch.randn(2, 3, 8)", "torch.randn(2, 4, 8)")
    e = only_entry(analyze_file(write(tmp_path, "bad.py", src), Config(verify=False)))
    assert e.status == "error"
    assert "could not trace" in e.error and "hidden" in e.error, e.error
