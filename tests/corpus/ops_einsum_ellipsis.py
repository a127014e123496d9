"""einsum with an ellipsis over batch and head dims: '...ij,...jk->...ik' (attention-style batched matmul)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        return torch.einsum("...ij,...jk->...ik", q, k)


def get_inputs():
    return [torch.randn(2, 8, 128, 64), torch.randn(2, 8, 64, 128)]


def get_init_inputs():
    return []
