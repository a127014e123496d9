"""Indexing: assignment through a boolean mask with one value (y[x > t] = v on a clone, an
out-of-place index_put with a mask), with a Python scalar and with a 0-d tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, v):
        y = x.clone()
        y[x > 1.0] = 0.0
        z = x.clone()
        z[x < -1.0] = v
        return y, z


def get_inputs():
    return [torch.randn(128, 4096), torch.tensor(-7.0)]


def get_init_inputs():
    return []
