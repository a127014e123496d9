"""Space-to-depth (pixel_unshuffle by 2) in front of a 1x1 conv, as in a downsampling stem."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.unshuffle = nn.PixelUnshuffle(2)
        self.proj = nn.Conv2d(3 * 4, 32, 1)

    def forward(self, x):
        return self.proj(self.unshuffle(x))


def get_inputs():
    return [torch.randn(2, 3, 128, 128)]


def get_init_inputs():
    return []
