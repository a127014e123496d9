"""Scan: running maximum with its indices (drawdown of a [batch, time] series), dim 1."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        values, indices = torch.cummax(x, dim=1)
        return values - x, indices


def get_inputs():
    return [torch.randn(64, 2048)]


def get_init_inputs():
    return []
