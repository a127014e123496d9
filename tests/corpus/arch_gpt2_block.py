"""GPT-2 block as in HF transformers: Conv1D (addmm) projections, tanh-approximate GELU, causal mask
from a bias buffer with torch.where on the min float, pre-LN residuals (fp32, GPT-2 small width)."""
import math

import torch
import torch.nn as nn


class Conv1D(nn.Module):
    def __init__(self, nf: int, nx: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.weight.size(-1),)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Model(nn.Module):
    def __init__(self, n_embd: int, n_head: int, n_ctx: int):
        super().__init__()
        self.h = n_head
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = Conv1D(4 * n_embd, n_embd)
        self.mlp_proj = Conv1D(n_embd, 4 * n_embd)
        self.act = NewGELU()
        self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool)).view(1, 1, n_ctx, n_ctx))

    def attn(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.h, c // self.h).permute(0, 2, 1, 3) for z in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
        causal = self.bias[:, :, :t, :t]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        w = nn.functional.softmax(w, dim=-1)
        y = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, t, c)
        return self.c_proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_proj(self.act(self.c_fc(self.ln_2(x))))


def get_inputs():
    return [torch.randn(1, 128, 768)]


def get_init_inputs():
    return [768, 12, 256]
