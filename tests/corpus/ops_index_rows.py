"""Indexing: advanced indexing with one index tensor, gathering the rows of a [vocab, dim]
table (x[idx]) and the positions of a [batch, seq, dim] activation (x[:, pos])."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, table, ids, h, pos):
        return table[ids], h[:, pos]


def get_inputs():
    return [torch.randn(32000, 128), torch.randint(0, 32000, (16, 64)), torch.randn(8, 512, 256),
            torch.randint(0, 512, (64,))]


def get_init_inputs():
    return []
