"""Trilinear 2x upsampling of a volume (3-d UNet decoder)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="trilinear", align_corners=False)


def get_inputs():
    return [torch.randn(1, 16, 8, 16, 16)]


def get_init_inputs():
    return []
