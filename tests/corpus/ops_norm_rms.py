"""RMS norm with a weight (LLaMA) and without (QK-norm) on the same activations."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.RMSNorm(4096, eps=1e-6)
        self.bare = nn.RMSNorm(4096, eps=1e-6, elementwise_affine=False)

    def forward(self, x):
        return self.norm(x) + self.bare(x)


def get_inputs():
    return [torch.randn(2, 128, 4096)]


def get_init_inputs():
    return []
