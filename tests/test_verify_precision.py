"""Verification catches wrong lowerings that a loose comparison let through (issue 16), and
does not cry wolf where the framework itself rounds: every output element must be written,
the edges of every output dimension are looked at, a contraction is judged in its
accumulator's precision (fp32 for bf16), a value near zero by the magnitude of what it was
computed from, and a buffer that would overflow where the exact result does not is caught.

Each bug is planted by wrapping a registered lowering (as tests/test_pipeline.py does), never
by editing a source file; the unplanted model must verify first, so the test can fail both
ways.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import write

from solar_lsp.frontend.torch import lower as torch_lower
from solar_lsp.ir.core import Affine, Guard, Kernel, Load, Op, Program, TensorType, call
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.verify.core import UNIT, compare_bounded
from solar_lsp.verify.op_check import check_op

MM = ("aten.mm.default", "aten.matmul.default")


def verification(path: str) -> dict:
    report = analyze_file(path, Config(verify=True))
    assert report.error is None, report.error
    [e] = report.entries
    assert e.status == "ok", e.error
    return e.verification


def fn_file(tmp_path, pragma: str, body: str) -> str:
    return write(tmp_path, "m.py", f"""
        import torch
        import torch.nn.functional as F


        # solar: {pragma}
        def f({", ".join(a.split("=")[0] for a in pragma.split(", "))}):
            return {body}
        """)


def wrap(monkeypatch, targets, post=None, args=None):
    """Plant a bug: rewrite what the lowering of ``targets`` sees (``args``) or emits (``post``)."""
    for t in targets:
        orig = torch_lower.LOWERINGS[t]

        def mutated(c, a, kw, _orig=orig):
            if args is not None:
                a, kw = args(a, kw)
            _orig(c, a, kw)
            if post is not None:
                c.kernels[:] = post(c, list(c.kernels))
        monkeypatch.setitem(torch_lower.LOWERINGS, t, mutated)


def shrink(var: str, half: bool = False, when=lambda k: True):
    """Loop ``var`` one value short (or over half its range)."""
    def go(c, ks):
        return [dataclasses.replace(k, loops=tuple((v, (n // 2 if half else n - 1) if v == var else n)
                                                   for v, n in k.loops)) if when(k) and var in k.extents else k
                for k in ks]
    return go


def first_var(k: Kernel, dim: int) -> str:
    return k.out.index[dim].is_var()


def mismatched(v: dict, op: str) -> dict:
    assert v["status"] == "mismatch", v
    bad = [i for i in v["issues"] if i["status"] == "mismatch"]
    assert [i["op"] for i in bad] == [op], bad
    return bad[0]


# ------------------------------------------------------------------ false alarms


def test_gelu_of_matmul_near_zero_verifies(tmp_path):
    """torch's fp32 GELU is off by several ulp of its input where 1 + erf cancels
    (gelu(-3.4) ~ -1e-3): judged by the magnitude of its terms, not of its result."""
    path = fn_file(tmp_path, "x=f32[256,512], w=f32[512,1024]", "F.gelu(x @ w)")
    v = verification(path)
    assert v["status"] == "verified", v


# ------------------------------------------------------------------ coverage


@pytest.mark.parametrize("dim", [0, 1])
def test_matmul_output_row_or_column_never_written(tmp_path, monkeypatch, dim):
    path = fn_file(tmp_path, "x=f32[64,96], w=f32[96,48]", "x @ w")
    assert verification(path)["status"] == "verified"
    wrap(monkeypatch, MM, post=lambda c, ks: shrink(first_var(ks[-1], dim))(c, ks))
    issue = mismatched(verification(path), "matmul")
    assert "never written" in issue["detail"]
    assert issue["worst"]["index"][dim] == (64, 48)[dim] - 1


def test_elementwise_last_row_never_written(tmp_path, monkeypatch):
    path = fn_file(tmp_path, "x=f32[512,384]", "torch.relu(x)")
    assert verification(path)["status"] == "verified"
    wrap(monkeypatch, ["aten.relu.default"], post=lambda c, ks: shrink(first_var(ks[-1], 0))(c, ks))
    issue = mismatched(verification(path), "relu")
    assert issue["detail"].startswith("relu[511, ") and "never written" in issue["detail"]
    assert issue["worst"]["index"][0] == 511 and issue["worst"]["expected"] != 0


def test_conv_padding_guard_dropping_last_row_at_1024(tmp_path, monkeypatch):
    """Sampled (9.4e6 loop points): only the last output row is wrong, and the samples
    always include every output dimension's last indices."""
    path = write(tmp_path, "conv.py", """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 1, 3, padding=1)

            def forward(self, x):
                return self.conv(x)


        def get_inputs():
            return [torch.randn(1, 1, 1024, 1024)]
        """)
    assert verification(path)["status"] == "verified"

    def short(c, ks):
        def fix(k):
            gs = [Guard(g.expr, g.lo, g.hi - 1) if i == 0 and g.hi is not None else g
                  for i, g in enumerate(k.guards)]
            return dataclasses.replace(k, guards=tuple(gs))
        return [fix(k) for k in ks]
    wrap(monkeypatch, ["aten.conv2d.default", "aten.convolution.default"], post=short)
    issue = mismatched(verification(path), "conv2d")
    assert issue["worst"]["index"][2] == 1023


