"""Scan: log-cumulative-sum-exp over the sequence (the normaliser of a linear-attention /
state-space gate in log space)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, log_gates):
        return torch.logcumsumexp(log_gates, dim=-1)


def get_inputs():
    return [torch.randn(8, 16, 256)]


def get_init_inputs():
    return []
