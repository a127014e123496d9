"""YOLOv8 C2f block: 1x1 Conv-BN-SiLU, split in two with chunk, a chain of two Bottlenecks whose
outputs are all concatenated, 1x1 Conv-BN-SiLU fuse (fp32; 40x40 map)."""
import torch
import torch.nn as nn


class Conv(nn.Module):
    def __init__(self, cin: int, cout: int, k: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=1e-3)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.cv1 = Conv(c, c, 3)
        self.cv2 = Conv(c, c, 3)

    def forward(self, x):
        return x + self.cv2(self.cv1(x))


class Model(nn.Module):
    def __init__(self, cin: int, cout: int, n: int):
        super().__init__()
        self.c = cout // 2
        self.cv1 = Conv(cin, 2 * self.c, 1)
        self.cv2 = Conv((2 + n) * self.c, cout, 1)
        self.m = nn.ModuleList(Bottleneck(self.c) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


def get_inputs():
    return [torch.randn(1, 128, 40, 40)]


def get_init_inputs():
    return [128, 128, 2]
