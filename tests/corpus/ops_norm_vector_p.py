"""torch.linalg.vector_norm with ord 3 and ord 0.5 over the last dim: (sum |x|^p)^(1/p)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.linalg.vector_norm(x, ord=3, dim=-1) + torch.linalg.vector_norm(x, ord=0.5, dim=-1)


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return []
