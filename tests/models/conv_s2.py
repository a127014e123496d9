"""Golden case: Conv2d with stride 2 and padding 1 (fp32, no bias), compute-bound on H100."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c: int, o: int):
        super().__init__()
        self.conv = nn.Conv2d(c, o, kernel_size=3, stride=2, padding=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(8, 256, 31, 33)]


def get_init_inputs():
    return [256, 256]
