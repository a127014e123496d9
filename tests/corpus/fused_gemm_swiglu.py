"""SwiGLU feed-forward: down(silu(gate(x)) * up(x)), as in LLaMA and PaLM (bf16)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


def get_inputs():
    return [torch.randn(1, 128, 512, dtype=torch.bfloat16)]


def get_init_inputs():
    return [512, 1408]
