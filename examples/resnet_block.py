"""A ResNet basic block: conv3x3-BN-ReLU, conv3x3-BN, strided 1x1 shortcut."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c_in: int = 64, c_out: int = 128, stride: int = 2):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.down(x))


def get_inputs():
    return [torch.randn(8, 64, 56, 56)]


def get_init_inputs():
    return [64, 128, 2]
