"""int8 weights dequantised on the fly: cast to fp16, per-channel scale, fp16 matmul."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("wq", torch.randint(-127, 127, (1024, 512), dtype=torch.int8))
        self.register_buffer("scale", (torch.rand(512) * 0.01).to(torch.float16))

    def forward(self, x):
        return x @ (self.wq.to(torch.float16) * self.scale)


def get_inputs():
    return [torch.randn(64, 1024, dtype=torch.float16)]


def get_init_inputs():
    return []
