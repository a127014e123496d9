"""fp32 MLP block (Linear-GELU-Linear): fp32 matmuls run on the fp32 vector peak by default (no TF32)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(512, 2048)
        self.fc2 = nn.Linear(2048, 512)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def get_inputs():
    return [torch.randn(128, 512)]


def get_init_inputs():
    return []
