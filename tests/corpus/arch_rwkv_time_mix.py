"""RWKV-4 time mixing with the WKV recurrence as a python loop over 16 steps (numerically stable form
with a running max), token shift by F.pad, receptance gate (fp32)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.time_decay = nn.Parameter(-torch.rand(dim))
        self.time_first = nn.Parameter(torch.rand(dim) * 0.5)
        self.mix_k = nn.Parameter(torch.rand(dim))
        self.mix_v = nn.Parameter(torch.rand(dim))
        self.mix_r = nn.Parameter(torch.rand(dim))
        self.key = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(dim, dim, bias=False)
        self.receptance = nn.Linear(dim, dim, bias=False)
        self.output = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        xx = F.pad(x, (0, 0, 1, -1))  # previous token
        k = self.key(x * self.mix_k + xx * (1 - self.mix_k))
        v = self.value(x * self.mix_v + xx * (1 - self.mix_v))
        r = torch.sigmoid(self.receptance(x * self.mix_r + xx * (1 - self.mix_r)))
        w = -torch.exp(self.time_decay)
        aa = x.new_zeros(b, c)
        bb = x.new_zeros(b, c)
        pp = x.new_full((b, c), -1e38)
        outs = []
        for i in range(t):
            kk, vv = k[:, i], v[:, i]
            ww = self.time_first + kk
            p = torch.maximum(pp, ww)
            e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
            outs.append((e1 * aa + e2 * vv) / (e1 * bb + e2))
            ww = pp + w
            p = torch.maximum(ww, kk)
            e1, e2 = torch.exp(ww - p), torch.exp(kk - p)
            aa, bb, pp = e1 * aa + e2 * vv, e1 * bb + e2, p
        return self.output(r * torch.stack(outs, dim=1))


def get_inputs():
    return [torch.randn(1, 16, 256)]


def get_init_inputs():
    return [256]
