"""Conformer convolution module: LayerNorm, pointwise conv to 2x, GLU, depthwise conv1d (k=31),
BatchNorm, Swish, pointwise conv, residual (fp32; 256 wide, 128 frames)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int, kernel: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.pw1 = nn.Conv1d(dim, 2 * dim, 1)
        self.dw = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.bn = nn.BatchNorm1d(dim)
        self.pw2 = nn.Conv1d(dim, dim, 1)

    def forward(self, x):
        y = self.norm(x).transpose(1, 2)  # [b, dim, t]
        y = F.glu(self.pw1(y), dim=1)
        y = F.silu(self.bn(self.dw(y)))
        return x + self.pw2(y).transpose(1, 2)


def get_inputs():
    return [torch.randn(2, 128, 256)]


def get_init_inputs():
    return [256, 31]
