"""Causal self-attention through scaled_dot_product_attention(is_causal=True), fp16."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.h = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False).half()
        self.out = nn.Linear(d_model, d_model, bias=False).half()

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.h, d // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, d))


def get_inputs():
    return [torch.randn(1, 256, 512, dtype=torch.float16)]


def get_init_inputs():
    return [512, 8]
