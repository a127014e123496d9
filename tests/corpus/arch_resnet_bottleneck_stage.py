"""ResNet-50 stage: Bottleneck blocks (1x1 reduce, 3x3, 1x1 expand x4) with a projection shortcut (fp32)."""
import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class Model(nn.Module):
    def __init__(self, cin: int, width: int):
        super().__init__()
        self.layer = nn.Sequential(Bottleneck(cin, width, 2), Bottleneck(width * 4, width, 1))

    def forward(self, x):
        return self.layer(x)


def get_inputs():
    return [torch.randn(1, 256, 28, 28)]


def get_init_inputs():
    return [256, 128]
