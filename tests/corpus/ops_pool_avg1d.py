"""1-d average pooling over time, kernel 5 / stride 2 / padding 2, count_include_pad=False."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.avg_pool1d(x, 5, 2, 2, count_include_pad=False)


def get_inputs():
    return [torch.randn(4, 80, 300)]


def get_init_inputs():
    return []
