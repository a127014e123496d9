"""Sub-pixel convolution upsampler (ESPCN): conv to C*r*r channels, then pixel_shuffle(r) as one affine copy."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 3 * 3 * 3, 3, padding=1)
        self.shuffle = nn.PixelShuffle(3)

    def forward(self, x):
        return self.shuffle(self.conv(x))


def get_inputs():
    return [torch.randn(1, 64, 32, 32)]


def get_init_inputs():
    return []
