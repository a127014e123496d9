"""Instance norm without affine (style transfer): statistics per sample and channel."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm2d(64)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(2, 64, 64, 64)]


def get_init_inputs():
    return []
