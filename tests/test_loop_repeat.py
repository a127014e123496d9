"""A Python loop over time steps, unrolled by the tracer, emitted once with ``repeat`` = T
(frontend/loops.py) against the unrolled form; its verification step by step on each step's
framework values (verify/parts.py ``for_check``)."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import only_entry, write

from solar_lsp.frontend import loops
from solar_lsp.frontend.torch import trace as torch_trace
from solar_lsp.frontend.torch.lower import lower
from solar_lsp.frontend.torch.trace import load_module
from solar_lsp.ir.core import Call, Load, Op
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.source.discover import discover_file
from solar_lsp.verify import parts
from solar_lsp.verify.check_torch import checked_run

T = 6
RNN = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.i2h = nn.Linear(5 + 4, 4)
        self.h2o = nn.Linear(4, 3)

    def forward(self, x, h0):
        hidden = h0
        outputs = []
        for t in range(x.size(0)):
            combined = torch.cat((x[t], hidden), dim=1)
            hidden = torch.tanh(self.i2h(combined))
            outputs.append(self.h2o(hidden))
        return torch.stack(outputs, dim=0), hidden


def get_inputs():
    return [torch.randn({T}, 2, 5), torch.randn(2, 4)]


def get_init_inputs():
    return []
"""

# each step differs: the hidden state grows by one column per step (no repeated block)
GROWING = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        h = x[0]
        for t in range(1, x.size(0)):
            h = torch.cat((torch.tanh(h), x[t][:, :1]), dim=1)
        return h


def get_inputs():
    return [torch.randn({T}, 2, 3)]


def get_init_inputs():
    return []
"""

# a step-dependent branch ({COND}): the steps it picks apply a different function
BRANCHY = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, h):
        for t in range(x.size(0)):
            h = torch.tanh(h + x[t]) if {COND} else torch.sigmoid(h * x[t])
        return h


def get_inputs():
    return [torch.randn({T}, 2, 3), torch.randn(2, 3)]


def get_init_inputs():
    return []
"""

TOTALS = ("macs", "flops", "tensor_flops", "vector_flops", "transcendentals", "sfu_ops",
          "bytes_unfused", "bytes_fused", "bytes_cache_aware", "t_unfused_s", "t_fused_s",
          "t_cache_aware_s")
CHIPS = ["h100-sxm", "a100-sxm"]


def analyze(path: str, reroll: bool, verify: bool = False):
    old = loops.REROLL
    loops.REROLL = reroll
    try:
        return only_entry(analyze_file(path, Config(verify=verify, hw=CHIPS)))
    finally:
        loops.REROLL = old


def per_line(e) -> dict:
    """Counts and bytes per line (exact), with the unfused time (summed in another order)."""
    return {ln.line: (ln.flops, ln.bytes, pytest.approx(ln.t_unfused_s, rel=1e-12)) for ln in e.lines}


def lowered(path: str, reroll: bool = True):
    old = loops.REROLL
    loops.REROLL = reroll
    try:
        module = load_module(path)
        traced = torch_trace.trace(module, discover_file(path)[0], path)
        return module, traced, lower(traced)
    finally:
        loops.REROLL = old


def test_loop_form_counts_and_bounds_equal_the_unrolled(tmp_path):
    """Per line and in total, counts, the three bounds' bytes and times on two chips: the same
    whether the loop's steps are unrolled or its body runs T times."""
    path = write(tmp_path, "rnn.py", RNN.replace("{T}", str(T)))
    unrolled, looped = analyze(path, False), analyze(path, True)
    assert unrolled.status == looped.status == "ok", (unrolled.error, looped.error)
    assert per_line(looped) == per_line(unrolled)
    for key in TOTALS:  # times: T x one step's against T steps' sum, equal up to rounding
        want = unrolled.totals[key]
        assert looped.totals[key] == (pytest.approx(want, rel=1e-12) if key.startswith("t_") else want), key
    for chip, fid in unrolled.by_hardware.items():
        for key in ("t_unfused_s", "t_fused_s", "t_cache_aware_s"):
            assert looped.by_hardware[chip][key] == pytest.approx(fid[key], rel=1e-12), (chip, key)
    assert looped.graph["kernels"] * 3 < unrolled.graph["kernels"]  # the steps are not copied


