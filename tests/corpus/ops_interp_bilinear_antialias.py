"""Antialiased bilinear downsampling (torchvision Resize 256 -> 224, antialias=True): the triangle filter widens by the scale."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, size=(224, 224), mode="bilinear", antialias=True)


def get_inputs():
    return [torch.randn(2, 3, 256, 256)]


def get_init_inputs():
    return []
