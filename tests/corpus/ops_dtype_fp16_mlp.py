"""fp16 MLP block: 2-byte tensors, fp16 tensor-core peak."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(512, 2048, dtype=torch.float16)
        self.fc2 = nn.Linear(2048, 512, dtype=torch.float16)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def get_inputs():
    return [torch.randn(128, 512, dtype=torch.float16)]


def get_init_inputs():
    return []
