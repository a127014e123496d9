"""Adaptive max pooling with indices, uneven windows (13x13 -> 5x5: windows of 3 and 4, as in an SPP head)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out, idx = F.adaptive_max_pool2d(x, (5, 5), return_indices=True)
        return out, idx


def get_inputs():
    return [torch.randn(2, 128, 13, 13)]


def get_init_inputs():
    return []
