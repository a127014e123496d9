"""The frontend-independent part of a training step (docs/training.md): the optimizer update as
IR (counts against docs/sol-model.md, values against torch.optim), activation memory, the
fusion boundary between phases, the per-phase report, and the CLI's train-mode options."""

from __future__ import annotations

import pathlib
import re

import pytest

from solar_lsp.bounds import fusion
from solar_lsp.bounds.einsum_graph import build_graph, tensor_bytes
from solar_lsp.bounds.sol import Policy, boundary_bytes, op_costs, phase_boundary_split
from solar_lsp.cli.analyze import untrained
from solar_lsp.cli.args import build_parser, mode_config
from solar_lsp.frontend.builders import contraction, elementwise, reduce
from solar_lsp.frontend.optimizer import AdamW, adamw_ops, slots
from solar_lsp.hardware.chips import load_chips
from solar_lsp.ir.core import Affine, Const, Kernel, Load, Op, Program, TensorType, call
from solar_lsp.ir.validate import validate_program
from solar_lsp.pipeline.config import Config
from solar_lsp.pipeline.report import EntryReport, FileReport
from solar_lsp.pipeline.tail import bound_and_verify
from solar_lsp.pipeline.train import (
    activation_bytes,
    finish_train_program,
    phase_totals,
    saved_tensors,
)
from solar_lsp.verify.optimizer_check import check_optimizer

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
B, I, O = 8, 16, 4


def linear_step(dtype: str = "float32", phases: bool = True) -> Program:
    """loss = mean(tanh(x Wᵀ)) and its backward by hand: dh = 1/N, dy = dh·(1 − h²), dW = dyᵀx.
    The backward reads h (a saved activation) and x (an input), not y. ``phases=False``: the
    same ops all labelled forward."""
    p = Program("step")
    t = lambda *s: TensorType(tuple(s), dtype)  # noqa: E731
    p.tensors.update(x=t(B, I), W=t(O, I), y=t(B, O), h=t(B, O), loss=t(), dh=t(B, O),
                     dy=t(B, O), dW=t(O, I))
    p.inputs, p.params, p.outputs = ["x"], ["W"], ["loss", "dW"]
    ext, A = {"b": B, "o": O, "i": I}, Affine.var
    bw = "backward" if phases else "forward"
    p.ops = [
        Op("f1", "aten.mm.default", 10, ["x", "W"], ["y"],
           [contraction("mm", "y", ["b", "o"], "x", [A("b"), A("i")], "W", [A("o"), A("i")], ext)]),
        Op("f2", "aten.tanh.default", 11, ["y"], ["h"],
           [elementwise("tanh", "h", (B, O), [("y", (B, O))], lambda a: call("tanh", a))]),
        Op("f3", "aten.mean.default", 12, ["h"], ["loss"],
           [reduce("mean", "h", (B, O), [0, 1], False, "loss", "+=",
                   pre=lambda a: call("mul", a, 1.0 / (B * O)))]),
        Op("b1", "aten.full.default", 12, [], ["dh"],
           [Kernel("fill", (("i0", B), ("i1", O)), Load("dh", (A("i0"), A("i1"))), "=",
                   Const(1.0 / (B * O)))], phase=bw),
        Op("b2", "aten.tanh_backward.default", 11, ["dh", "h"], ["dy"],
           [elementwise("dtanh", "dy", (B, O), [("dh", (B, O)), ("h", (B, O))],
                        lambda g, hh: call("mul", g, call("sub", 1.0, call("mul", hh, hh))))], phase=bw),
        Op("b3", "aten.mm.default", 10, ["dy", "x"], ["dW"],
           [contraction("dW", "dW", ["o", "i"], "dy", [A("b"), A("o")], "x", [A("b"), A("i")], ext)],
           phase=bw),
    ]
    return p


