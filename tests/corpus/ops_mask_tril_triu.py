"""Masks: tril/triu with diagonal offsets on a batch of [seq, seq] score matrices (causal
masking without -inf) and on a non-square matrix."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, scores, w):
        return torch.tril(scores, diagonal=-1), torch.triu(scores, diagonal=2), torch.triu(w)


def get_inputs():
    return [torch.randn(16, 256, 256), torch.randn(384, 512)]


def get_init_inputs():
    return []
