"""T5 self-attention with bucketed relative position bias: buckets from log-spaced distances
(bidirectional, 32 buckets, max distance 128), an embedding of buckets per head added to the scores;
T5 applies no 1/sqrt(d) scaling (fp32)."""
import math

import torch
import torch.nn as nn


def relative_position_bucket(rel, num_buckets: int = 32, max_distance: int = 128):
    num_buckets //= 2
    buckets = (rel > 0).to(torch.long) * num_buckets
    rel = torch.abs(rel)
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, rel, large)


class Model(nn.Module):
    def __init__(self, d_model: int, heads: int, d_kv: int):
        super().__init__()
        self.h, self.dk = heads, d_kv
        self.q = nn.Linear(d_model, heads * d_kv, bias=False)
        self.k = nn.Linear(d_model, heads * d_kv, bias=False)
        self.v = nn.Linear(d_model, heads * d_kv, bias=False)
        self.o = nn.Linear(heads * d_kv, d_model, bias=False)
        self.rel_bias = nn.Embedding(32, heads)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.h, self.dk).transpose(1, 2)
        k = self.k(x).view(b, s, self.h, self.dk).transpose(1, 2)
        v = self.v(x).view(b, s, self.h, self.dk).transpose(1, 2)
        pos = torch.arange(s)
        bucket = relative_position_bucket(pos[None, :] - pos[:, None])
        bias = self.rel_bias(bucket).permute(2, 0, 1)[None]
        scores = q @ k.transpose(-1, -2) + bias
        y = scores.softmax(-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, s, -1))


def get_inputs():
    return [torch.randn(2, 128, 512)]


def get_init_inputs():
    return [512, 8, 64]
