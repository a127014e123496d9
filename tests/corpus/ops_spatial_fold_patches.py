"""Non-overlapping nn.Fold (8x8 patches, stride 8) that reassembles an image: a pure copy, no accumulation."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fold = nn.Fold((64, 64), 8, stride=8)

    def forward(self, x):
        return self.fold(x)


def get_inputs():
    return [torch.randn(4, 3 * 64, 64)]


def get_init_inputs():
    return []
