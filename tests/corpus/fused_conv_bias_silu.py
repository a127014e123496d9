"""Conv2d with bias + SiLU (YOLOv5/v8 "Conv" module without BN, fp16)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=2, padding=1).half()
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.conv(x))


def get_inputs():
    return [torch.randn(1, 32, 64, 64, dtype=torch.float16)]


def get_init_inputs():
    return [32, 64]
