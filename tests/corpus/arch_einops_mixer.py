"""MLP-Mixer layer with einops: token mixing on the rearranged token axis, channel mixing, then an
einops `reduce` mean-pool head (fp32; 64 tokens of width 256)."""
import torch
import torch.nn as nn
from einops import rearrange, reduce


class Model(nn.Module):
    def __init__(self, tokens: int, dim: int, classes: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, tokens * 4), nn.GELU(), nn.Linear(tokens * 4, tokens))
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mlp = nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        y = rearrange(self.norm1(x), "b n d -> b d n")
        x = x + rearrange(self.token_mlp(y), "b d n -> b n d")
        x = x + self.channel_mlp(self.norm2(x))
        return self.head(reduce(x, "b n d -> b d", "mean"))


def get_inputs():
    return [torch.randn(2, 64, 256)]


def get_init_inputs():
    return [64, 256, 100]
