"""Multi-head self-attention with a key padding mask (BERT-style batches of ragged length, fp32).

The mask is applied with masked_fill before an explicit softmax, the way most encoder code
written before SDPA does it.
"""
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.h = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, pad):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        att = scores.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        return self.out(y)


def get_inputs():
    x = torch.randn(2, 128, 256)
    lengths = torch.tensor([128, 97])
    pad = torch.arange(128)[None, :] >= lengths[:, None]
    return [x, pad]


def get_init_inputs():
    return [256, 4]
