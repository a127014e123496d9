"""weight_norm parametrization of a linear layer: w = g * v / ||v|| per output row, recomputed in the forward."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.utils.parametrizations.weight_norm(nn.Linear(512, 256))

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(32, 512)]


def get_init_inputs():
    return []
