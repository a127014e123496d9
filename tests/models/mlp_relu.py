"""Golden case: Linear(D, F) + ReLU + Linear(F, D) on [B, D]."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d: int, f: int):
        super().__init__()
        self.fc1 = nn.Linear(d, f)
        self.fc2 = nn.Linear(f, d)

    def forward(self, x):
        h = self.fc1(x)
        h = torch.relu(h)
        return self.fc2(h)


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return [64, 256]
