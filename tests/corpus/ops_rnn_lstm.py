"""Single-layer LSTM over 32 steps (seq-first): input projection for all steps, then h @ W_hh and the gates per step."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(128, 256)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return y, h, c


def get_inputs():
    return [torch.randn(32, 4, 128)]


def get_init_inputs():
    return []
