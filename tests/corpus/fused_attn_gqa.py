"""Grouped-query attention: 8 query heads share 2 KV heads, repeat_kv as in LLaMA (bf16)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class Model(nn.Module):
    def __init__(self, d_model: int, n_heads: int, n_kv: int):
        super().__init__()
        self.h, self.kv, self.hd = n_heads, n_kv, d_model // n_heads
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, n_kv * self.hd, bias=False)
        self.wv = nn.Linear(d_model, n_kv * self.hd, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        k, v = repeat_kv(k, self.h // self.kv), repeat_kv(v, self.h // self.kv)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, s, -1))


def get_inputs():
    return [torch.randn(1, 256, 512, dtype=torch.bfloat16)]


def get_init_inputs():
    return [512, 8, 2]
