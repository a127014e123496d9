"""Attention with an additive float bias passed to SDPA as attn_mask (fp32).

The bias is a learned per-head [H, S, S] table, as in relative-position schemes that
precompute their bias once.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, n_heads: int, seq: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n_heads, seq, seq) * 0.02)

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)


def get_inputs():
    return [torch.randn(2, 4, 128, 64) for _ in range(3)]


def get_init_inputs():
    return [4, 128]
