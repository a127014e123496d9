"""Indexing: index_add with alpha (segment sum of messages into nodes of a graph), which torch
decomposes into an accumulating index_put."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, nodes, dst, messages):
        return nodes.index_add(0, dst, messages, alpha=0.5)


def get_inputs():
    return [torch.randn(2000, 64), torch.randint(0, 2000, (8000,)), torch.randn(8000, 64)]


def get_init_inputs():
    return []
