"""Indexing: index_put with accumulate=True (duplicate indices add up), as in an embedding
gradient or a histogram of token ids, with two index tensors."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, grad_table, ids, grads, counts, rows, cols):
        g = grad_table.index_put((ids,), grads, accumulate=True)
        ones = torch.ones_like(rows, dtype=counts.dtype)
        h = counts.index_put((rows, cols), ones, accumulate=True)
        return g, h


def get_inputs():
    return [torch.zeros(1000, 64), torch.randint(0, 1000, (4096,)), torch.randn(4096, 64),
            torch.zeros(64, 64), torch.randint(0, 64, (8192,)), torch.randint(0, 64, (8192,))]


def get_init_inputs():
    return []
