"""einsum with repeated indices: diagonal (ii->i), trace (ii->) and a batched diagonal (bii->bi) of Gram matrices."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        g = torch.einsum("bij,bkj->bik", x, x)
        return torch.einsum("bii->bi", g), torch.einsum("ii->", g[0]), torch.einsum("ii->i", g[1])


def get_inputs():
    return [torch.randn(8, 64, 32)]


def get_init_inputs():
    return []
