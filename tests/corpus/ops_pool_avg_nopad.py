"""Average pooling 3x3 / stride 1 / padding 1 with count_include_pad=False (Inception branch): border divisors are the clipped window sizes."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)


def get_inputs():
    return [torch.randn(2, 192, 35, 35)]


def get_init_inputs():
    return []
