"""Whisper audio encoder stem: two Conv1d + GELU over an 80-bin log-mel spectrogram (the second with
stride 2), permute to tokens, add sinusoidal positions, then one pre-LN encoder layer (fp16)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoids(length: int, channels: int) -> torch.Tensor:
    inc = math.log(10000) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


class Model(nn.Module):
    def __init__(self, n_mels: int, dim: int, heads: int, ctx: int):
        super().__init__()
        self.h = heads
        self.conv1 = nn.Conv1d(n_mels, dim, 3, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(ctx, dim))
        self.attn_ln = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.mlp_ln = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.half()

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)
        x = x + self.positional_embedding[: x.shape[1]]
        b, n, c = x.shape
        q, k, v = self.qkv(self.attn_ln(x)).view(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        x = x + self.out(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c))
        return x + self.mlp(self.mlp_ln(x))


def get_inputs():
    return [torch.randn(1, 80, 512, dtype=torch.float16)]


def get_init_inputs():
    return [80, 384, 6, 256]
