"""DenseNet dense block of 4 layers (BN-ReLU-1x1 bottleneck-BN-ReLU-3x3, growth 32), each layer's output
concatenated onto the running feature map, then a transition (BN-ReLU-1x1-avgpool) (fp32)."""
import torch
import torch.nn as nn


class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int, bn_size: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, bn_size * growth, 1, bias=False),
            nn.BatchNorm2d(bn_size * growth), nn.ReLU(inplace=True),
            nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False),
        )

    def forward(self, features):
        return self.net(torch.cat(features, 1))


class Model(nn.Module):
    def __init__(self, cin: int, layers: int, growth: int):
        super().__init__()
        self.layers = nn.ModuleList(DenseLayer(cin + i * growth, growth, 4) for i in range(layers))
        cout = cin + layers * growth
        self.transition = nn.Sequential(nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                                        nn.Conv2d(cout, cout // 2, 1, bias=False), nn.AvgPool2d(2, 2))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(features))
        return self.transition(torch.cat(features, 1))


def get_inputs():
    return [torch.randn(2, 64, 28, 28)]


def get_init_inputs():
    return [64, 4, 32]
