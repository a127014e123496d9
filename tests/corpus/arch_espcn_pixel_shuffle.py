"""ESPCN super-resolution: 5x5 and 3x3 tanh conv feature layers, a 3x3 conv to r^2 channels and
nn.PixelShuffle(3) sub-pixel upsampling (fp32; 64 px luminance input)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: int):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 5, padding=2)
        self.conv2 = nn.Conv2d(64, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, scale ** 2, 3, padding=1)
        self.shuffle = nn.PixelShuffle(scale)

    def forward(self, x):
        x = torch.tanh(self.conv1(x))
        x = torch.tanh(self.conv2(x))
        return torch.sigmoid(self.shuffle(self.conv3(x)))


def get_inputs():
    return [torch.rand(2, 1, 64, 64)]


def get_init_inputs():
    return [3]
