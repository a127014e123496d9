"""Classifier head: global average pool + flatten + dropout + linear (ResNet/EfficientNet tail, fp32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int, classes: int):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        return self.fc(self.drop(torch.flatten(self.pool(x), 1)))


def get_inputs():
    return [torch.randn(2, 512, 7, 7)]


def get_init_inputs():
    return [512, 1000]
