"""Cross-attention: 256 image tokens attend to 77 text tokens (Stable Diffusion's attn2, fp16)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, query_dim: int, context_dim: int, heads: int, dim_head: int):
        super().__init__()
        inner = heads * dim_head
        self.h = heads
        self.to_q = nn.Linear(query_dim, inner, bias=False)
        self.to_k = nn.Linear(context_dim, inner, bias=False)
        self.to_v = nn.Linear(context_dim, inner, bias=False)
        self.to_out = nn.Linear(inner, query_dim)
        self.half()

    def forward(self, x, context):
        b, n, _ = x.shape
        q = self.to_q(x).view(b, n, self.h, -1).transpose(1, 2)
        k = self.to_k(context).view(b, context.shape[1], self.h, -1).transpose(1, 2)
        v = self.to_v(context).view(b, context.shape[1], self.h, -1).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


def get_inputs():
    return [torch.randn(1, 256, 320, dtype=torch.float16), torch.randn(1, 77, 768, dtype=torch.float16)]


def get_init_inputs():
    return [320, 768, 8, 40]
