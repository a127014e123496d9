"""GroupNorm(32) + SiLU + 3x3 conv: the pre-activation unit of diffusion-model ResBlocks (fp32)."""
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(32, channels)
        self.act = nn.SiLU()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.conv(self.act(self.norm(x)))


def get_inputs():
    import torch
    return [torch.randn(1, 128, 32, 32)]


def get_init_inputs():
    return [128]
