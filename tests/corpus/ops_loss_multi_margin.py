"""Loss: multi-class margin (hinge) loss over [batch, classes] scores."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, t):
        return F.multi_margin_loss(x, t, margin=0.5)


def get_inputs():
    return [torch.randn(256, 100), torch.randint(0, 100, (256,))]


def get_init_inputs():
    return []
