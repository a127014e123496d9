"""NeRF MLP: sinusoidal positional encoding of 3-D points (10 octaves) and view directions (4),
8 ReLU layers of width 256 with a skip concat at layer 5, density and colour heads (fp32, 4096 rays)."""
import torch
import torch.nn as nn


def encode(x, octaves: int):
    freqs = 2.0 ** torch.arange(octaves, dtype=x.dtype) * torch.pi
    xb = x[..., None, :] * freqs[:, None]  # [N, L, 3]
    enc = torch.cat([torch.sin(xb), torch.cos(xb)], dim=-1).flatten(-2)
    return torch.cat([x, enc], dim=-1)


class Model(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        d_pos, d_dir = 3 + 3 * 2 * 10, 3 + 3 * 2 * 4
        layers = []
        for i in range(8):
            cin = d_pos if i == 0 else (width + d_pos if i == 5 else width)
            layers.append(nn.Linear(cin, width))
        self.layers = nn.ModuleList(layers)
        self.sigma = nn.Linear(width, 1)
        self.feature = nn.Linear(width, width)
        self.rgb = nn.Sequential(nn.Linear(width + d_dir, width // 2), nn.ReLU(), nn.Linear(width // 2, 3))

    def forward(self, pts, dirs):
        p = encode(pts, 10)
        h = p
        for i, layer in enumerate(self.layers):
            if i == 5:
                h = torch.cat([h, p], dim=-1)
            h = torch.relu(layer(h))
        sigma = torch.relu(self.sigma(h))
        rgb = torch.sigmoid(self.rgb(torch.cat([self.feature(h), encode(dirs, 4)], dim=-1)))
        return rgb, sigma


def get_inputs():
    return [torch.rand(4096, 3) * 2 - 1, torch.nn.functional.normalize(torch.randn(4096, 3), dim=-1)]


def get_init_inputs():
    return [256]
