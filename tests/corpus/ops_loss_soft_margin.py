"""Loss: two-class soft margin (logistic) loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, y):
        return F.soft_margin_loss(x, y)


def get_inputs():
    return [torch.randn(1024, 64), torch.randint(0, 2, (1024, 64)).float() * 2 - 1]


def get_init_inputs():
    return []
