"""Masks: clamp in every form: scalar bounds, min only, max only, tensor bounds that broadcast,
a tensor minimum alone, and hardtanh."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, lo, hi):
        return (torch.clamp(x, -1.0, 1.0), torch.clamp(x, min=0.1), torch.clamp(x, max=0.5),
                torch.clamp(x, lo, hi), torch.clamp(x, min=lo), torch.clamp(x, max=hi),
                F.hardtanh(x, -2.0, 2.0))


def get_inputs():
    return [torch.randn(64, 1024), -torch.rand(1024), torch.rand(64, 1)]


def get_init_inputs():
    return []
