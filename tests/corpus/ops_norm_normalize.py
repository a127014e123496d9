"""F.normalize along channels (cosine-similarity heads): L2 norm, clamp, divide."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.normalize(x, dim=1)


def get_inputs():
    return [torch.randn(8, 512, 7, 7)]


def get_init_inputs():
    return []
