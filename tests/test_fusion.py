"""Fusibility analysis (fusion.py) and the fusion suggestions of an entry: the groups found on
the examples, their source lines, and bytes and time saved against hand formulas."""

from __future__ import annotations

import pytest
from conftest import analyzed, example_path, line_of, only_entry, write

from solar_lsp.bounds import fusion
from solar_lsp.bounds.sol import boundary_bytes
from solar_lsp.frontend import builders as B
from solar_lsp.hardware.chips import load_chip
from solar_lsp.ir.core import Affine, Load, Op, Program, TensorType
from solar_lsp.pipeline.analyze import Config, analyze_file

F32 = 4


def _item_with(e, *ops):
    items = [f for f in e.fusion if set(ops) <= set(f["ops"])]
    assert items, (ops, [f["ops"] for f in e.fusion])
    return items[0]


def test_attention_qk_softmax_pv_is_one_group_with_its_lines():
    path = example_path("attention.py")
    e = only_entry(analyzed(path))
    f = _item_with(e, "matmul", "_softmax", "matmul_1")
    want = {line_of(path, "scores = q @ k.transpose"), line_of(path, "masked_fill"),
            line_of(path, "scores.softmax(dim=-1)"), line_of(path, "y = (attn @ v)")}
    assert want <= set(f["lines"])
    # the causal mask is recomputed from indices inside the fused kernel
    assert line_of(path, "mask = torch.ones") in f["lines"]
    # qkv projection (sliced views) and out projection (merged reshape) stay outside
    assert "linear" not in f["ops"] and "linear_1" not in f["ops"]
    assert f["pattern"].startswith("contraction chain")
    # on H100 a head's K and V fit on chip: Q, K, V and the output each cross DRAM once
    b, s, d = 4, 256, 512
    assert f["bytes_fused"] == 4 * b * s * d * F32
    op_bytes = {o.op: o.bytes for ln in e.lines for o in ln.ops}
    assert f["bytes_unfused"] == sum(op_bytes[o] for o in f["ops"])
    assert f["bytes_saved"] == f["bytes_unfused"] - f["bytes_fused"]
    assert f["t_saved_s"] > 0


def test_mlp_fuses_into_one_kernel_at_compulsory_traffic():
    path = example_path("mlp.py")
    e = only_entry(analyzed(path))
    [f] = e.fusion
    assert f["ops"] == ["layer_norm", "linear", "gelu", "linear_1", "add"]
    assert set(f["lines"]) == {line_of(path, "h = self.up(self.norm(x))"), line_of(path, "F.gelu(h)"),
                               line_of(path, "return x + self.down(h)")}
    rows, d, ff = 8 * 128, 1024, 4096
    compulsory = (2 * rows * d + 2 * d + ff * d + ff + d * ff + d) * F32
    assert compulsory == boundary_bytes(e.program)
    assert f["bytes_fused"] == compulsory == e.totals["bytes_cache_aware"]


def test_resnet_conv_bn_relu_group_and_no_conv_to_conv_fusion():
    path = example_path("resnet_block.py")
    e = only_entry(analyzed(path))
    f = _item_with(e, "conv2d", "_native_batch_norm_legit_no_training", "relu")
    assert f["lines"] == [line_of(path, "y = torch.relu(self.bn1(self.conv1(x)))")]
    for g in e.fusion:  # a 3x3 conv reads a halo of its input: it cannot take conv1 as prologue
        assert not {"conv2d", "conv2d_1"} <= set(g["ops"])


def test_transformer_block_suggestions_are_ranked_and_name_real_lines():
    e = only_entry(analyzed(example_path("transformer_block.py")))
    assert e.fusion
    saved = [f["t_saved_s"] for f in e.fusion]
    assert saved == sorted(saved, reverse=True)
    op_lines = {ln.line for ln in e.lines}
    for f in e.fusion:
        assert {"lines", "ops", "bytes_saved", "t_saved_s"} <= f.keys()
        assert f["lines"] and set(f["lines"]) <= op_lines
        assert f["bytes_saved"] > 0
    _item_with(e, "layer_norm", "linear")  # the norm as prologue of the qkv projection


def test_bytes_and_time_saved_by_hand(tmp_path):
    path = write(tmp_path, "mm_relu.py", """
        import torch


        # solar: x=f32[256,512], w=f32[512,1024]
        def mm_relu(x, w):
            return torch.relu(x @ w)
        """)
    e = only_entry(analyze_file(path, Config(hw=["h100-sxm", "a6000"], verify=False)))
    [f] = e.fusion
    m, k, n = 256, 512, 1024
    x, w, y = m * k * F32, k * n * F32, m * n * F32
    assert f["bytes_unfused"] == (x + w + y) + (y + y)
    assert f["bytes_fused"] == x + w + y
    assert f["bytes_saved"] == 2 * y
    assert f["lines"] == [line_of(path, "torch.relu(x @ w)")]
    for name in ("h100-sxm", "a6000"):
        chip = load_chip(name)
        beta, vec = chip.dram_bytes_per_s, chip.peak("vector", "fp32")
        mm_flops, relu_flops = 2 * m * k * n, m * n
        t_unf = max(mm_flops / vec, (x + w + y) / beta) + max(relu_flops / vec, 2 * y / beta)
        t_fused = max((mm_flops + relu_flops) / vec, (x + w + y) / beta)
        assert f["t_saved_by_hw"][name] == pytest.approx(t_unf - t_fused, rel=1e-9)
    assert f["t_saved_s"] == f["t_saved_by_hw"]["h100-sxm"]


# ------------------------------------------------------------------ rules on IR built directly


