"""Multi-query attention written with einops: rearrange heads out of the projection, einops `repeat`
of the single KV head across the query heads, einsum scores, causal mask (fp16)."""
import torch
import torch.nn as nn
from einops import rearrange, repeat


class Model(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.h, self.dh = heads, dim // heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * self.dh, bias=False)
        self.to_out = nn.Linear(dim, dim, bias=False)
        self.half()

    def forward(self, x):
        n = x.shape[1]
        q = rearrange(self.to_q(x), "b n (h d) -> b h n d", h=self.h)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        k = repeat(k, "b n d -> b h n d", h=self.h)
        v = repeat(v, "b n d -> b h n d", h=self.h)
        sim = torch.einsum("bhid,bhjd->bhij", q, k) * self.dh ** -0.5
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)
        attn = sim.masked_fill(causal, float("-inf")).softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


def get_inputs():
    return [torch.randn(2, 128, 512, dtype=torch.float16)]


def get_init_inputs():
    return [512, 8]
