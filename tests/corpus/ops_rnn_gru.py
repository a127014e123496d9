"""Single-layer GRU over 32 steps: r and z gates, n = tanh(W_in x + r * (W_hn h + b_hn))."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(128, 256, batch_first=True)

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


def get_inputs():
    return [torch.randn(4, 32, 128)]


def get_init_inputs():
    return []
