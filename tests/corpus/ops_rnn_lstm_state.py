"""LSTM without biases, run from a given initial state (h0, c0), two layers."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(96, 192, num_layers=2, bias=False)

    def forward(self, x, h0, c0):
        y, (h, c) = self.rnn(x, (h0, c0))
        return y, h, c


def get_inputs():
    return [torch.randn(16, 8, 96), torch.randn(2, 8, 192), torch.randn(2, 8, 192)]


def get_init_inputs():
    return []
