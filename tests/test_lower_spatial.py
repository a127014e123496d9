"""Interpolation, pixel shuffle, im2col/col2im, pooling, recurrent layers, norms, einsum and
dtypes: every corpus file of these families is analyzed and verified against torch; matrix
FLOPs equal FlopCounterMode where it counts, else a hand formula; vector FLOPs follow the
formulas of docs/sol-model.md, written out here; bytes and peaks follow each dtype."""

from __future__ import annotations

import math
import pathlib

import pytest
import torch
import torch.nn.functional as F
from conftest import corpus_entry, write
from torch.utils.flop_counter import FlopCounterMode

from solar_lsp.frontend.torch import resample as R
from solar_lsp.frontend.torch.trace import build, load_module
from solar_lsp.hardware.chips import load_chip
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.source.discover import discover_file

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"
FAMILIES = ("interp", "spatial", "rnn", "norm", "pool", "einsum", "dtype")
FILES = sorted(p.name for f in FAMILIES for p in CORPUS.glob(f"ops_{f}_*.py"))


report = corpus_entry


def test_corpus_covers_every_family():
    assert len(FILES) >= 45
    for f in FAMILIES:
        assert any(n.startswith(f"ops_{f}_") for n in FILES), f


@pytest.mark.parametrize("name", FILES)
def test_corpus_file_verified(name):
    e = report(name)
    assert e.status == "ok", e.error
    assert e.unsupported == []
    assert e.verification["status"] == "verified", e.verification


# ------------------------------------------------------------------ matrix FLOPs


def lstm_flops(T: int, B: int, I: int, H: int, layers: int = 1, dirs: int = 1, proj: int = 0) -> int:
    """2 x MACs: input projection and recurrent product per layer and direction (+ W_hr)."""
    out = proj or H
    macs = 0
    for layer in range(layers):
        feat = I if layer == 0 else dirs * out
        macs += dirs * T * B * 4 * H * (feat + out)
        macs += dirs * T * B * out * H if proj else 0
    return 2 * macs


# FlopCounterMode counts nothing for these on the CPU (mkldnn LSTM, _int_mm): hand formulas
HAND_TENSOR = {
    "ops_rnn_lstm.py": lstm_flops(32, 4, 128, 256),
    "ops_rnn_lstm_bidir.py": lstm_flops(24, 4, 64, 128, layers=2, dirs=2),
    "ops_rnn_lstm_state.py": lstm_flops(16, 8, 96, 192, layers=2),
    "ops_dtype_int8_mm.py": 2 * 64 * 1024 * 512,
}


@pytest.mark.parametrize("name", FILES)
def test_tensor_flops_equal_flop_counter(name):
    path = str(CORPUS / name)
    entry = discover_file(path)[0]
    model, inputs = build(load_module(path), entry, path, device="cpu")
    with FlopCounterMode(display=False) as fc, torch.no_grad():
        model(*inputs)
    counted = fc.get_total_flops()
    got = report(name, verify=False).totals["tensor_flops"]
    if counted:
        assert name not in HAND_TENSOR
        assert got == counted
    else:
        assert got == HAND_TENSOR.get(name, 0)


def test_lstm_with_projection_equals_flop_counter_and_formula():
    """With proj_size torch's CPU path runs addmm/mm per step, which FlopCounterMode counts."""
    assert report("ops_rnn_lstm_proj.py", verify=False).totals["tensor_flops"] == \
        lstm_flops(32, 4, 80, 256, proj=64)


# ------------------------------------------------------------------ vector FLOPs by hand


def vflops(name: str) -> int:
    return report(name, verify=False).totals["vector_flops"]


def test_bilinear_vector_flops():
    """Separable stages; an output with two taps costs 2 muls + 1 add, a clamped border output
    (one tap of weight 1) is a copy. 2x, align_corners=False: the first and last outputs of
    each dim are clamped."""
    n, c, h, w = 1, 64, 56, 56
    oh, ow = 2 * h, 2 * w
    stage_h = n * c * w * (oh - 2) * 3
    stage_w = n * c * oh * (ow - 2) * 3
    assert vflops("ops_interp_bilinear.py") == stage_h + stage_w


