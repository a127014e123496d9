"""Antialiased bicubic 2x downsampling (Keys a = -0.5 filter over 8 taps)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, scale_factor=0.5, mode="bicubic", antialias=True)


def get_inputs():
    return [torch.randn(1, 3, 128, 128)]


def get_init_inputs():
    return []
