"""DeepSeek-V2 multi-head latent attention (MLA): queries and keys/values go through low-rank latent
projections with RMSNorm; a decoupled RoPE key is shared by all heads (bf16; 512 wide, 8 heads)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def rms_norm(x, weight, eps: float = 1e-6):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * weight


def rope(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


class Model(nn.Module):
    def __init__(self, dim: int, heads: int, q_rank: int, kv_rank: int, nope: int, rope_dim: int, v_dim: int):
        super().__init__()
        self.h, self.nope, self.rope, self.vd = heads, nope, rope_dim, v_dim
        self.wq_a = nn.Linear(dim, q_rank, bias=False)
        self.q_norm = nn.Parameter(torch.ones(q_rank))
        self.wq_b = nn.Linear(q_rank, heads * (nope + rope_dim), bias=False)
        self.wkv_a = nn.Linear(dim, kv_rank + rope_dim, bias=False)
        self.kv_norm = nn.Parameter(torch.ones(kv_rank))
        self.wkv_b = nn.Linear(kv_rank, heads * (nope + v_dim), bias=False)
        self.wo = nn.Linear(heads * v_dim, dim, bias=False)
        self.kv_rank = kv_rank
        self.scale = (nope + rope_dim) ** -0.5
        self.to(torch.bfloat16)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.wq_b(rms_norm(self.wq_a(x), self.q_norm)).view(b, s, self.h, self.nope + self.rope)
        q_nope, q_pe = q.split([self.nope, self.rope], dim=-1)
        q_pe = rope(q_pe, cos[:, None, :], sin[:, None, :])
        kv = self.wkv_a(x)
        latent, k_pe = kv.split([self.kv_rank, self.rope], dim=-1)
        k_pe = rope(k_pe, cos, sin)[:, :, None, :].expand(b, s, self.h, self.rope)
        kv = self.wkv_b(rms_norm(latent, self.kv_norm)).view(b, s, self.h, self.nope + self.vd)
        k_nope, v = kv.split([self.nope, self.vd], dim=-1)
        q = torch.cat([q_nope, q_pe], dim=-1).transpose(1, 2)
        k = torch.cat([k_nope, k_pe], dim=-1).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v.transpose(1, 2), is_causal=True, scale=self.scale)
        return self.wo(y.transpose(1, 2).reshape(b, s, -1))


def get_inputs():
    s, rope_dim = 128, 32
    inv = 1.0 / (10000 ** (torch.arange(0, rope_dim, 2).float() / rope_dim))
    freqs = torch.outer(torch.arange(s).float(), inv)
    return [torch.randn(2, s, 512, dtype=torch.bfloat16), freqs.cos().to(torch.bfloat16),
            freqs.sin().to(torch.bfloat16)]


def get_init_inputs():
    return [512, 8, 192, 128, 64, 32, 64]
