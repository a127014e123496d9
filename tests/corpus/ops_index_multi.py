"""Indexing: several index tensors that broadcast (x[b, t] picks one token per row), a None
slot between them (x[i, :, j], whose indexed dims move to the front) and negative indices."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, h, b, t, i, j):
        return h[b, t], h[i, :, j], h[:, -1]


def get_inputs():
    return [torch.randn(32, 128, 64), torch.arange(32), torch.randint(-128, 128, (32,)),
            torch.randint(0, 32, (10, 1)), torch.randint(0, 64, (1, 12))]


def get_init_inputs():
    return []
