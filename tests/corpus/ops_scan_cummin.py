"""Scan: running minimum with indices over dim 0 of a [time, channels] tensor, with ties
(integer-valued input), where the index moves to the latest tie as torch's does."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        values, indices = torch.cummin(x, dim=0)
        return values, indices


def get_inputs():
    return [torch.randint(-20, 20, (512, 256)).float()]


def get_init_inputs():
    return []