def test_bicubic_vector_flops_match_merged_taps():
    """Four taps (4 muls + 3 adds) per interior output; taps clamped onto the same input
    merge, so border outputs cost less. The taps per output are counted from torch itself:
    interpolate each one-hot row and count the inputs that reach an output."""
    n, c, s = 1, 3, 64
    basis = torch.eye(s, dtype=torch.float64).reshape(s, 1, 1, s)
    mat = F.interpolate(basis, size=(1, 2 * s), mode="bicubic", align_corners=False).reshape(s, 2 * s)
    taps = (mat != 0).sum(dim=0).tolist()
    per = sum(2 * k - 1 for k in taps if k > 1)
    assert vflops("ops_interp_bicubic.py") == n * c * (s * per + 2 * s * per)


def test_nearest_and_shuffles_are_free():
    for name in ("ops_interp_nearest2x.py", "ops_interp_nearest_frac.py", "ops_interp_nearest3d.py",
                 "ops_spatial_unfold_patches.py", "ops_spatial_fold_patches.py"):
        assert vflops(name) == 0, name
    # pixel shuffle is a copy: its file's vector work is the conv bias only (none counted)
    e = report("ops_spatial_pixel_shuffle.py", verify=False)
    shuffle = [o for ln in e.lines for o in ln.ops if o.target == "aten.pixel_shuffle.default"]
    assert len(shuffle) == 1 and shuffle[0].vector_flops == 0 and shuffle[0].bytes == \
        2 * 27 * 32 * 32 * 4


def test_overlapping_fold_counts_one_add_per_contribution():
    assert vflops("ops_spatial_fold.py") == 2 * 16 * 9 * 28 * 28


def test_lstm_vector_flops():
    """Per layer and direction: bias b_ih + b_hh once per gate element and step; per step
    and hidden unit c = s(f)*c + s(i)*tanh(g) (6) and h = s(o)*tanh(c) (3)."""
    T, B, H = 32, 4, 256
    assert vflops("ops_rnn_lstm.py") == T * B * 4 * H + T * B * H * 9
    T, B, H = 24, 4, 128
    assert vflops("ops_rnn_lstm_bidir.py") == 4 * (T * B * 4 * H + T * B * H * 9)


def test_gru_and_rnn_vector_flops():
    """GRU per step and unit: r, z (add + sigmoid each), n (mul, add, tanh), h = n + z*(h-n)
    (sub, mul, add): 10. Elman RNN: bias add per step and unit (1) + tanh/relu (1)."""
    assert vflops("ops_rnn_gru.py") == 32 * 4 * 256 * 10
    assert vflops("ops_rnn_gru_bidir.py") == 2 * 2 * 20 * 4 * 96 * 10
    assert vflops("ops_rnn_tanh.py") == 2 * 40 * 8 * 128 * 2


def test_norm_vector_flops():
    """Sum (1) and sum of squares (2) per element; mean (1) and rstd (mul, mul, sub, add,
    rsqrt: 5) per statistic; output (x - mean) * rstd (2) per element, or, when the affine
    folds per (statistic, channel), scale (1) and shift (2) per table entry and x*scale +
    shift (2) per element."""
    n, c, h, w = 8, 64, 28, 28
    el = n * c * h * w
    running = 3 + 7  # (1-m)*rm + m*mean ; (1-m)*rv + m*(Q/n - mean^2)*n/(n-1)
    assert vflops("ops_norm_batch_train.py") == 5 * el + c * (1 + 5 + running + 1 + 2)
    rows, d = 4 * 197, 768
    assert vflops("ops_norm_layer_noaffine.py") == 5 * rows * d + 6 * rows
    n, c, g, hw = 2, 256, 32, 32 * 32
    assert vflops("ops_norm_group.py") == 5 * n * c * hw + 6 * n * g + 3 * n * c
    # RMS: sum of squares (2), rstd (mul, add, rsqrt: 3) per row, x * rstd (* w)
    rows, d = 2 * 128, 4096
    rms = 2 * rows * d + 3 * rows
    assert vflops("ops_norm_rms.py") == (rms + 2 * rows * d) + (rms + rows * d) + rows * d


