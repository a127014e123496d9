"""Instance norm with affine weight and bias (1-d, on a sequence)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm1d(128, affine=True)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(4, 128, 500)]


def get_init_inputs():
    return []
