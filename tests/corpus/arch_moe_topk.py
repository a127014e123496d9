"""Mixture-of-experts FFN with dense top-2 routing: softmax router, topk, renormalized gate weights,
every expert run on every token, the chosen experts' outputs gathered and combined (fp32)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int, hidden: int, experts: int, k: int):
        super().__init__()
        self.k = k
        self.router = nn.Linear(dim, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, dim, hidden) * dim ** -0.5)
        self.w2 = nn.Parameter(torch.randn(experts, hidden, dim) * hidden ** -0.5)

    def forward(self, x):
        b, s, d = x.shape
        tokens = x.reshape(-1, d)  # [T, d]
        probs = F.softmax(self.router(tokens), dim=-1)  # [T, E]
        weights, idx = torch.topk(probs, self.k, dim=-1)  # [T, k]
        weights = weights / weights.sum(-1, keepdim=True)
        h = F.gelu(torch.einsum("td,edh->eth", tokens, self.w1))
        out = torch.einsum("eth,ehd->ted", h, self.w2)  # [T, E, d]
        chosen = torch.gather(out, 1, idx[..., None].expand(-1, -1, d))  # [T, k, d]
        return (chosen * weights[..., None]).sum(1).view(b, s, d)


def get_inputs():
    return [torch.randn(2, 64, 256)]


def get_init_inputs():
    return [256, 512, 8, 2]
