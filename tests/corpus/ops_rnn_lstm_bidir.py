"""Two-layer bidirectional LSTM, batch_first (a BiLSTM tagger encoder): the reverse direction runs t = T-1 .. 0."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(64, 128, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return y, h, c


def get_inputs():
    return [torch.randn(4, 24, 64)]


def get_init_inputs():
    return []
