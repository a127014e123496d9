"""Indexing: nn.EmbeddingBag in sum mode with offsets and per-sample weights (a weighted
bag-of-words feature of a recommender)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(50000, 64, mode="sum")

    def forward(self, ids, offsets, weights):
        return self.bag(ids, offsets, per_sample_weights=weights)


def get_inputs():
    offsets = torch.sort(torch.randint(0, 4096, (255,))).values
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), offsets])
    return [torch.randint(0, 50000, (4096,)), offsets, torch.rand(4096)]


def get_init_inputs():
    return []
