"""Group norm, 32 groups over 256 channels (a diffusion UNet block)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(32, 256)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(2, 256, 32, 32)]


def get_init_inputs():
    return []
