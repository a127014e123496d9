"""Average pooling 2x2 / stride 2 with ceil_mode=True on an odd map (7 -> 4): the last window divides by the part inside the input."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.avg_pool2d(x, 2, 2, ceil_mode=True)


def get_inputs():
    return [torch.randn(2, 512, 7, 7)]


def get_init_inputs():
    return []