# ------------------------------------------------------------------ tolerances


def test_bf16_matmul_summing_half_of_k(tmp_path, monkeypatch):
    path = fn_file(tmp_path, "a=bf16[64,1024], b=bf16[1024,64]", "a @ b")
    assert verification(path)["status"] == "verified"
    wrap(monkeypatch, MM, post=lambda c, ks: shrink(ks[-1].reduce_vars[0], half=True)(c, ks))
    mismatched(verification(path), "matmul")


def test_bf16_matmul_dropping_one_of_k(tmp_path, monkeypatch):
    """One product of 1024 missing: more than the bf16 rounding of the result at most points."""
    path = fn_file(tmp_path, "a=bf16[64,1024], b=bf16[1024,64]", "a @ b")
    wrap(monkeypatch, MM, post=lambda c, ks: shrink(ks[-1].reduce_vars[0])(c, ks))
    mismatched(verification(path), "matmul")


def test_bf16_linear_with_its_weight_transposed(monkeypatch):
    """tests/corpus/ops_dtype_bf16_linear.py: a square bf16 linear multiplying by W, not W^T."""
    import pathlib
    path = str(pathlib.Path(__file__).parent / "corpus" / "ops_dtype_bf16_linear.py")
    assert verification(path)["status"] == "verified"

    def transposed(c, ks):
        w = c.t(c.node.args[1])
        swap = lambda e: Load(e.tensor, tuple(reversed(e.index)))  # noqa: E731
        out = []
        for k in ks:
            if k.unit == "matrix":
                x, y = k.expr.args
                k = dataclasses.replace(k, expr=call("mul", x, swap(y)) if y.tensor == w else k.expr)
            out.append(k)
        return out
    wrap(monkeypatch, ["aten.linear.default"], post=transposed)
    mismatched(verification(path), "linear")


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_exact_gelu_lowered_as_tanh_approximation(tmp_path, monkeypatch, dtype):
    path = fn_file(tmp_path, f"x={dtype}[64,256]", "F.gelu(x)")
    assert verification(path)["status"] == "verified"
    wrap(monkeypatch, ["aten.gelu.default"], args=lambda a, kw: (a, {**kw, "approximate": "tanh"}))
    mismatched(verification(path), "gelu")


def test_sum_over_4096_dropping_its_last_element(tmp_path, monkeypatch):
    path = fn_file(tmp_path, "x=f32[8,4096]", "x.sum(dim=1)")
    assert verification(path)["status"] == "verified"
    wrap(monkeypatch, ["aten.sum.dim_IntList"], post=lambda c, ks: shrink(ks[-1].reduce_vars[0])(c, ks))
    mismatched(verification(path), "sum_1")


