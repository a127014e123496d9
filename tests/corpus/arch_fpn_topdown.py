"""Feature Pyramid Network top-down path: 1x1 lateral convs, nearest 2x upsampling with
F.interpolate, elementwise sum, 3x3 output convs over three levels (fp32)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: list, out_channels: int):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, out_channels, 1) for c in in_channels)
        self.output = nn.ModuleList(nn.Conv2d(out_channels, out_channels, 3, padding=1) for _ in in_channels)

    def forward(self, c3, c4, c5):
        p5 = self.lateral[2](c5)
        p4 = self.lateral[1](c4) + F.interpolate(p5, scale_factor=2.0, mode="nearest")
        p3 = self.lateral[0](c3) + F.interpolate(p4, scale_factor=2.0, mode="nearest")
        return self.output[0](p3), self.output[1](p4), self.output[2](p5)


def get_inputs():
    return [torch.randn(1, 128, 32, 32), torch.randn(1, 256, 16, 16), torch.randn(1, 512, 8, 8)]


def get_init_inputs():
    return [[128, 256, 512], 128]