def test_the_body_is_emitted_once_with_repeat_t(tmp_path):
    path = write(tmp_path, "rnn.py", RNN.replace("{T}", str(T)))
    p = lowered(path)[2].program
    body = [op for op in p.ops if op.repeat > 1]
    assert {op.repeat for op in body} == {T}
    assert sorted(op.target for op in body if op.kind == "compute") == sorted(
        ["aten.cat.default", "aten.linear.default", "aten.tanh.default", "aten.linear.default",
         "aten.cat.default"])  # the step, and the stack's copy of its output
    [owner] = [op for op in p.ops if op.call and op.call[0] == "loop"]
    assert owner.call[1] == T
    unrolled = lowered(path, reroll=False)[2].program
    assert sum(op.target == "aten.tanh.default" for op in unrolled.ops) == T


@pytest.mark.parametrize("src", [GROWING, BRANCHY.replace("{COND}", "t in (1, 4)")],
                         ids=["growing", "irregular_branch"])
def test_steps_that_differ_stay_unrolled(tmp_path, src):
    path = write(tmp_path, "m.py", src.replace("{T}", str(T)))
    p = lowered(path)[2].program
    assert all(op.repeat == 1 for op in p.ops)
    assert not any(op.call and op.call[0] == "loop" for op in p.ops)
    unrolled, looped = analyze(path, False), analyze(path, True)
    assert per_line(looped) == per_line(unrolled)


def test_loop_form_verifies_against_torch(tmp_path, monkeypatch):
    """The entry verifies with the loop form; with one step too few laid out for the check it
    is a mismatch naming a line of the loop."""
    path = write(tmp_path, "rnn.py", RNN.replace("{T}", str(T)))
    e = analyze(path, True, verify=True)
    assert e.verification["status"] == "verified", e.verification
    counts = e.verification["counts"]  # the body's tensor FLOPs against FlopCounterMode's
    assert counts["status"] == "checked", counts
    unrolled = analyze(path, False, verify=True).verification["counts"]["tensor_flops"]
    assert counts["tensor_flops"]["framework"] == unrolled["framework"] == counts["tensor_flops"]["ir"] > 0
    monkeypatch.setattr(parts, "checked_steps", lambda trips: trips - 1)
    bad = analyze(path, True, verify=True)
    assert bad.verification["status"] == "mismatch", bad.verification
    assert any(f"(line {ln})" in bad.verification["detail"] for ln in (15, 16, 17)), bad.verification


def step_checks(path: str, plant=None) -> list:
    """Every op's check on the loop laid out step by step (``plant``: edits that program)."""
    module, traced, low = lowered(path)
    low = parts.for_check(low)
    if plant is not None:
        plant(low.program)
    ops = [op for op in low.program.ops if parts.part_of(op) is None]
    return checked_run(traced, low, module, ops, 0, 64)


def test_every_step_is_checked_on_its_own_values(tmp_path):
    """Each of the T steps' ops is checked against torch's values of that step, and the stack
    of the steps' outputs as a whole; the middle steps at sampled points."""
    path = write(tmp_path, "rnn.py", RNN.replace("{T}", str(T)))
    checks = step_checks(path)
    assert all(c.status == "verified" for c in checks), [(c.op, c.detail) for c in checks if c.status != "verified"]
    tanh = sorted(c.op for c in checks if c.op.startswith("tanh@"))
    assert tanh == [f"tanh@{t}/{T}" for t in range(T)]
    assert any(c.op.endswith("@stack") for c in checks)
    sampled = {t: parts.full_check_of(Op(f"x@{t}/{T}", "", None, [], [])) for t in range(T)}
    assert sampled[0] == sampled[T - 1] > sampled[1] == sampled[T - 2]


def _ranges(prefix: str, lw) -> list[tuple[int, int]]:
    """The steps each of ``lw``'s ops of body op ``prefix`` covers: ``op@t/T`` one step,
    ``op@a-b/T`` (several steps at once) a to b."""
    out = []
    for op in lw.program.ops:
        if op.id.startswith(prefix + "@") and not op.id.endswith("@stack"):
            at = op.id.split("@")[1].split("/")[0]
            a, _, b = at.partition("-")
            out.append((int(a), int(b or a)))
    return sorted(out)


