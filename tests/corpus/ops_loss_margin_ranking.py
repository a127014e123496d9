"""Loss: margin ranking loss between two score vectors (pairwise ranking)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, s1, s2, y):
        return F.margin_ranking_loss(s1, s2, y, margin=0.2)


def get_inputs():
    return [torch.randn(65536), torch.randn(65536), torch.randint(0, 2, (65536,)).float() * 2 - 1]


def get_init_inputs():
    return []
