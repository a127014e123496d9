"""Causal sliding-window attention (Mistral/Longformer local band of 64 tokens), fp32.

The band mask is built from position differences and passed to SDPA as a boolean mask.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, window: int):
        super().__init__()
        self.window = window

    def forward(self, q, k, v):
        s = q.shape[-2]
        i = torch.arange(s)[:, None]
        j = torch.arange(s)[None, :]
        band = (j <= i) & (i - j < self.window)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=band)


def get_inputs():
    return [torch.randn(1, 4, 256, 64) for _ in range(3)]


def get_init_inputs():
    return [64]