def _doc_formula() -> dict[str, tuple[int, int, int, int]]:
    """The per-element table of docs/sol-model.md "Optimizer update": optimizer → (vector
    FLOPs, transcendentals, unfused bytes / s, fused bytes / s)."""
    text = (DOCS / "sol-model.md").read_text()
    section = text.split("## Optimizer update", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for m in re.finditer(r"^\| (AdamW|SGD) \| (\d+) \| (\d+) \| (\d+)·s \| (\d+)·s \|$", section, re.M):
        rows[m.group(1).lower()] = tuple(int(m.group(k)) for k in range(2, 6))
    assert set(rows) == {"adamw", "sgd"}, "the table of docs/sol-model.md is not where it was"
    return rows


def _costs(p: Program):
    return op_costs(p, build_graph(p), Policy())


def _chip():
    return load_chips(["h100-sxm"])[0]


@pytest.mark.parametrize("dtype,size", [("float32", 4), ("bfloat16", 2)])
@pytest.mark.parametrize("opt", ["adamw", "sgd"])
def test_optimizer_counts_per_parameter_equal_the_documented_formula(opt, dtype, size):
    flops, trans, unfused, fused = _doc_formula()[opt]
    p = linear_step(dtype)
    finish_train_program(p, {"W": "dW"}, Config(mode="train", optimizer=opt))
    validate_program(p)
    ph = phase_totals(_costs(p), p, _chip())["optimizer"]
    n = O * I
    assert ph["vector_flops"] == flops * n
    assert ph["tensor_flops"] == 0
    assert ph["transcendentals"] == trans * n
    assert ph["bytes_unfused"] == unfused * n * size
    assert ph["bytes_fused"] == fused * n * size


def test_optimizer_ops_sit_on_the_parameters_first_forward_line():
    p = linear_step()
    finish_train_program(p, {"W": "dW"}, Config(mode="train"))
    opt = [op for op in p.ops if op.phase == "optimizer"]
    assert len(opt) == 8  # the eight kernels of torch's single-tensor AdamW
    assert {op.line for op in opt} == {10}  # W is first read by the mm on line 10
    assert {"W_next", "W_exp_avg_next", "W_exp_avg_sq_next"} <= set(p.outputs)
    assert {"W_exp_avg", "W_exp_avg_sq"} <= set(p.params)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adamw_ir_matches_torch_one_step(dtype):
    """Hyperparameters far from the defaults and step 3, so every term of the formula (weight
    decay, both bias corrections, ε) moves the result well beyond the tolerance."""
    pytest.importorskip("torch")
    hp = AdamW(lr=0.1, beta1=0.8, beta2=0.9, eps=1e-2, weight_decay=0.5)
    p = linear_step(dtype)
    adamw_ops(p, "W", "dW", 10, hp, step=3)
    res = check_optimizer(p, Config(optimizer="adamw"), hp=hp, step=3)
    assert res["status"] == "verified", res
    assert res["checked"] == 1


def test_optimizer_check_catches_a_wrong_update():
    """The same IR compared with torch at another weight decay or step: a mismatch, naming the
    parameter's updated tensor."""
    pytest.importorskip("torch")
    hp = AdamW(lr=0.1, beta1=0.8, beta2=0.9, eps=1e-2, weight_decay=0.5)
    p = linear_step()
    adamw_ops(p, "W", "dW", 10, hp, step=3)
    for other, step in ((AdamW(lr=0.1, beta1=0.8, beta2=0.9, eps=1e-2, weight_decay=0.4), 3), (hp, 2)):
        res = check_optimizer(p, Config(optimizer="adamw"), hp=other, step=step)
        assert res["status"] == "mismatch", res
        assert res["worst"]["tensor"] == "W_next"


@pytest.mark.parametrize("opt", ["adamw", "sgd"])
def test_default_update_matches_torch_defaults(opt):
    pytest.importorskip("torch")
    p = linear_step()
    cfg = Config(mode="train", optimizer=opt)
    finish_train_program(p, {"W": "dW"}, cfg)
    res = check_optimizer(p, cfg)
    assert res["status"] == "verified", res
    assert [s.grad for s in slots(p)] == ["dW"]


def test_optimizer_none_adds_nothing():
    p = linear_step()
    before = ([op.id for op in p.ops], list(p.outputs), list(p.params), set(p.tensors))
    finish_train_program(p, {"W": "dW"}, Config(mode="train", optimizer="none"))
    assert ([op.id for op in p.ops], list(p.outputs), list(p.params), set(p.tensors)) == before
    assert check_optimizer(p, Config(optimizer="none"))["checked"] == 0


def test_activation_bytes_are_the_forward_tensors_the_backward_reads():
    p = linear_step()
    assert saved_tensors(p) == ["h", "x"]  # not y (unread), not W (a parameter)
    assert activation_bytes(p) == tensor_bytes(p, "h") + tensor_bytes(p, "x") == (B * O + B * I) * 4


def test_fused_bound_writes_and_reads_back_saved_activations():
    p = linear_step()
    split = phase_boundary_split(p)
    nb = lambda *ts: sum(tensor_bytes(p, t) for t in ts)  # noqa: E731
    assert split["forward"] == (nb("x", "W"), nb("loss", "h"))  # h written once at its end
    assert split["backward"] == (nb("h", "x"), nb("dW"))  # h read back once; dh is generated
    one_kernel = boundary_bytes(linear_step(phases=False))
    assert one_kernel == nb("x", "W", "loss", "dW")
    assert boundary_bytes(p) - one_kernel == 2 * nb("h") + nb("x")


def test_no_fusion_across_phases():
    """tanh (forward) and its derivative (backward) fuse when both are one phase, never when
    they are two; the optimizer's elementwise chain still fuses within its phase."""
    assert ("f2", "b2") in fusion.analyze(linear_step(phases=False)).edges
    p = linear_step()
    finish_train_program(p, {"W": "dW"}, Config(mode="train"))
    fg = fusion.analyze(p)
    assert ("f2", "b2") not in fg.edges
    phase = {op.id: op.phase for op in p.ops}
    assert all(phase[a] == phase[b] for a, b in fg.edges)
    assert any(phase[a] == "optimizer" for a, _ in fg.edges)


def _report(p: Program) -> EntryReport:
    er = EntryReport("step", 1, "torch")
    cfg = Config(verify=False, mode="train")
    bound_and_verify(er, p, load_chips(cfg.hw), cfg, cfg.policy, {}, None)
    return er


def test_train_report_has_phases_that_add_up_to_the_step():
    p = linear_step()
    finish_train_program(p, {"W": "dW"}, Config(mode="train"))
    er = _report(p)
    assert er.mode == "train" and list(er.phases) == ["forward", "backward", "optimizer"]
    for key in ("flops", "tensor_flops", "vector_flops", "transcendentals", "bytes_unfused",
                "bytes_fused"):
        assert sum(d[key] for d in er.phases.values()) == er.totals[key], key
    assert sum(d["t_fused_s"] for d in er.phases.values()) >= er.totals["t_fused_s"] * (1 - 1e-12)
    assert er.totals["activation_bytes"] == activation_bytes(p)
    assert er.totals["bytes_cache_aware"] >= er.totals["bytes_fused"]
    j = er.to_json()
    line10 = next(ln for ln in j["lines"] if ln["line"] == 10)
    assert set(line10["phases"]) == {"forward", "backward", "optimizer"}
    assert set(line10["phases"]["optimizer"]) == {"flops", "bytes", "t_unfused_s"}
    assert {o["phase"] for o in line10["ops"]} == {"forward", "backward", "optimizer"}
    assert j["mode"] == "train" and j["phases"] == er.phases


def _memory_bound_step():
    p = linear_step()
    finish_train_program(p, {"W": "dW"}, Config(mode="train"))
    return p, _costs(p)


@pytest.mark.parametrize("l2_bytes", [300, 1000, 10**8])
def test_warm_l2_prices_the_phases_like_the_step(l2_bytes):
    """On a ``@warm-l2`` chip each phase's fused time takes its share of the bytes the warm L2
    serves in the step: the shares add up to the step's, so the memory-bound phases' times
    add up to the step's fused time exactly as on a cold L2, and no phase is slower warm."""
    import dataclasses

    from solar_lsp.bounds.sol import fused, warm_l2_bytes
    cold = _chip()
    # an L2 smaller than the step's reads (300 B), between reads and all traffic, and larger
    warm = dataclasses.replace(load_chips(["h100-sxm@warm-l2"])[0], l2_bytes=l2_bytes)
    p, costs = _memory_bound_step()
    ph_cold, ph_warm = phase_totals(costs, p, cold), phase_totals(costs, p, warm)
    reads = sum(r for r, _ in phase_boundary_split(p).values())
    for ph in ph_cold:
        assert ph_warm[ph]["bytes_fused"] == ph_cold[ph]["bytes_fused"]
        assert ph_warm[ph]["t_unfused_s"] == ph_cold[ph]["t_unfused_s"]  # unfused: no warm L2
        assert ph_warm[ph]["t_fused_s"] <= ph_cold[ph]["t_fused_s"]
    for chip, phases in ((cold, ph_cold), (warm, ph_warm)):
        whole = fused(costs, p, chip).t_s
        total = sum(d["t_fused_s"] for d in phases.values())
        if l2_bytes < reads:  # every phase and the step bound by their DRAM bytes
            assert total == pytest.approx(whole, rel=1e-9)
        assert total >= whole * (1 - 1e-12)
    h = warm_l2_bytes(p, warm)
    assert h > 0
    if l2_bytes < reads:
        dram = sum(d["t_fused_s"] for d in ph_warm.values()) * warm.dram_bytes_per_s
        assert dram == pytest.approx(sum(d["bytes_fused"] for d in ph_warm.values()) - h, rel=1e-9)
    else:  # the warm L2 serves all of it: each phase is its reads at the L2 bandwidth
        split = phase_boundary_split(p)
        for ph, d in ph_warm.items():
            assert d["t_fused_s"] >= split[ph][0] / warm.l2_bytes_per_s * (1 - 1e-12)
            assert d["t_fused_s"] < ph_cold[ph]["t_fused_s"]


def test_warm_l2_chip_in_the_report_prices_phases_below_the_cold_ones():
    p, _ = _memory_bound_step()
    reports = {}
    for hw in ("h100-sxm", "h100-sxm@warm-l2"):
        er = EntryReport("step", 1, "torch")
        cfg = Config(verify=False, mode="train", hw=[hw])
        bound_and_verify(er, p, load_chips(cfg.hw), cfg, cfg.policy, {}, None)
        reports[hw] = er
    cold, warm = reports["h100-sxm"], reports["h100-sxm@warm-l2"]
    assert warm.totals["t_fused_s"] < cold.totals["t_fused_s"]
    assert sum(d["t_fused_s"] for d in warm.phases.values()) < \
        sum(d["t_fused_s"] for d in cold.phases.values())
    assert sum(d["t_fused_s"] for d in warm.phases.values()) >= warm.totals["t_fused_s"] * (1 - 1e-12)


def test_inference_report_is_unchanged_by_the_training_fields():
    """An all-forward program: no phases anywhere, fused bytes = inputs, weights, outputs."""
    p = linear_step(phases=False)
    er = EntryReport("step", 1, "torch")
    cfg = Config(verify=False)
    bound_and_verify(er, p, load_chips(cfg.hw), cfg, cfg.policy, {}, None)
    j = er.to_json()
    assert j["mode"] == "inference" and j["phases"] is None
    assert "activation_bytes" not in j["totals"]
    assert all("phases" not in ln for ln in j["lines"])
    assert j["totals"]["bytes_fused"] == sum(tensor_bytes(p, t) for t in ("x", "W", "loss", "dW"))


def test_cli_parses_train_flags():
    args = build_parser().parse_args(["analyze", "f.py", "--mode", "train", "--optimizer", "sgd",
                                      "--loss", "sum"])
    cfg = Config()
    mode_config(args, cfg)
    assert (cfg.mode, cfg.optimizer, cfg.loss) == ("train", "sgd", "sum")
    args = build_parser().parse_args(["compare", "f.py", "--mode", "train"])
    mode_config(args, cfg)
    assert (cfg.mode, cfg.optimizer, cfg.loss) == ("train", "adamw", "mean")


def test_cli_rejects_bad_train_flags(cli, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import torch\n\n\n# solar: x=f32[4,8]\ndef f(x):\n    return x * 2\n")
    r = cli("analyze", str(f), "--optimizer", "sgd")
    assert r.code == 2 and "--mode train" in r.err and "Traceback" not in r.err
    with pytest.raises(SystemExit) as exc:  # argparse's usage error
        build_parser().parse_args(["analyze", str(f), "--mode", "training"])
    assert exc.value.code == 2


def test_an_entry_without_a_training_step_is_named():
    rep = FileReport("m.py", ["h100-sxm"], [EntryReport("f", 5, "jax")])
    msgs = untrained(rep, Config(mode="train"))
    assert len(msgs) == 1 and msgs[0].startswith("f (line 5): the jax frontend")
    assert untrained(rep, Config()) == []


MLP = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 16)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc2(h)


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return []
"""


def test_cli_train_mode_end_to_end(cli, tmp_path):
    """A torch MLP through `solar analyze --mode train`: the table shows each line's phases
    and the phase totals; the JSON carries the mode, the phases and AdamW's 14 vector FLOPs on
    every parameter element (weights and biases of both layers)."""
    pytest.importorskip("torch")
    f = tmp_path / "mlp.py"
    f.write_text(MLP)
    r = cli("analyze", str(f), "--mode", "train", "--no-verify", "--json")
    assert r.code == 0, r.err
    e = r.json()["entries"][0]
    assert e["mode"] == "train"
    n_params = 32 * 64 + 64 + 64 * 16 + 16
    assert e["phases"]["optimizer"]["vector_flops"] == _doc_formula()["adamw"][0] * n_params
    assert e["totals"]["activation_bytes"] > 0
    r = cli("analyze", str(f), "--mode", "train", "--optimizer", "sgd", "--no-verify")
    assert r.code == 0, r.err
    text = " ".join(r.out.split())
    for ph in ("forward", "backward", "optimizer"):
        assert f"total │ {ph}" in text
    assert "activations kept for the backward" in text


def test_a_gradient_of_another_shape_is_refused():
    p = linear_step()
    with pytest.raises(ValueError, match="gradient 'dy' of 'W'"):
        finish_train_program(p, {"W": "dy"}, Config(mode="train"))
