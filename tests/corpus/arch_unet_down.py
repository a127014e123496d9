"""UNet encoder step: max-pool 2x2, then double conv (3x3 conv + BN + ReLU twice), as in Ronneberger et al. (fp32)."""
import torch
import torch.nn as nn


class DoubleConv(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.net(x)


class Model(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x):
        return self.conv(self.pool(x))


def get_inputs():
    return [torch.randn(1, 64, 64, 64)]


def get_init_inputs():
    return [64, 128]
