"""numpy inside forward, through a custom autograd Function: torch.export cannot trace it."""
import numpy as np
import torch
import torch.nn as nn


class NumpyTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.from_numpy(np.tanh(x.detach().numpy()))

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError


class Model(nn.Module):
    def __init__(self, d_in: int = 8, d_out: int = 16):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x):
        h = self.fc(x)
        return NumpyTanh.apply(h) * 2.0


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return [8, 16]
