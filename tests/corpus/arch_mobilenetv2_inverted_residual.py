"""MobileNetV2 inverted residual: 1x1 expand (x6) + ReLU6, 3x3 depthwise + ReLU6, 1x1 linear projection,
residual when shapes match; two blocks, stride 2 then stride 1 (fp32)."""
import torch
import torch.nn as nn


def conv_bn(cin: int, cout: int, k: int, stride: int, groups: int, act: bool) -> nn.Sequential:
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6(inplace=True))
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.conv = nn.Sequential(
            conv_bn(cin, hidden, 1, 1, 1, True),
            conv_bn(hidden, hidden, 3, stride, hidden, True),
            conv_bn(hidden, cout, 1, 1, 1, False),
        )

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class Model(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.blocks = nn.Sequential(InvertedResidual(cin, cout, 2, 6), InvertedResidual(cout, cout, 1, 6))

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(2, 24, 56, 56)]


def get_init_inputs():
    return [24, 32]
