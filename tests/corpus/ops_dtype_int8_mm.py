"""int8 x int8 -> int32 GEMM with torch._int_mm (weight-only quantised inference): 1-byte operands, int8 tensor-core peak."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.randint(-128, 127, (1024, 512), dtype=torch.int8))

    def forward(self, x):
        return torch._int_mm(x, self.w)


def get_inputs():
    return [torch.randint(-128, 127, (64, 1024), dtype=torch.int8)]


def get_init_inputs():
    return []
