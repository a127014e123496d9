"""Bidirectional Elman RNN with ReLU (IRNN-style)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(64, 128, nonlinearity="relu", bidirectional=True)

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


def get_inputs():
    return [torch.randn(40, 8, 64)]


def get_init_inputs():
    return []
