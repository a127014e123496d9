"""Bounds against published GPU timings (issue 15: "no implementation on this chip can be
faster than this bound"). Own models at KernelBench's shapes, so no KernelBench checkout is
needed; the timings are KernelBench's H100 SXM results
(results/timing/H100_Modal/baseline_time_torch_compile_inductor_default.json, the fastest
of 100 trials, "NVIDIA H100 80GB HBM3"). Analysis runs on meta tensors: no memory, no GPU."""

from __future__ import annotations

import pytest
from conftest import analyzed, only_entry, write

from solar_lsp.hardware.chips import load_chip

SDPA_F32_MS = 8.02  # level1/97_ScaledDotProductAttention.py, torch.compile, min
REVERSE_CUMSUM_MS = 7.39  # level1/91_cumsum_reverse.py, torch.compile, min


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("truth")
    return {
        "sdpa": write(d, "sdpa_f32.py", """
            import torch.nn.functional as F

            # solar: q=f32[32,32,512,1024], k=f32[32,32,512,1024], v=f32[32,32,512,1024]
            def sdpa(q, k, v):
                return F.scaled_dot_product_attention(q, k, v)
            """),
        "cumsum": write(d, "reverse_cumsum.py", """
            import torch

            # solar: x=f32[32768,32768]
            def reverse_cumsum(x):
                return torch.cumsum(x.flip(1), dim=1).flip(1)
            """),
        "causal": write(d, "causal_f16.py", """
            import torch
            import torch.nn.functional as F

            # solar: q=f16[4,16,2048,64], k=f16[4,16,2048,64], v=f16[4,16,2048,64]
            def causal(q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)

            # solar: q=f16[4,16,2048,64], k=f16[4,16,2048,64], v=f16[4,16,2048,64]
            def causal_mask(q, k, v):
                s = q.shape[-2]
                mask = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

            # solar: q=f16[4,16,2048,64], k=f16[4,16,2048,64], v=f16[4,16,2048,64]
            def full(q, k, v):
                return F.scaled_dot_product_attention(q, k, v)
            """),
        "conv": write(d, "conv_f32.py", """
            import torch.nn.functional as F

            # solar: x=f32[16,256,64,64], w=f32[256,256,3,3]
            def conv(x, w):
                return F.conv2d(x, w, padding=1)
            """),
    }


def entries(path: str, hw: str = "h100-sxm") -> dict:
    r = analyzed(path, verify=False, hw=(hw,))
    assert r.error is None, r.error
    return {e.name: e for e in r.entries}


def test_fp32_sdpa_bound_is_below_the_h100_timing(files, record_property):
    """fp32 attention runs on TF32 tensor cores in torch's memory-efficient kernel whatever
    allow_tf32 says: priced at the fp32 vector peak the bound was 16.4 ms, twice the 8.02 ms
    measured."""
    e = only_entry(analyzed(files["sdpa"], verify=False))
    t = e.totals
    h100 = load_chip("h100-sxm")
    assert t["tensor_flops"] == 2 * 2 * 32 * 32 * 512 * 512 * 1024  # QK^T and PV
    assert e.by_hardware["h100-sxm"]["unit_times_fused_s"]["matrix"] == pytest.approx(
        t["tensor_flops"] / h100.matrix["tf32"])
    for key in ("t_fused_s", "t_cache_aware_s"):
        record_property(f"tightness_{key}", SDPA_F32_MS * 1e-3 / t[key])
        assert t[key] < SDPA_F32_MS * 1e-3, (key, t[key])


def test_reverse_cumsum_fused_bound_is_below_the_h100_timing(files, record_property):
    t = only_entry(analyzed(files["cumsum"], verify=False)).totals
    record_property("tightness_fused", REVERSE_CUMSUM_MS * 1e-3 / t["t_fused_s"])
    assert t["t_fused_s"] < REVERSE_CUMSUM_MS * 1e-3


def test_reverse_cumsum_cache_aware_bound_is_below_the_h100_timing(files, record_property):
    """The flips are views a fused scan reads backwards: nothing forces a DRAM round trip
    (the cache-aware bound was 7.63 ms, above the 7.39 ms measured)."""
    t = only_entry(analyzed(files["cumsum"], verify=False)).totals
    record_property("tightness_cache_aware", REVERSE_CUMSUM_MS * 1e-3 / t["t_cache_aware_s"])
    assert t["t_cache_aware_s"] < REVERSE_CUMSUM_MS * 1e-3


def test_causal_attention_counts_the_lower_triangle(files):
    """A flash kernel skips the blocks above the diagonal: is_causal, or a tril mask built
    in the function, counts the S(S+1)/2 lower triangle per batch and head, and the bound
    is below the full attention's."""
    es = entries(files["causal"])
    b, h, s, d = 4, 16, 2048, 64
    tri = s * (s + 1) // 2
    full = es["full"].totals
    assert full["tensor_flops"] == 2 * 2 * b * h * s * s * d
    for name in ("causal", "causal_mask"):
        t = es[name].totals
        assert t["tensor_flops"] == 2 * 2 * b * h * tri * d, name
        assert t["transcendentals"] == b * h * tri, name  # one exp per unmasked score
        assert t["t_fused_s"] < full["t_fused_s"], name
        assert t["t_cache_aware_s"] < full["t_cache_aware_s"], name
    # the mask is made on chip: no DRAM traffic for it in the fused bound, and its
    # unfused cost is one bool [S, S] write and read, no int64 index grids
    qkvo = 4 * b * h * s * d * 2
    assert es["causal_mask"].totals["bytes_fused"] == qkvo
    assert es["causal_mask"].totals["bytes_unfused"] <= qkvo + 4 * s * s


def test_thor_fp32_convolution_is_priced_at_a_matrix_rate(files):
    """Thor lists no TF32 tensor peak: an fp32 convolution (cuDNN's TF32 default) was priced
    at the fp32 vector rate; now at the fp16 tensor figure, an upper bound of TF32's, with a
    note saying so."""
    e = only_entry(analyzed(files["conv"], verify=False, hw=("jetson-thor",)))
    thor = load_chip("jetson-thor")
    t_matrix = e.by_hardware["jetson-thor"]["unit_times_fused_s"]["matrix"]
    assert t_matrix == pytest.approx(e.totals["tensor_flops"] / thor.matrix["fp16"])
    assert t_matrix < e.totals["tensor_flops"] / thor.vector["fp32"] / 10
    notes = [n for n in e.notes if n["kind"] == "peak"]
    assert notes and "matrix.tf32 is not listed" in notes[0]["note"], e.notes
    assert notes[0]["line"] is not None