def _mm(name, out, a, a_idx, b, b_idx, ext):
    return B.contraction(name, out, ["m", "n"], a, [Affine.var(v) for v in a_idx], b,
                         [Affine.var(v) for v in b_idx], ext)


def test_rules_on_direct_programs():
    p = Program("p", inputs=["a", "b", "c"], outputs=["y", "z"])
    f32 = "float32"
    p.tensors = {"a": TensorType((8, 16), f32), "b": TensorType((16, 32), f32),
                 "c": TensorType((32, 4), f32), "t": TensorType((8, 32), f32),
                 "y": TensorType((8, 4), f32), "z": TensorType((8, 8), f32)}
    p.ops = [
        Op("mm1", "aten.mm.default", 1, ["a", "b"], ["t"],
           [_mm("k1", "t", "a", "mk", "b", "kn", {"m": 8, "n": 32, "k": 16})]),
        # contracts over t's n: a chain
        Op("mm2", "aten.mm.default", 2, ["t", "c"], ["y"],
           [_mm("k2", "y", "t", "mk", "c", "kn", {"m": 8, "n": 4, "k": 32})]),
        # t @ t.T reads t in both operands: every output row needs every row of t
        Op("mm3", "aten.mm.default", 3, ["t"], ["z"],
           [B.Kernel("k3", (("m", 8), ("n", 8), ("k", 32)), Load("z", B.plain(["m", "n"])), "+=",
                     B.call("mul", Load("t", B.plain(["m", "k"])), Load("t", B.plain(["n", "k"]))),
                     unit="matrix")]),
    ]
    fg = fusion.analyze(p)
    assert fg.edges == {("mm1", "mm2"): "contraction chain"}
    assert fg.kind == {"mm1": "contraction", "mm2": "contraction", "mm3": "contraction"}
    assert fusion.candidate_segments(fg, ["mm1", "mm2"]) == [("mm1",), ("mm1", "mm2"), ("mm2",)]


def test_generators_are_free_and_join_no_group():
    e = only_entry(analyzed(example_path("attention.py")))
    fg = fusion.analyze(e.program)
    # the causal mask: torch.ones(S, S).tril() (tril kept whole) and its negation
    assert {"full", "tril", "bitwise_not"} <= fg.free
    grouped = {o for g in fg.groups for o in g}
    assert not grouped & fg.free


def test_analyze_table_shows_cache_aware_time_and_suggestions(cli):
    path = example_path("attention.py")
    r = cli("analyze", path, "--no-verify")
    assert r.code == 0, r.err
    e = only_entry(analyzed(path))
    text = " ".join(r.out.split())
    assert "cache-aware:" in text
    top = e.fusion[0]
    assert f"fuse lines {','.join(map(str, top['lines']))}: {top['pattern']}" in text


# ------------------------------------------------------------------ scans, flips, cats


def test_reverse_cumsum_is_one_kernel_and_still_verifies(tmp_path):
    """KernelBench 91's flip → cumsum → flip: a flip is a reversed read of the same tiles and a
    scan one loop nest over its line, so the three ops are one kernel that reads x once and
    writes the output once; the IR is unchanged, so it still matches torch. 16 KiB on chip:
    less than the tensors alive at once, so this is the ILP's cut, not the everything-fits rule."""
    path = write(tmp_path, "rcs.py", """
        import torch


        # solar: x=f32[64,256]
        def rcs(x):
            return torch.cumsum(x.flip(1), 1).flip(1)
        """)
    e = only_entry(analyze_file(path, Config(hw=["h100-sxm"], verify=True, onchip=16 * 1024)))
    assert e.verification["status"] == "verified", e.verification
    [f] = e.fusion
    assert f["ops"] == ["flip", "cumsum", "flip_1"]
    assert f["pattern"] == "scan (flip+cumsum)"
    assert f["lines"] == [line_of(path, "torch.cumsum(x.flip(1), 1).flip(1)")]
    n = 64 * 256 * F32
    assert f["bytes_unfused"] == 3 * 2 * n  # each op reads and writes one tensor
    assert f["bytes_fused"] == 2 * n == e.totals["bytes_cache_aware"]


def test_cat_fuses_with_its_producer_and_with_its_consumer(tmp_path):
    """A cat's pieces are written by their own kernels: a producer can write its piece in place
    (the exclusive cumsum written as a cat), and a consumer takes each element from its piece
    (KernelBench 92's cat then cumsum). Not both in one kernel here: the relu would read the
    scan's output one element back, an offset read of an intermediate."""
    path = write(tmp_path, "xcs.py", """
        import torch


        # solar: x=f32[64,256]
        def xcs(x):
            y = torch.cat((torch.zeros_like(x[:, :1]), torch.cumsum(x[:, :-1], 1)), 1)
            return torch.relu(y)
        """)
    e = only_entry(analyze_file(path, Config(hw=["h100-sxm"], verify=True, onchip=16 * 1024)))
    assert e.verification["status"] == "verified", e.verification
    fg = fusion.analyze(e.program)
    assert ("cumsum", "cat") in fg.edges
    assert ("cat", "relu") in fg.edges
    r, n, cap = 64, 256, 16 * 1024
    # x[:, :-1] read once, the relu written once, and the part of the scan's output (the cut
    # that moves least: before the cat, not after it) that does not fit on chip written and
    # read back (docs/sol-model.md, Cache-aware: the credit at a cut)
    scan = r * (n - 1) * F32
    assert e.totals["bytes_cache_aware"] == (r * (n - 1) + r * n) * F32 + 2 * (scan - cap)
