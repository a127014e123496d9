"""Non-overlapping patch extraction with nn.Unfold (16x16, stride 16), a ViT patchifier."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.unfold = nn.Unfold(16, stride=16)

    def forward(self, x):
        return self.unfold(x).transpose(1, 2)


def get_inputs():
    return [torch.randn(2, 3, 224, 224)]


def get_init_inputs():
    return []
