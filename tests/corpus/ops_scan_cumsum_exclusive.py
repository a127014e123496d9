"""Scan: exclusive prefix sum (cumsum minus the element), as used for offsets of ragged batches,
over the first dim of an integer count tensor and a float tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, counts, x):
        offsets = torch.cumsum(counts, dim=0) - counts
        return offsets, torch.cumsum(x, dim=0) - x


def get_inputs():
    return [torch.randint(0, 100, (4096,)), torch.randn(256, 128)]


def get_init_inputs():
    return []
