"""Dilated, strided im2col (nn.Unfold 3x3, dilation 2, padding 2, stride 2): guarded copy with a zero fill."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.unfold = nn.Unfold(3, dilation=2, padding=2, stride=2)

    def forward(self, x):
        return self.unfold(x)


def get_inputs():
    return [torch.randn(2, 16, 33, 33)]


def get_init_inputs():
    return []
