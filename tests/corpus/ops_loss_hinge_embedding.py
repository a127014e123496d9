"""Loss: hinge embedding loss on distances with +1/-1 labels."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, d, y):
        return F.hinge_embedding_loss(d, y, margin=1.5)


def get_inputs():
    return [torch.rand(1024, 128) * 3, torch.randint(0, 2, (1024, 128)).float() * 2 - 1]


def get_init_inputs():
    return []
