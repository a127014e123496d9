"""nn.LSTMCell stepped by hand over 8 steps (a decoder loop): linear + split + gates per step."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(128, 256)

    def forward(self, x):
        h = torch.zeros(x.shape[1], 256)
        c = torch.zeros(x.shape[1], 256)
        for t in range(x.shape[0]):
            h, c = self.cell(x[t], (h, c))
        return h, c


def get_inputs():
    return [torch.randn(8, 4, 128)]


def get_init_inputs():
    return []
