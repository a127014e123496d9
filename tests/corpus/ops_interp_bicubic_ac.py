"""Bicubic resize with align_corners=True to a non-integer size (48 -> 72): no period, one kernel per output position."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, size=(72, 72), mode="bicubic", align_corners=True)


def get_inputs():
    return [torch.randn(1, 16, 48, 48)]


def get_init_inputs():
    return []
