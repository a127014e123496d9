"""Conv2d + BatchNorm2d + ReLU, the pattern inference compilers fold into one kernel (fp32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 64, 32, 32)]


def get_init_inputs():
    return [64, 128]
