"""Nearest downsampling by an integer factor (stride-2 subsampling of a feature map)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, scale_factor=0.5, mode="nearest")


def get_inputs():
    return [torch.randn(2, 64, 112, 112)]


def get_init_inputs():
    return []
