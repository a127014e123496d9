"""Layer norm without elementwise affine over the hidden dim."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(768, elementwise_affine=False)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(4, 197, 768)]


def get_init_inputs():
    return []
