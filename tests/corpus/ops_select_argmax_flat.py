"""Selection: argmax over a flattened feature map (dim=None) and argmin with keepdim."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, heat):
        return torch.argmax(heat), torch.argmin(heat, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(8, 64, 64)]


def get_init_inputs():
    return []
