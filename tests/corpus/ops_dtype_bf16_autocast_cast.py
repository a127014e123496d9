"""Mixed precision by hand: fp32 activations cast to bf16 for the matmul, the result cast back to fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(512, 512).to(torch.bfloat16))

    def forward(self, x):
        return (x.to(torch.bfloat16) @ self.w).float()


def get_inputs():
    return [torch.randn(256, 512)]


def get_init_inputs():
    return []
