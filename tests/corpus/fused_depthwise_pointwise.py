"""Depthwise 3x3 conv + BN + ReLU6, then pointwise 1x1 conv + BN + ReLU6 (MobileNetV1 unit, fp32)."""
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.dw = nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin, bias=False)
        self.bn1 = nn.BatchNorm2d(cin)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.act = nn.ReLU6()

    def forward(self, x):
        x = self.act(self.bn1(self.dw(x)))
        return self.act(self.bn2(self.pw(x)))


def get_inputs():
    import torch
    return [torch.randn(2, 64, 56, 56)]


def get_init_inputs():
    return [64, 128, 2]
