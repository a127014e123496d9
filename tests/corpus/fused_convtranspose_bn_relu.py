"""ConvTranspose2d (stride 2) + BatchNorm + ReLU: the upsampling unit of a DCGAN generator (fp32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 4, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return torch.relu(self.bn(self.up(x)))


def get_inputs():
    return [torch.randn(2, 128, 16, 16)]


def get_init_inputs():
    return [128, 64]
