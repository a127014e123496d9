"""Max pooling 3x3 / stride 2 / padding 1 with return_indices (a SegNet encoder): indices computed, not just values."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        return out, idx


def get_inputs():
    return [torch.randn(1, 64, 112, 112)]


def get_init_inputs():
    return []
