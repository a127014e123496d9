"""Max pooling 3x3 / stride 2 with ceil_mode=True (GoogLeNet/SqueezeNet style): the last window is clipped."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.max_pool2d(x, 3, 2, ceil_mode=True)


def get_inputs():
    return [torch.randn(2, 96, 55, 55)]


def get_init_inputs():
    return []
