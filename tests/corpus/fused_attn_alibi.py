"""Causal attention with ALiBi linear biases (BLOOM/MPT), bias built from arange in forward (fp32)."""
import math

import torch
import torch.nn as nn


def alibi_slopes(n_heads: int) -> torch.Tensor:
    start = 2 ** (-8 / n_heads)
    return torch.tensor([start ** (i + 1) for i in range(n_heads)])


class Model(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.h = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("slopes", alibi_slopes(n_heads))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        pos = torch.arange(s)
        dist = (pos[None, :] - pos[:, None]).float()  # j - i, <= 0 below the diagonal
        bias = self.slopes[:, None, None] * dist[None]
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.h) + bias
        scores = scores.masked_fill(pos[None, :] > pos[:, None], float("-inf"))
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)


def get_inputs():
    return [torch.randn(1, 256, 256)]


def get_init_inputs():
    return [256, 8]
