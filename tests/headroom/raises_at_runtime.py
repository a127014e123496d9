"""Traces on meta tensors (no bounds check there) but raises on real data."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(10, 16)

    def forward(self, idx):
        return self.table(idx) * 2.0


def get_inputs():
    return [torch.tensor([3, 100])]


def get_init_inputs():
    return []
