"""Group norm without affine parameters (8 groups)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(8, 64, affine=False)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(4, 64, 28, 28)]


def get_init_inputs():
    return []
