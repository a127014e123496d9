"""Sorting: ascending sort along dim 0 with many ties (integer-valued floats), where a stable
sort keeps equal elements in input order."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sort(x, dim=0, stable=True)


def get_inputs():
    return [torch.randint(0, 16, (512, 128)).float()]


def get_init_inputs():
    return []
