"""im2col (nn.Unfold, 3x3, padding 1, stride 1) followed by a matmul: convolution as GEMM."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.unfold = nn.Unfold(3, padding=1)
        self.weight = nn.Parameter(torch.randn(64, 32 * 9) * 0.05)

    def forward(self, x):
        cols = self.unfold(x)
        return self.weight @ cols


def get_inputs():
    return [torch.randn(2, 32, 28, 28)]


def get_init_inputs():
    return []
