"""Indexing: index_copy of rows into a buffer and index_fill of columns with a constant (both
decompose into index_put)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, buf, rows, src, cols):
        a = buf.index_copy(0, rows, src)
        b = buf.index_fill(1, cols, -1.0)
        return a, b


def get_inputs():
    return [torch.randn(1024, 256), torch.randperm(1024)[:300], torch.randn(300, 256),
            torch.randint(0, 256, (20,))]


def get_init_inputs():
    return []
