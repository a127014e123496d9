"""DiT block with adaLN-Zero: the conditioning vector is projected to six shift/scale/gate vectors
(chunk), modulate(LN(x)) feeds attention and MLP, each gated back into the residual (bf16)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def modulate(x, shift, scale):
    return x * (1 + scale[:, None]) + shift[:, None]


class Model(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.h = heads
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))
        self.adaLN = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))
        self.to(torch.bfloat16)

    def attn(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c))

    def forward(self, x, c):
        sh_msa, sc_msa, g_msa, sh_mlp, sc_mlp, g_mlp = self.adaLN(c).chunk(6, dim=1)
        x = x + g_msa[:, None] * self.attn(modulate(self.norm1(x), sh_msa, sc_msa))
        return x + g_mlp[:, None] * self.mlp(modulate(self.norm2(x), sh_mlp, sc_mlp))


def get_inputs():
    return [torch.randn(2, 256, 384, dtype=torch.bfloat16), torch.randn(2, 384, dtype=torch.bfloat16)]


def get_init_inputs():
    return [384, 6]
