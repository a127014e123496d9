"""Batch norm in training mode (batch statistics, running stats updated) via F.batch_norm(training=True)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(64))
        self.register_buffer("running_var", torch.ones(64))
        self.weight = nn.Parameter(torch.rand(64) + 0.5)
        self.bias = nn.Parameter(torch.randn(64))

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, training=True, momentum=0.1)


def get_inputs():
    return [torch.randn(8, 64, 28, 28)]


def get_init_inputs():
    return []
