"""Loss: multilabel margin loss with -1-terminated target lists."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, t):
        return F.multilabel_margin_loss(x, t)


def get_inputs():
    return [torch.randn(128, 64),
            torch.where(torch.arange(64) < 5, torch.randint(0, 64, (128, 64)), -1)]


def get_init_inputs():
    return []
