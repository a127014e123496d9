"""Broadcasting batched matmul: [2, 1, 64, 128] @ [3, 128, 32] -> [2, 3, 64, 32]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(2, 1, 64, 128), torch.randn(3, 128, 32)]


def get_init_inputs():
    return []
