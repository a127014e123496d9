"""Indexing: F.embedding_bag in max mode with include_last_offset (CSR-style offsets)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(20000, 64))

    def forward(self, ids, offsets):
        return F.embedding_bag(ids, self.weight, offsets, mode="max", include_last_offset=True)


def get_inputs():
    inner = torch.sort(torch.randint(1, 2048, (127,))).values
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), inner, torch.tensor([2048])])
    return [torch.randint(0, 20000, (2048,)), offsets]


def get_init_inputs():
    return []
