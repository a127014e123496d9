"""Selection: max over a dim with values and indices (max-pooling over time with the
position of the winner), and min with keepdim."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        values, indices = torch.max(x, dim=1)
        lo, lo_idx = torch.min(x, dim=2, keepdim=True)
        return values, indices, lo, lo_idx


def get_inputs():
    return [torch.randn(32, 256, 128)]


def get_init_inputs():
    return []
