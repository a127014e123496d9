"""An MLP block: LayerNorm, two linear layers with GELU, and a residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_model: int = 1024, d_ff: int = 4096):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(self.norm(x))
        h = F.gelu(h)
        return x + self.down(h)


def get_inputs():
    return [torch.randn(8, 128, 1024)]


def get_init_inputs():
    return [1024, 4096]
