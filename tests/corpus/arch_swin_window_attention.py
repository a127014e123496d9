"""Swin Transformer window attention: partition into 8x8 windows, multi-head attention with a learned
relative position bias table indexed by a precomputed buffer, merge windows back (fp32)."""
import torch
import torch.nn as nn


def window_partition(x, w):
    b, h, wd, c = x.shape
    x = x.view(b, h // w, w, wd // w, w, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, c)


def window_reverse(win, w, h, wd):
    b = win.shape[0] // ((h // w) * (wd // w))
    x = win.view(b, h // w, wd // w, w, w, -1)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(b, h, wd, -1)


class Model(nn.Module):
    def __init__(self, dim: int, heads: int, window: int):
        super().__init__()
        self.dim, self.h, self.w = dim, heads, window
        self.scale = (dim // heads) ** -0.5
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("rel_index", rel[..., 0] * (2 * window - 1) + rel[..., 1])
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, h, wd, c = x.shape
        win = window_partition(x, self.w)
        bw, n, _ = win.shape
        q, k, v = self.qkv(win).reshape(bw, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.table[self.rel_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attn = (attn + bias[None]).softmax(-1)
        out = self.proj((attn @ v).transpose(1, 2).reshape(bw, n, c))
        return window_reverse(out, self.w, h, wd)


def get_inputs():
    return [torch.randn(1, 32, 32, 96)]


def get_init_inputs():
    return [96, 3, 8]