def test_pool_vector_flops():
    """One add per window point, one multiply (or divide) per output by the divisor."""
    n, c, s = 2, 192, 35
    assert vflops("ops_pool_avg_nopad.py") == n * c * s * s * 9 + n * c * s * s
    # adaptive 14 -> 5: windows [0,3) [2,6) [5,9) [8,12) [11,14): sizes 3,4,4,4,3
    sizes = [hi - lo for lo, hi in ((0, 3), (2, 6), (5, 9), (8, 12), (11, 14))]
    assert [k for _, k in R.adaptive_windows(14, 5)] == sizes
    assert vflops("ops_pool_adaptive_avg_uneven.py") == 2 * 256 * (sum(sizes) ** 2 + 25)
    # max with indices: max (1) + compare and min-index (2) per window point
    assert vflops("ops_pool_max_indices.py") == 64 * 56 * 56 * 9 * 3


def test_einsum_outer_is_one_multiply_per_output():
    assert vflops("ops_einsum_outer.py") == 256 * 512 * 2 + 16 * 64 * 96


# ------------------------------------------------------------------ dtypes: bytes and peaks


def test_bytes_follow_dtype():
    e = report("ops_dtype_int8_mm.py", verify=False)
    assert e.totals["bytes_unfused"] == 64 * 1024 + 1024 * 512 + 64 * 512 * 4
    e = report("ops_dtype_bf16_linear.py", verify=False)
    assert e.totals["bytes_fused"] == 2 * (4 * 128 * 1024 * 2 + 1024 * 1024 + 1024)
    e = report("ops_dtype_fp8_scaled_mm.py", verify=False)
    sm = [o for ln in e.lines for o in ln.ops if o.target == "aten._scaled_mm.default"][0]
    assert sm.bytes == 128 * 512 + 256 * 512 + 4 + 4 + 128 * 256 * 2


@pytest.mark.parametrize("name,dtype", [("ops_dtype_int8_mm.py", "int8"),
                                        ("ops_dtype_fp8_scaled_mm.py", "fp8"),
                                        ("ops_dtype_bf16_linear.py", "bf16"),
                                        ("ops_dtype_fp16_mlp.py", "fp16")])
def test_matrix_peak_follows_dtype(name, dtype):
    chip = load_chip("h100-sxm")
    e = report(name, verify=False)
    t = e.by_hardware["h100-sxm"]["unit_times_fused_s"]["matrix"]
    assert t == pytest.approx(e.totals["tensor_flops"] / chip.peak("matrix", dtype), rel=1e-9)


# ------------------------------------------------------------------ resampling unit tests


@pytest.mark.parametrize("mode,ac", [("linear", False), ("linear", True), ("cubic", False),
                                     ("cubic", True), ("nearest", None), ("nearest_exact", None),
                                     ("linear_aa", False), ("cubic_aa", True)])
@pytest.mark.parametrize("isize,osize,scale", [(7, 14, 2.0), (10, 15, 1.5), (48, 72, None),
                                               (33, 129, None), (20, 9, None), (6, 6, None),
                                               (64, 40, None), (40, 20, 0.5)])
def test_taps_reproduce_torch_interpolation(mode, ac, isize, osize, scale):
    """The taps applied to each one-hot input give torch's own interpolation matrix, within the
    float32 rounding of torch's weight polynomials (a few ulps of 1)."""
    kw = {} if ac is None else {"align_corners": ac}
    if mode in ("nearest", "nearest_exact"):
        taps = R.nearest_taps(isize, osize, scale, mode == "nearest_exact")
        tmode = "nearest" if mode == "nearest" else "nearest-exact"
    elif mode in ("linear_aa", "cubic_aa"):
        taps = R.antialias_taps(isize, osize, ac, scale, cubic=mode == "cubic_aa")
        tmode = "bilinear" if mode == "linear_aa" else "bicubic"
        kw["antialias"] = True
    else:
        taps = (R.linear_taps if mode == "linear" else R.cubic_taps)(isize, osize, ac, scale)
        tmode = "bilinear" if mode == "linear" else "bicubic"
    # 2-d interpolation of a [isize, 1, 1, isize] one-hot batch along the width only
    x = torch.eye(isize, dtype=torch.float32).reshape(isize, 1, 1, isize)
    args = {"size": (1, osize)} if scale is None else {"scale_factor": (1.0, scale)}
    ref = F.interpolate(x, mode=tmode, **args, **kw).reshape(isize, osize).double()
    got = torch.zeros(isize, osize, dtype=torch.float64)
    for o, t in enumerate(taps):
        for i, wgt in t:
            got[i, o] += wgt
    assert torch.allclose(got, ref, atol=3e-6), (got - ref).abs().max()


