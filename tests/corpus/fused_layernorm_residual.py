"""Post-LN residual: out = LayerNorm(x + Linear(x)), as in the original Transformer (fp32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_model: int):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        return self.norm(x + self.proj(x))


def get_inputs():
    return [torch.randn(2, 256, 384)]


def get_init_inputs():
    return [384]
