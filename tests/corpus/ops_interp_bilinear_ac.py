"""Bilinear resize with align_corners=True to an explicit size (DeepLab-style logits 33 -> 129)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, size=(129, 129), mode="bilinear", align_corners=True)


def get_inputs():
    return [torch.randn(1, 21, 33, 33)]


def get_init_inputs():
    return []
