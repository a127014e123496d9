"""Masks: torch.diag of a matrix (its diagonal) and of a vector (a matrix with an offset
diagonal), and diag_embed of a batch of vectors."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, m, v, batch):
        return torch.diag(m), torch.diag(v, 1), torch.diag_embed(batch)


def get_inputs():
    return [torch.randn(1024, 1024), torch.randn(255), torch.randn(32, 128)]


def get_init_inputs():
    return []
