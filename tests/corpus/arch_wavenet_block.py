"""WaveNet residual stack: dilated causal conv1d (left padding with F.pad), tanh * sigmoid gate,
1x1 residual and skip convs, dilations 1, 2, 4, 8 (fp32, 512 samples)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResidualLayer(nn.Module):
    def __init__(self, channels: int, skip: int, dilation: int):
        super().__init__()
        self.dilation = dilation
        self.conv = nn.Conv1d(channels, 2 * channels, 2, dilation=dilation)
        self.res = nn.Conv1d(channels, channels, 1)
        self.skip = nn.Conv1d(channels, skip, 1)

    def forward(self, x):
        h = self.conv(F.pad(x, (self.dilation, 0)))
        filt, gate = h.chunk(2, dim=1)
        z = torch.tanh(filt) * torch.sigmoid(gate)
        return x + self.res(z), self.skip(z)


class Model(nn.Module):
    def __init__(self, channels: int, skip: int):
        super().__init__()
        self.layers = nn.ModuleList(ResidualLayer(channels, skip, 2 ** i) for i in range(4))

    def forward(self, x):
        total = 0
        for layer in self.layers:
            x, s = layer(x)
            total = total + s
        return torch.relu(total), x  # skip sum to the head, residual stream to the next stack


def get_inputs():
    return [torch.randn(1, 64, 512)]


def get_init_inputs():
    return [64, 128]
