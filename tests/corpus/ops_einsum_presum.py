"""einsum 'ij,jk->' and 'bij,bjk->b': indices in one operand only are summed out first, as torch.einsum does."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c, d):
        return torch.einsum("ij,jk->", a, b), torch.einsum("bij,bjk->b", c, d)


def get_inputs():
    return [torch.randn(64, 128), torch.randn(128, 96), torch.randn(4, 32, 48), torch.randn(4, 48, 16)]


def get_init_inputs():
    return []
