"""Xception-style separable convolutions: depthwise 3x3 then pointwise 1x1, ReLU between, max-pool
downsample with a strided 1x1 residual (fp16)."""
import torch
import torch.nn as nn


class SeparableConv(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.dw = nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return self.bn(self.pw(self.dw(x)))


class Model(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.sep1 = SeparableConv(cin, cout)
        self.sep2 = SeparableConv(cout, cout)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1, stride=2, bias=False)
        self.half()

    def forward(self, x):
        y = self.sep1(torch.relu(x))
        y = self.sep2(torch.relu(y))
        return self.pool(y) + self.skip(x)


def get_inputs():
    return [torch.randn(1, 128, 32, 32, dtype=torch.float16)]


def get_init_inputs():
    return [128, 256]
