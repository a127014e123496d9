"""CaiT/ConvNeXt layer scale: x + gamma * MLP(LN(x)), gamma a learned per-channel vector (fp32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        self.gamma = nn.Parameter(1e-4 * torch.ones(dim))

    def forward(self, x):
        return x + self.gamma * self.fc2(self.act(self.fc1(self.norm(x))))


def get_inputs():
    return [torch.randn(2, 197, 384)]


def get_init_inputs():
    return [384, 1536]
