"""ResNet-18/34 stage: two BasicBlocks, the first with stride 2 and a 1x1 projection shortcut (fp32)."""
import torch
import torch.nn as nn


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Model(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.blocks = nn.Sequential(BasicBlock(cin, cout, 2), BasicBlock(cout, cout, 1))

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(2, 64, 32, 32)]


def get_init_inputs():
    return [64, 128]