@pytest.mark.parametrize("batch", ["default", "per_step", "chunks", "sampled"])
def test_every_step_checks_where_it_reads(tmp_path, monkeypatch, batch):
    """Of a long loop, every step's ``x[t]`` and every op reading the hidden state are checked,
    the step's other ops at the first, the last and STEP_SAMPLE middle steps; the scaled
    pass's layout has the first and last steps only. The carry readers are checked over many
    steps at once, as many as fit STEPS_BATCH_BYTES (one step each when none fit two, or when
    a step is compared at sampled points)."""
    n = 12
    path = write(tmp_path, "rnn.py", RNN.replace("{T}", str(n)))
    low = lowered(path)[2]
    if batch == "sampled":  # a step compared at sampled points: each step its own op
        monkeypatch.setattr(parts, "STEP_FULL_CHECK", 1)
    elif batch != "default":
        [cat] = [op for op in low.program.ops if op.id == "cat"]
        size = parts._per_step_bytes(low.program, cat, set(low.program.tensors))
        monkeypatch.setattr(parts, "STEPS_BATCH_BYTES", 0 if batch == "per_step" else 5 * size)
    full = parts.for_check(low)
    assert _ranges("select", full) == [(t, t) for t in range(n)]
    covered = [t for a, b in _ranges("cat", full) for t in range(a, b + 1)]
    assert covered == list(range(n))  # every step once
    assert len(_ranges("cat", full)) == {"default": 1, "per_step": n, "chunks": 3, "sampled": n}[batch]
    sampled = [a for a, _ in _ranges("tanh", full)]
    assert sampled[0] == 0 and sampled[-1] == n - 1 and len(sampled) == parts.STEP_SAMPLE + 2
    ends = parts.for_check(low, middle=False)
    assert _ranges("select", ends) == _ranges("tanh", ends) == _ranges("cat", ends) == [(0, 0), (n - 1, n - 1)]


def test_a_step_too_few_is_a_mismatch(tmp_path, monkeypatch):
    """A layout that stops one step early leaves the last step reading the wrong carry and
    index, and the stack's last slice unwritten: the check must say so."""
    path = write(tmp_path, "rnn.py", RNN.replace("{T}", str(T)))
    monkeypatch.setattr(parts, "checked_steps", lambda trips: trips - 1)
    bad = [c for c in step_checks(path) if c.status == "mismatch"]
    assert any(c.op.endswith("@stack") and "never written" in c.detail for c in bad), bad
    assert any(c.op.startswith("cat@") for c in bad), bad  # reads the step before's hidden state


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("what", ["carry", "index"])
def test_a_wrong_middle_step_is_a_mismatch(tmp_path, monkeypatch, what, batch):
    """A step in the middle of the loop that reads the hidden state of two steps back, or
    ``x`` at the wrong time step, is a mismatch naming that step: its own op, or, checked
    over all steps at once, the op of all steps with the step as the first index."""
    if not batch:
        monkeypatch.setattr(parts, "STEPS_BATCH_BYTES", 0)
    path = write(tmp_path, "rnn.py", RNN.replace("{T}", str(T)))
    t = T // 2
    carry_op = f"cat@0-{T - 1}/{T}" if batch else f"cat@{t}/{T}"

    def plant(p):
        if what == "index":
            [op] = [op for op in p.ops if op.id == f"select@{t}/{T}"]
            op.call = op.call[:2] + (op.call[2] + 1,)
            return
        [op] = [op for op in p.ops if op.id == carry_op]
        back = lambda x: x.replace(f"@{t - 1}", f"@{t - 2}")  # noqa: E731
        if batch:  # step t's member of the stacked hidden state (step t-2's, read at t-1 too)
            op.call = ("steps", tuple((name, tuple(back(m) if i == t and m.startswith("tanh") else m
                                                   for i, m in enumerate(ms)))
                                      for name, ms in op.call[1])) + op.call[2:]
        else:
            op.inputs = [back(x) for x in op.inputs]
            op.kernels = [dataclasses.replace(k, expr=_swap_loads(k.expr, f"@{t - 1}", f"@{t - 2}"))
                          for k in op.kernels]

    bad = [c for c in step_checks(path, plant) if c.status == "mismatch"]
    assert [c.op for c in bad] == [carry_op if what == "carry" else f"select@{t}/{T}"], bad
    if what == "carry" and batch:
        assert f"[{t}, " in bad[0].detail, bad[0].detail  # the step, first index of the stack


