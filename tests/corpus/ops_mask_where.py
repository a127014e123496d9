"""Masks: torch.where with tensor and scalar branches, masked_fill with a scalar and with a
0-d tensor value (attention padding masks)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, scores, pad, other, fill):
        a = torch.where(pad[:, None, :], scores, other)
        b = torch.where(scores > 0, scores, 0.0)
        c = scores.masked_fill(~pad[:, None, :], float("-inf"))
        d = scores.masked_fill(scores < -1, fill)
        return a, b, c, d


def get_inputs():
    return [torch.randn(8, 128, 128), torch.rand(8, 128) > 0.2, torch.randn(8, 128, 128),
            torch.tensor(-3.0)]


def get_init_inputs():
    return []
