"""Mamba block with the selective scan written as a python loop over 16 time steps (the reference
`selective_scan_ref`): in_proj, causal depthwise conv1d, input-dependent dt/B/C, discretized
state update h = exp(dt*A) h + dt*B*x, gated output (fp32)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_model: int, d_state: int, d_conv: int, expand: int):
        super().__init__()
        d_inner = expand * d_model
        self.d_inner, self.d_state = d_inner, d_state
        self.dt_rank = (d_model + 15) // 16
        self.in_proj = nn.Linear(d_model, 2 * d_inner, bias=False)
        self.conv1d = nn.Conv1d(d_inner, d_inner, d_conv, groups=d_inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(d_inner, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, d_inner)
        a = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(d_inner, 1)
        self.A_log = nn.Parameter(torch.log(a))
        self.D = nn.Parameter(torch.ones(d_inner))
        self.out_proj = nn.Linear(d_inner, d_model, bias=False)

    def forward(self, hidden):
        b, L, _ = hidden.shape
        x, z = self.in_proj(hidden).chunk(2, dim=-1)
        x = F.silu(self.conv1d(x.transpose(1, 2))[..., :L]).transpose(1, 2)  # [b, L, d_inner]
        dt, B, C = self.x_proj(x).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = F.softplus(self.dt_proj(dt))  # [b, L, d_inner]
        A = -torch.exp(self.A_log)  # [d_inner, d_state]
        h = x.new_zeros(b, self.d_inner, self.d_state)
        ys = []
        for t in range(L):
            dA = torch.exp(dt[:, t, :, None] * A)
            dBx = dt[:, t, :, None] * B[:, t, None, :] * x[:, t, :, None]
            h = dA * h + dBx
            ys.append((h * C[:, t, None, :]).sum(-1))
        y = torch.stack(ys, dim=1) + x * self.D
        return self.out_proj(y * F.silu(z))


def get_inputs():
    return [torch.randn(1, 16, 256)]


def get_init_inputs():
    return [256, 16, 4, 2]
