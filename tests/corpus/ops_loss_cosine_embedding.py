"""Loss: cosine embedding loss of embedding pairs with +1/-1 labels."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, a, b, y):
        return F.cosine_embedding_loss(a, b, y, margin=0.1)


def get_inputs():
    return [torch.randn(2048, 256),
            torch.randn(2048, 256),
            torch.randint(0, 2, (2048,)).float() * 2 - 1]


def get_init_inputs():
    return []
