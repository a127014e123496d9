"""CLIP's MLP with QuickGELU, x * sigmoid(1.702 x), written out by hand (fp16)."""
import torch
import torch.nn as nn


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class Model(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.c_fc = nn.Linear(width, width * 4)
        self.gelu = QuickGELU()
        self.c_proj = nn.Linear(width * 4, width)
        self.half()

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


def get_inputs():
    return [torch.randn(77, 2, 512, dtype=torch.float16)]


def get_init_inputs():
    return [512]
