"""Average pooling 3x3 / stride 2 / padding 1, ceil_mode and count_include_pad=True: divisors clipped to the padded input."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)


def get_inputs():
    return [torch.randn(2, 64, 28, 28)]


def get_init_inputs():
    return []
