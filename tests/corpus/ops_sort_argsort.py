"""Sorting: argsort of per-token lengths to bucket a batch (indices only), descending."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, lengths):
        return torch.argsort(lengths, dim=-1, descending=True)


def get_inputs():
    return [torch.rand(16, 4096)]


def get_init_inputs():
    return []
