"""Scatter: scatter_reduce with amax (include_self) and mean (include_self=False), as in graph
neural network neighbourhood aggregation."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, idx, msg):
        mx = x.scatter_reduce(0, idx, msg, reduce="amax")
        mean = x.scatter_reduce(0, idx, msg, reduce="mean", include_self=False)
        return mx, mean


def get_inputs():
    return [torch.randn(512, 32), torch.randint(0, 512, (4096, 32)), torch.randn(4096, 32)]


def get_init_inputs():
    return []
