"""Indexing: nn.EmbeddingBag in mean mode over a 2-D [bags, ids] input with a padding index
(padding ids are left out of the mean)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(10000, 128, mode="mean", padding_idx=0)

    def forward(self, ids):
        return self.bag(ids)


def get_inputs():
    ids = torch.randint(0, 10000, (256, 20))
    ids[:, 15:] = 0
    return [ids]


def get_init_inputs():
    return []
