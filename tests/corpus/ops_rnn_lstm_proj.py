"""LSTM with a projection (proj_size=64, as in speech LSTMP): h_t = W_hr (o * tanh(c_t))."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(80, 256, proj_size=64, batch_first=True)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return y, h, c


def get_inputs():
    return [torch.randn(4, 32, 80)]


def get_init_inputs():
    return []
