"""Hand-written RMSNorm (LLaMA's: rsqrt of the mean square, upcast to fp32) feeding a projection (bf16)."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.type_as(x) * self.weight


class Model(nn.Module):
    def __init__(self, d_model: int, d_out: int):
        super().__init__()
        self.norm = RMSNorm(d_model)
        self.proj = nn.Linear(d_model, d_out, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x):
        return self.proj(self.norm(x))


def get_inputs():
    return [torch.randn(2, 128, 512, dtype=torch.bfloat16)]


def get_init_inputs():
    return [512, 1536]
