"""Bilinear downsampling to a non-integer size (224 -> 160, a resize in an input pipeline)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, size=(160, 160), mode="bilinear", align_corners=False)


def get_inputs():
    return [torch.randn(2, 3, 224, 224)]


def get_init_inputs():
    return []
