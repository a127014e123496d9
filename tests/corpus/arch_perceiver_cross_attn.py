"""Perceiver latent block: 64 learned latents cross-attend to a 512-element input array, then one
latent self-attention layer; pre-LN, nn.MultiheadAttention with batch_first (fp32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, latents: int, dim: int, in_dim: int, heads: int):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(latents, dim) * 0.02)
        self.norm_q = nn.LayerNorm(dim)
        self.norm_kv = nn.LayerNorm(in_dim)
        self.cross = nn.MultiheadAttention(dim, 1, kdim=in_dim, vdim=in_dim, batch_first=True)
        self.norm_self = nn.LayerNorm(dim)
        self.self_attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm_ff = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, data):
        b = data.shape[0]
        x = self.latents[None].expand(b, -1, -1)
        kv = self.norm_kv(data)
        x = x + self.cross(self.norm_q(x), kv, kv, need_weights=False)[0]
        h = self.norm_self(x)
        x = x + self.self_attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.norm_ff(x))


def get_inputs():
    return [torch.randn(2, 512, 128)]


def get_init_inputs():
    return [64, 256, 128, 8]
