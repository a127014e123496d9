"""Gemma-2 attention logit soft-capping: cap * tanh(scores / cap), then causal softmax (bf16)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim: int, cap: float):
        super().__init__()
        self.scale = head_dim ** -0.5
        self.cap = cap

    def forward(self, q, k, v):
        s = q.shape[-2]
        scores = (q @ k.transpose(-1, -2)) * self.scale
        scores = self.cap * torch.tanh(scores / self.cap)
        causal = torch.ones(s, s, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        return probs @ v


def get_inputs():
    return [torch.randn(1, 8, 256, 64, dtype=torch.bfloat16) for _ in range(3)]


def get_init_inputs():
    return [64, 50.0]
