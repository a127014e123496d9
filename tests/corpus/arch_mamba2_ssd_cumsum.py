"""Mamba-2 SSD in its quadratic (attention-like) form with cumsum segment sums, as in the `ssd_minimal`
reference for one chunk: L = exp(segsum(dt*A)) masked causal, y = (C B^T * L) (dt x) (fp32)."""
import torch
import torch.nn as nn


def segsum(x):
    """x [..., T] -> [..., T, T] with out[i, j] = sum x[j+1..i] for j <= i, -inf above the diagonal."""
    t = x.size(-1)
    cs = torch.cumsum(x, dim=-1)
    seg = cs[..., :, None] - cs[..., None, :]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool), diagonal=0)
    return seg.masked_fill(~mask, float("-inf"))


class Model(nn.Module):
    def __init__(self, heads: int):
        super().__init__()
        self.A_log = nn.Parameter(torch.log(torch.linspace(1.0, 16.0, heads)))

    def forward(self, x, dt, B, C):
        # x [b, l, h, p], dt [b, l, h], B/C [b, l, n]
        A = -torch.exp(self.A_log)
        a = (dt * A).transpose(1, 2)  # [b, h, l]
        L = torch.exp(segsum(a))  # [b, h, l, l]
        scores = torch.einsum("bln,bsn->bls", C, B)  # [b, l, s]
        xdt = x * dt[..., None]
        return torch.einsum("bls,bhls,bshp->blhp", scores, L, xdt)


def get_inputs():
    b, l, h, p, n = 1, 128, 8, 32, 64
    return [torch.randn(b, l, h, p), torch.rand(b, l, h) * 0.1, torch.randn(b, l, n), torch.randn(b, l, n)]


def get_init_inputs():
    return [8]
