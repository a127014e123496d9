"""Batch norm with batch statistics and no running stats (F.batch_norm(None, None, training=True))."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.batch_norm(x, None, None, training=True)


def get_inputs():
    return [torch.randn(16, 128, 14, 14)]


def get_init_inputs():
    return []
