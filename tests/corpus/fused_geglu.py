"""GEGLU feed-forward (T5 v1.1 / Stable Diffusion transformer): one projection split in two, gelu gate (fp16)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int, inner: int):
        super().__init__()
        self.proj = nn.Linear(dim, inner * 2)
        self.out = nn.Linear(inner, dim)
        self.half()

    def forward(self, x):
        h, gate = self.proj(x).chunk(2, dim=-1)
        return self.out(h * F.gelu(gate))


def get_inputs():
    return [torch.randn(2, 256, 320, dtype=torch.float16)]


def get_init_inputs():
    return [320, 1280]
