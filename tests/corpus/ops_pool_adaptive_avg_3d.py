"""Adaptive 3-d average pooling of a video feature map (8x14x14 -> 3x5x5, uneven in every dim)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.adaptive_avg_pool3d(x, (3, 5, 5))


def get_inputs():
    return [torch.randn(1, 64, 8, 14, 14)]


def get_init_inputs():
    return []
