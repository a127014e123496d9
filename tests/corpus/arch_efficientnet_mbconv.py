"""EfficientNet MBConv: 1x1 expand + BN + SiLU, 5x5 depthwise + BN + SiLU, squeeze-excite (global pool,
reduce, SiLU, expand, sigmoid gate), 1x1 project + BN, residual (EfficientNet-B0 stage 4, fp32)."""
import torch
import torch.nn as nn


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, squeezed: int):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * torch.sigmoid(self.expand(nn.functional.silu(self.reduce(s))))


class Model(nn.Module):
    def __init__(self, c: int, expand: int, k: int):
        super().__init__()
        hidden = c * expand
        self.expand = nn.Sequential(nn.Conv2d(c, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.SiLU())
        self.dw = nn.Sequential(nn.Conv2d(hidden, hidden, k, padding=k // 2, groups=hidden, bias=False),
                                nn.BatchNorm2d(hidden), nn.SiLU())
        self.se = SqueezeExcite(hidden, max(1, c // 4))
        self.project = nn.Sequential(nn.Conv2d(hidden, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.project(self.se(self.dw(self.expand(x))))


def get_inputs():
    return [torch.randn(2, 80, 14, 14)]


def get_init_inputs():
    return [80, 6, 5]
