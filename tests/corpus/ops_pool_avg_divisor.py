"""Average pooling with divisor_override (a sum pool scaled by a fixed constant)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.avg_pool2d(x, 4, 4, divisor_override=8)


def get_inputs():
    return [torch.randn(2, 64, 32, 32)]


def get_init_inputs():
    return []
