"""GoogLeNet Inception (3a): 1x1, 1x1->3x3, 1x1->5x5 and 3x3 max-pool->1x1 branches concatenated
along channels (fp32, 28x28 map)."""
import torch
import torch.nn as nn


def conv_relu(cin: int, cout: int, k: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2), nn.ReLU(inplace=True))


class Model(nn.Module):
    def __init__(self, cin: int):
        super().__init__()
        self.b1 = conv_relu(cin, 64, 1)
        self.b2 = nn.Sequential(conv_relu(cin, 96, 1), conv_relu(96, 128, 3))
        self.b3 = nn.Sequential(conv_relu(cin, 16, 1), conv_relu(16, 32, 5))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1), conv_relu(cin, 32, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


def get_inputs():
    return [torch.randn(1, 192, 28, 28)]


def get_init_inputs():
    return [192]
