"""Three-operand bilinear form 'bi,ij,bj->b' (a bilinear scorer), contracted pairwise in opt_einsum's order."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(256, 128) * 0.05)

    def forward(self, x, y):
        return torch.einsum("bi,ij,bj->b", x, self.w, y)


def get_inputs():
    return [torch.randn(64, 256), torch.randn(64, 128)]


def get_init_inputs():
    return []
