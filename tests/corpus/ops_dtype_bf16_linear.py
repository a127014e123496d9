"""bf16 linear layer with bias (a transformer projection): 2-byte tensors, bf16 tensor-core peak."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(1024, 1024, dtype=torch.bfloat16)

    def forward(self, x):
        return self.proj(x)


def get_inputs():
    return [torch.randn(4, 128, 1024, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
