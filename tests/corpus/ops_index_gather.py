"""Indexing: torch.gather and take_along_dim (pick the log-probability of each target token
from [batch, seq, vocab])."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, logp, target):
        a = torch.gather(logp, -1, target[..., None]).squeeze(-1)
        b = torch.take_along_dim(logp, target[..., None], dim=-1)
        return a, b


def get_inputs():
    return [torch.randn(4, 128, 8000).log_softmax(-1), torch.randint(0, 8000, (4, 128))]


def get_init_inputs():
    return []
