"""fp8 round trip (quantise-dequantise of activations, as in fp8 training recipes): casts only, 1-byte intermediate."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (x * 8.0).to(torch.float8_e4m3fn).to(torch.float32) / 8.0


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return []
