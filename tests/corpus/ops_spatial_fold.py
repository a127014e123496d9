"""col2im (nn.Fold, 3x3, stride 1, padding 1): overlapping windows accumulate into the image."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fold = nn.Fold((28, 28), 3, padding=1)

    def forward(self, x):
        return self.fold(x)


def get_inputs():
    return [torch.randn(2, 16 * 9, 28 * 28)]


def get_init_inputs():
    return []
