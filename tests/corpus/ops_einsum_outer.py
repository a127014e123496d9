"""Outer products: einsum 'i,j->ij', a batched 'bi,bj->bij' and torch.outer (elementwise products, no contraction)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, u, v, a, b):
        return torch.einsum("i,j->ij", u, v), torch.einsum("bi,bj->bij", a, b), torch.outer(u, v)


def get_inputs():
    return [torch.randn(256), torch.randn(512), torch.randn(16, 64), torch.randn(16, 96)]


def get_init_inputs():
    return []