def _swap_loads(e, old: str, new: str):
    if isinstance(e, Load):
        return Load(e.tensor.replace(old, new), e.index)
    if isinstance(e, Call):
        return Call(e.fn, tuple(_swap_loads(x, old, new) for x in e.args))
    return e


def test_a_branch_of_period_two_repeats_pairs_of_steps(tmp_path):
    """Odd and even steps differ, but each pair of steps repeats: T/2 trips of a two-step body,
    with the unrolled form's counts, and verified."""
    path = write(tmp_path, "m.py", BRANCHY.replace("{COND}", "t % 2").replace("{T}", str(T)))
    p = lowered(path)[2].program
    assert {op.repeat for op in p.ops if op.repeat > 1} == {T // 2}
    assert sum(op.target == "aten.tanh.default" for op in p.ops) == 1
    unrolled, looped = analyze(path, False), analyze(path, True, verify=True)
    assert per_line(looped) == per_line(unrolled)
    assert looped.verification["status"] == "verified", looped.verification


def test_the_golden_runs_peak_holds_the_replayed_body(tmp_path):
    """The streamed golden run's peak estimate holds what checking the loop keeps at once: a
    large tensor of the body in float64, its error bound and the golden value it is compared
    with (where the rest of the program is small)."""
    from solar_lsp.verify.stream import peak_bytes

    src = RNN.replace("{T}", "4").replace(
        "hidden = torch.tanh(self.i2h(combined))",
        "hidden = torch.tanh(self.i2h(combined) + (combined.unsqueeze(-1) * self.big).sum((1, 2)).unsqueeze(-1))",
    ).replace("self.h2o = nn.Linear(4, 3)", "self.h2o = nn.Linear(4, 3)\n        self.big = nn.Parameter(torch.randn(9, 1))")
    path = write(tmp_path, "rnn.py", src.replace("(9, 1)", "(9, 200000)"))
    p = lowered(path)[2].program
    checked = [op for op in p.ops if parts.part_of(op) is None]
    [owner] = [op for op in p.ops if op.call and op.call[0] == "loop"]
    body = parts.parts_by_owner(p)[owner.id]
    big = max(p.tensors[t].numel for q in body for t in q.outputs if t not in p.views)
    assert big >= 2 * 9 * 200000  # the product [2, 9, 200000] is the body's
    assert peak_bytes(p, checked) >= 3 * 8 * big


LARGE_STATE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        for i in range(12):
            x = x * 1.01 + 0.5 if i % 2 else torch.relu(x)
        return x


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return []
"""


def test_a_loop_over_a_large_state_stays_unrolled(tmp_path):
    """12 elementwise steps over a 4 MiB state: unrolled they stream as one kernel, while a
    rolled body would hand the state through DRAM at every step; the loop is left unrolled and
    the cache-aware bytes are the compulsory x in, x out."""
    path = write(tmp_path, "chain.py", LARGE_STATE)
    p = lowered(path)[2].program
    assert all(op.repeat == 1 for op in p.ops)
    e = analyze(path, True)
    assert e.totals["bytes_cache_aware"] == e.totals["bytes_fused"] == 2 * 4 * 2**20


SELF_CARRY = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, h):
        outs = []
        for t in range(x.size(0)):
            h = torch.softmax(h, dim=-1)
            outs.append(h * x[t])
        return torch.stack(outs, dim=0)


def get_inputs():
    return [torch.randn({T}, 2, 5), torch.randn(2, 5)]


def get_init_inputs():
    return []
"""


def test_an_op_writing_the_carry_it_reads_is_checked_on_the_carry_before(tmp_path):
    """``h = softmax(h)``: the op reads the carry and writes its next value, so step t's
    output is step t+1's input. Checked over all steps at once, it must read the stack of the
    values before (h0, h after step 0, ...) and compare the stack of the values after: not
    read its own output (which would also hide its overflow check, one float input)."""
    path = write(tmp_path, "self_carry.py", SELF_CARRY.replace("{T}", str(T)))
    low = parts.for_check(lowered(path)[2])
    [op] = [op for op in low.program.ops if op.id.startswith("_softmax@0-")]
    form, _ = parts.stacked_check(op, {})
    assert not set(form.inputs) & set(form.outputs), (form.inputs, form.outputs)
    assert all(p.tensors[t].shape[0] == T for t in form.inputs + form.outputs for p in [low.program])
    e = analyze(path, True, verify=True)
    assert e.verification["status"] == "verified", e.verification
