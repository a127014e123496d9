"""ShuffleNetV2 unit (stride 1): channel split with chunk, 1x1 conv-BN-ReLU, 3x3 depthwise-BN,
1x1 conv-BN-ReLU on one half, concat, channel shuffle by view/transpose (fp32)."""
import torch
import torch.nn as nn


def channel_shuffle(x, groups: int):
    b, c, h, w = x.shape
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous().view(b, c, h, w)


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        c = channels // 2
        self.branch = nn.Sequential(
            nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True),
            nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), nn.BatchNorm2d(c),
            nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True),
        )

    def forward(self, x):
        x1, x2 = x.chunk(2, dim=1)
        return channel_shuffle(torch.cat([x1, self.branch(x2)], dim=1), 2)


def get_inputs():
    return [torch.randn(2, 116, 28, 28)]


def get_init_inputs():
    return [116]
