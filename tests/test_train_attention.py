"""Attention in a training step kept whole (issue 19; docs/training.md, "Attention"): one
forward op and one backward op on the attention's line, the backward's four products (2x the
forward's two), causal masks (``is_causal`` or a ``tril`` mask) counted on the lower triangle
forward and backward, the backward's dQ, dK, dV verified against torch, and a planted bug in
the backward's lowering caught."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import line_of, write
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from solar_lsp.bounds.einsum_graph import Counts, count_kernel
from solar_lsp.frontend.torch import attention_backward
from solar_lsp.frontend.torch.context import LOWERINGS
from solar_lsp.frontend.torch.lower import lower
from solar_lsp.frontend.torch.trace import build, load_module
from solar_lsp.frontend.torch.train import trace_train
from solar_lsp.source.discover import discover

B, H, HKV, S, D = 2, 4, 2, 16, 8
FORWARD = "solar.scaled_dot_product_attention.default"
BACKWARD = "solar.scaled_dot_product_attention_backward.default"

MODEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, h={h}, hkv={hkv}, d={d}):
        super().__init__()
        self.h, self.hkv, self.d = h, hkv, d
        self.q = nn.Linear(h * d, h * d)
        self.kv = nn.Linear(h * d, 2 * hkv * d)
        self.out = nn.Linear(h * d, h * d)
        self.to({dtype})

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.h, self.d).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2 * self.hkv, self.d).transpose(1, 2).chunk(2, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, {args})  # attn
        return self.out(a.transpose(1, 2).reshape(b, s, self.h * self.d))


def get_inputs():
    return [torch.randn({b}, {s}, {h} * {d}, dtype={dtype})]


def get_init_inputs():
    return []
"""

VARIANTS = {
    "full": "",
    "causal": "is_causal=True",
    "tril": "attn_mask=torch.ones(s, s, dtype=torch.bool, device=x.device).tril()",
    "float_mask_scale": "attn_mask=torch.arange(s * s, dtype=x.dtype, device=x.device).view(s, s) / (s * s), scale=0.3",
    "gqa_causal": "is_causal=True, enable_gqa=True",
    "bf16_causal": "is_causal=True",
}


def model_file(tmp_path, variant: str) -> str:
    hkv = HKV if "gqa" in variant else H
    dtype = "torch.bfloat16" if "bf16" in variant else "torch.float32"
    return write(tmp_path, f"attn_{variant}.py", MODEL.format(h=H, hkv=hkv, d=D, b=B, s=S, dtype=dtype,
                                                              args=VARIANTS[variant]))


def traced_and_lowered(path: str):
    module = load_module(path)
    entry = discover(open(path).read(), path, {})[0]
    traced = trace_train(module, entry, path)
    return module, traced, lower(traced)


def op_tensor_flops(program, target: str) -> int:
    """Tensor FLOPs of every op with ``target`` (a recompute part included, at its repeat)."""
    return sum(count_kernel(k).tensor_flops * op.repeat for op in program.ops if op.target == target
               for k in op.kernels)


def full_square(product_count: int) -> int:
    """``product_count`` S x S x D products per batch and head, 2 FLOPs a MAC."""
    return product_count * 2 * B * H * S * S * D


