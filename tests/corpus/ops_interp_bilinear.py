"""Bilinear 2x upsampling, align_corners=False (segmentation decoder): separable two-tap stages."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)


def get_inputs():
    return [torch.randn(1, 64, 56, 56)]


def get_init_inputs():
    return []