def test_softmax_without_max_subtraction_overflows(tmp_path, monkeypatch):
    """Exact in float64 at the golden inputs; at inputs scaled to |x| <= 100 exp(x) is past
    float32's range where softmax's result is not."""
    path = fn_file(tmp_path, "x=f32[64,64]", "torch.softmax(x, dim=-1)")
    assert verification(path)["status"] == "verified"

    def no_max(c, ks):
        [mx] = [k for k in ks if k.op == "max="]
        m = mx.out.tensor

        def strip(e):
            if getattr(e, "fn", None) == "sub" and isinstance(e.args[1], Load) and e.args[1].tensor == m:
                return e.args[0]
            return dataclasses.replace(e, args=tuple(strip(a) for a in e.args)) if hasattr(e, "args") else e
        return [dataclasses.replace(k, expr=strip(k.expr)) for k in ks if k is not mx]
    wrap(monkeypatch, ["aten._softmax.default", "aten.softmax.int"], post=no_max)
    issue = mismatched(verification(path), "_softmax")
    assert "overflows float32" in issue["detail"]


def test_an_op_mismatch_marks_only_that_op(tmp_path, monkeypatch):
    path = fn_file(tmp_path, "x=f32[64,64]", "torch.relu(x) + torch.sigmoid(x)")
    wrap(monkeypatch, ["aten.relu.default"], post=lambda c, ks: shrink(first_var(ks[-1], 0))(c, ks))
    v = verification(path)
    mismatched(v, "relu")
    assert v["ops_checked"] == 2  # sigmoid and add still verified


# ------------------------------------------------------------------ the bound itself


def test_bound_is_one_rounding_of_the_output_dtype():
    """An exact value (no rounding error of its own) rounded to bf16 is within the bound; one
    ulp off is not."""
    x = np.array([3.0 + 2.0**-7, -0.0123])  # a tie and an arbitrary value
    ref = x.astype(np.float32).view(np.uint32)
    ref = ((ref + 0x8000) & 0xFFFF0000).view(np.float32).astype(np.float64)  # bf16, round half up
    pos = np.array([[0], [1]])
    ok = compare_bounded("t", pos, x, ref, np.zeros(2), "bfloat16", UNIT["float32"])
    assert not ok["bad"] and ok["ratio"] <= 1.0
    ulp = 2.0 ** (np.floor(np.log2(np.abs(ref))) - 7)
    bad = compare_bounded("t", pos, x, ref + ulp, np.zeros(2), "bfloat16", UNIT["float32"])
    assert bad["bad"]


def test_erf_cancellation_bound_covers_torch():
    """A direct IR op ``0.5·x·(1 + erf(x/sqrt 2))`` on torch's fp32 GELU over [-8, 8]: verified
    with a tightness (|difference| / bound) under 1, and wrong by 1e-4 at gelu(-3) caught."""
    import torch
    xs = torch.linspace(-8, 8, 4001, dtype=torch.float32)
    p = Program("g", tensors={"x": TensorType((4001,), "float32"), "y": TensorType((4001,), "float32")},
                inputs=["x"], outputs=["y"])
    x = Load("x", (Affine.var("i"),))
    gelu = call("mul", call("mul", 0.5, x), call("add", 1.0, call("erf", call("mul", x, 2**-0.5))))
    k = Kernel("g", (("i", 4001),), Load("y", (Affine.var("i"),)), "=", gelu)
    op = Op("gelu", "aten.gelu.default", 1, ["x"], ["y"], [k])
    golden = {"x": xs, "y": torch.nn.functional.gelu(xs)}
    res = check_op(p, op, golden, np.random.default_rng(0), 64)
    assert res.status == "verified" and 0 < res.ratio < 1, res
    at = int(torch.argmin((xs + 3).abs()))
    wrong = dict(golden, y=golden["y"] + torch.where(torch.arange(4001) == at, 1e-4, 0.0))
    assert check_op(p, op, wrong, np.random.default_rng(0), 64).status == "mismatch"


def test_gaps_the_framework_leaves_zero_are_not_unwritten(tmp_path):
    """A transposed conv whose stride exceeds its dilated taps writes nothing into the gaps; the
    framework leaves them zero too, so the output is right (KernelBench L1 81)."""
    path = fn_file(tmp_path, "x=f32[2,4,8,8], w=f32[4,6,3,3]",
                   "F.conv_transpose2d(x, w, stride=5, padding=1, dilation=2)")
    v = verification(path)
    assert v["status"] == "verified", v
