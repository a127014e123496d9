"""SegFormer Mix-FFN: tokens -> Linear expand -> reshape to an image -> 3x3 depthwise conv -> GELU
-> back to tokens -> Linear; plus the efficient self-attention's spatial-reduction conv on K/V (fp32)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int, heads: int, sr: int, h: int, w: int):
        super().__init__()
        self.h, self.H, self.W = heads, h, w
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.sr = nn.Conv2d(dim, dim, sr, stride=sr)
        self.sr_norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.dw = nn.Conv2d(4 * dim, 4 * dim, 3, padding=1, groups=4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q = self.q(x).view(b, n, self.h, c // self.h).transpose(1, 2)
        img = x.transpose(1, 2).reshape(b, c, self.H, self.W)
        red = self.sr_norm(self.sr(img).flatten(2).transpose(1, 2))
        k, v = self.kv(red).view(b, -1, 2, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c))
        y = self.fc1(self.norm(x))
        y = self.dw(y.transpose(1, 2).reshape(b, -1, self.H, self.W)).flatten(2).transpose(1, 2)
        return x + self.fc2(F.gelu(y))


def get_inputs():
    return [torch.randn(1, 32 * 32, 64)]


def get_init_inputs():
    return [64, 1, 8, 32, 32]
