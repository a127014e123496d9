"""SqueezeNet Fire modules: 1x1 squeeze, parallel 1x1 and 3x3 expand branches concatenated, ReLU,
then a ceil-mode 3x3 max-pool (fp32)."""
import torch
import torch.nn as nn


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, e1: int, e3: int):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.expand1x1 = nn.Conv2d(squeeze, e1, 1)
        self.expand3x3 = nn.Conv2d(squeeze, e3, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.squeeze(x))
        return torch.cat([torch.relu(self.expand1x1(x)), torch.relu(self.expand3x3(x))], 1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fire1 = Fire(128, 32, 128, 128)
        self.fire2 = Fire(256, 32, 128, 128)
        self.pool = nn.MaxPool2d(3, stride=2, ceil_mode=True)

    def forward(self, x):
        return self.pool(self.fire2(self.fire1(x)))


def get_inputs():
    return [torch.randn(2, 128, 27, 27)]


def get_init_inputs():
    return []
