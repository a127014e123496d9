"""Adaptive 1-d average pooling of a sequence to 7 buckets (100 -> 7, uneven)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.adaptive_avg_pool1d(x, 7)


def get_inputs():
    return [torch.randn(4, 128, 100)]


def get_init_inputs():
    return []