@pytest.mark.parametrize("isize,osize,ac", [(56, 112, False), (56, 84, False), (33, 129, True),
                                            (224, 160, False), (13, 5, False)])
def test_runs_cover_every_output_once(isize, osize, ac):
    taps = R.linear_taps(isize, osize, ac, None)
    runs = R.taps_runs(taps, isize / osize)
    seen = []
    for r in runs:
        for p in range(r.count):
            o = r.start + p * r.step
            seen.append(o)
            assert [i for i, _ in taps[o]] == [i + p * r.shift for i in r.idx]
            assert all(abs(w - v) <= R.WEIGHT_TOL for (_, w), v in zip(taps[o], r.payload))
    assert sorted(seen) == list(range(osize))
    if (isize, osize) == (56, 112):  # periodic: two residues, each with one clamped border
        assert len(runs) == 4


def test_wrong_weights_are_caught(monkeypatch):
    """Verification is not vacuous: bicubic with A = -0.5 instead of torch's -0.75 mismatches."""
    monkeypatch.setattr(R, "CUBIC_A", -0.5)
    r = analyze_file(str(CORPUS / "ops_interp_bicubic.py"), Config())
    assert r.entries[0].verification["status"] == "mismatch"


# ------------------------------------------------------------------ recurrent graph size

LONG_LSTM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(32, 48, num_layers=2, bidirectional=True)

    def forward(self, x):
        return self.rnn(x)[0]


def get_inputs():
    return [torch.randn(64, 2, 32)]


def get_init_inputs():
    return []
'''


def test_long_bidirectional_lstm_graph_stays_small(tmp_path):
    """2 layers x 2 directions x 64 steps: one framework op (plus the zero initial states), its
    step emitted once as a loop body (repeat 64), where full decomposition gives thousands of
    ATen nodes."""
    e = analyze_file(write(tmp_path, "long_lstm.py", LONG_LSTM), Config(verify=False)).entries[0]
    assert e.status == "ok" and e.unsupported == []
    lstm_ops = [o for ln in e.lines for o in ln.ops if o.target == "aten.lstm.input"]
    assert len(lstm_ops) == 1
    assert e.graph["aten_nodes"] <= 8
    layers_dirs, T = 4, 64
    # per layer and direction: bias + projection, the step's 4 kernels (gi[t] copy, h W_hh^T,
    # c, h) once, the c_n and h_n slot copies; + the h_n copy + 2 zero fills
    assert e.graph["kernels"] == layers_dirs * (2 + 4 + 2) + 1 + 2
    print(f"\n2x2 LSTM, 64 steps: trace {e.timings['trace_s']:.2f} s, "
          f"{e.graph['kernels']} kernels, {e.graph['nodes']} graph nodes")
    assert e.totals["tensor_flops"] == lstm_flops(T, 2, 32, 48, layers=2, dirs=2)


def test_unbatched_gru(tmp_path):
    src = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(16, 24)

    def forward(self, x):
        return self.rnn(x)[0]


def get_inputs():
    return [torch.randn(10, 16)]


def get_init_inputs():
    return []
'''
    e = analyze_file(write(tmp_path, "unbatched.py", src), Config()).entries[0]
    assert e.status == "ok" and e.unsupported == []
    assert e.verification["status"] == "verified", e.verification
    assert e.totals["tensor_flops"] == 2 * 10 * 3 * 24 * (16 + 24)
    assert math.isfinite(e.totals["t_fused_s"])
