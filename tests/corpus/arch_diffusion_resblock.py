"""Stable Diffusion UNet ResBlock: GroupNorm-SiLU-conv, timestep embedding projected and added per
channel, GroupNorm-SiLU-dropout-conv, 1x1 skip when channels change (fp16; 32x32 latent)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin: int, cout: int, temb: int):
        super().__init__()
        self.norm1 = nn.GroupNorm(32, cin, eps=1e-5)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb, cout)
        self.norm2 = nn.GroupNorm(32, cout, eps=1e-5)
        self.dropout = nn.Dropout(0.0)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1)
        self.act = nn.SiLU()
        self.half()

    def forward(self, x, temb):
        h = self.conv1(self.act(self.norm1(x)))
        h = h + self.time_emb_proj(self.act(temb))[:, :, None, None]
        h = self.conv2(self.dropout(self.act(self.norm2(h))))
        return self.skip(x) + h


def get_inputs():
    return [torch.randn(1, 64, 32, 32, dtype=torch.float16), torch.randn(1, 512, dtype=torch.float16)]


def get_init_inputs():
    return [64, 128, 512]
