"""Attention with QK-norm (OLMo-2 / Qwen3 style): per-head RMSNorm of queries and keys via
F.rms_norm before SDPA, causal (bf16; 512 wide, 8 heads)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.h, self.hd = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.q_norm = nn.Parameter(torch.ones(self.hd))
        self.k_norm = nn.Parameter(torch.ones(self.hd))
        self.o = nn.Linear(dim, dim, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        q = F.rms_norm(q, (self.hd,), self.q_norm, eps=1e-6)
        k = F.rms_norm(k, (self.hd,), self.k_norm, eps=1e-6)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, s, d))


def get_inputs():
    return [torch.randn(2, 128, 512, dtype=torch.bfloat16)]


def get_init_inputs():
    return [512, 8]