def lower_triangle(product_count: int) -> int:
    """The same products over the causal points only (key <= query): S(S+1)/2 per head."""
    return product_count * 2 * B * H * (S * (S + 1) // 2) * D


@pytest.mark.parametrize("variant", ["full", "causal", "tril", "gqa_causal"])
def test_attention_is_one_op_each_way_with_twice_the_work_backward(tmp_path, variant):
    path = model_file(tmp_path, variant)
    _, traced, lowered = traced_and_lowered(path)
    assert not lowered.unsupported, lowered.unsupported
    p, attn = lowered.program, line_of(path, "# attn")
    on_line = [op for op in p.ops if op.line == attn and op.kind == "compute"]
    owners = sorted((op.target, op.phase) for op in on_line if op.repeat and op.target.startswith("solar."))
    assert owners == [(FORWARD, "forward"), (BACKWARD, "backward")]
    assert not [op.target for op in on_line if "bmm" in op.target or "softmax" in op.target]
    fwd, bwd = op_tensor_flops(p, FORWARD), op_tensor_flops(p, BACKWARD)
    per = lower_triangle if "causal" in variant or variant == "tril" else full_square
    assert fwd == per(2)  # Q·Kᵀ and P·V
    assert bwd == per(4) == 2 * fwd  # dV, dP, dQ, dK; the recompute of Q·Kᵀ is not charged


def test_tril_mask_counts_as_is_causal(tmp_path):
    counts = {}
    for variant in ("causal", "tril"):
        _, _, lowered = traced_and_lowered(model_file(tmp_path, variant))
        p = lowered.program
        counts[variant] = [sum((count_kernel(k) for k in op.kernels), Counts()).times(op.repeat)
                           for op in p.ops if op.target in (FORWARD, BACKWARD)]
    assert counts["tril"] == counts["causal"]
    assert counts["causal"][0].tensor_flops < full_square(2)


@pytest.mark.parametrize("variant", ["causal", "tril", "float_mask_scale", "gqa_causal", "bf16_causal"])
def test_attention_backward_is_verified_against_torch(tmp_path, variant):
    from solar_lsp.verify.check_torch import verify
    path = model_file(tmp_path, variant)
    module, traced, lowered = traced_and_lowered(path)
    v = verify(traced, lowered, module)
    assert v.status == "verified", v.detail
    status = {c.op: c.status for c in v.ops}
    ids = {op.target: op.id for op in lowered.program.ops if op.repeat}
    assert status[ids[FORWARD]] == status[ids[BACKWARD]] == "verified"
    assert v.to_json()["counts"]["status"] == "checked"


def test_planted_backward_bug_is_caught(tmp_path, monkeypatch):
    """The backward's dS without the softmax scale: dQ and dK are off by 1/scale."""
    from solar_lsp.verify.check_torch import verify
    real = attention_backward._gradients

    def unscaled(c, at, *rest):
        return real(c, dataclasses.replace(at, scale=1.0), *rest)
    monkeypatch.setattr(attention_backward, "_gradients", unscaled)
    assert LOWERINGS[BACKWARD] is attention_backward._sdpa_backward
    path = model_file(tmp_path, "causal")
    module, traced, lowered = traced_and_lowered(path)
    v = verify(traced, lowered, module)
    assert v.status == "mismatch"
    target = {op.id: op.target for op in lowered.program.ops}
    bad = {target[c.op] for c in v.ops if c.status == "mismatch"}
    assert bad == {BACKWARD}


def test_step_matches_flop_counter_mode_of_the_math_backend(tmp_path):
    """Non-causal: the step's tensor FLOPs equal FlopCounterMode's over an eager step with the
    math backend (whose backward is the four products). torch's formula for the fused
    backward kernels (``sdpa_backward_flop_count``) counts a fifth product, the recompute of
    Q·Kᵀ, which the counting rule leaves out."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    path = model_file(tmp_path, "full")
    module, _, lowered = traced_and_lowered(path)
    ir = sum(count_kernel(k).tensor_flops * op.repeat for op in lowered.program.ops for k in op.kernels)
    entry = discover(open(path).read(), path, {})[0]
    model, inputs = build(module, entry, path, device="cpu")
    with FlopCounterMode(display=False) as mode, sdpa_kernel(SDPBackend.MATH):
        torch.autograd.grad(model(*inputs).mean(), [q for q in model.parameters() if q.requires_grad])
    assert ir == mode.get_total_flops()
    shape = (B, H, S, D)
    fused = flop_counter.sdpa_backward_flop_count(shape, shape, shape, shape)
    assert op_tensor_flops(lowered.program, BACKWARD) * 5 == fused * 4


def test_calls_the_op_pair_does_not_cover_stay_decomposed():
    q = torch.randn(1, 2, 4, 8)
    assert attention_backward.one_op_args((q, q, q), {"is_causal": True}) is not None
    assert attention_backward.one_op_args((q, q, q), {"dropout_p": 0.1}) is None
    learned = torch.zeros(4, 4, requires_grad=True)
    assert attention_backward.one_op_args((q, q, q, learned), {}) is None


MHA = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention({h} * {d}, {h}, batch_first=True)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask({s}, device=x.device)
        y, _ = self.mha(x, x, x, need_weights=False, attn_mask=mask, is_causal=True)  # attn
        return y


def get_inputs():
    return [torch.randn({b}, {s}, {h} * {d})]


def get_init_inputs():
    return []
"""


def test_multihead_attention_is_kept_whole_too(tmp_path):
    """nn.MultiheadAttention calls SDPA from inside torch (F.multi_head_attention_forward)."""
    from solar_lsp.verify.check_torch import verify
    path = write(tmp_path, "mha.py", MHA.format(h=H, d=D, b=B, s=S))
    module, traced, lowered = traced_and_lowered(path)
    assert not lowered.unsupported, lowered.unsupported
    p = lowered.program
    assert op_tensor_flops(p, FORWARD) == lower_triangle(2)
    assert op_tensor_flops(p, BACKWARD) == lower_triangle(4)
    assert not [op for op in p.ops if "bmm" in op.target and op.line == line_of(path, "# attn")]
    assert verify(traced, lowered, module).status == "verified"
