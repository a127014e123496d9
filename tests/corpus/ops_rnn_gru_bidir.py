"""Two-layer bidirectional GRU without biases, from a given initial state."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(64, 96, num_layers=2, bidirectional=True, bias=False)

    def forward(self, x, h0):
        y, h = self.rnn(x, h0)
        return y, h


def get_inputs():
    return [torch.randn(20, 4, 64), torch.randn(4, 4, 96)]


def get_init_inputs():
    return []
