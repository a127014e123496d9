"""Elman RNN with tanh, two layers: h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(64, 128, num_layers=2, batch_first=True)

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


def get_inputs():
    return [torch.randn(8, 40, 64)]


def get_init_inputs():
    return []
