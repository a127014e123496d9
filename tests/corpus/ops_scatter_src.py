"""Scatter: torch.scatter with a src tensor (un-permute expert outputs back to token order),
and scatter of a scalar value (one-hot encoding of labels)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, out, perm, src, labels):
        back = out.scatter(0, perm, src)
        onehot = torch.zeros(labels.shape[0], 1000).scatter(1, labels[:, None], 1.0)
        return back, onehot


def get_inputs():
    perm = torch.argsort(torch.rand(4096, 1), dim=0).expand(4096, 128).contiguous()
    return [torch.zeros(4096, 128), perm, torch.randn(4096, 128), torch.randint(0, 1000, (256,))]


def get_init_inputs():
    return []
