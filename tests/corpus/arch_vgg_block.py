"""VGG-16 block 3: three 3x3 conv + ReLU layers and a 2x2 max-pool (fp16, 64 px feature map)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(2, 2),
        ).half()

    def forward(self, x):
        return self.features(x)


def get_inputs():
    return [torch.randn(1, 64, 32, 32, dtype=torch.float16)]


def get_init_inputs():
    return [64, 128]
