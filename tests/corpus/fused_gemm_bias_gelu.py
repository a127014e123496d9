"""Linear (GEMM + bias) followed by GELU: the first half of a BERT feed-forward layer (bf16)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.fc = nn.Linear(d_model, d_ff).to(torch.bfloat16)

    def forward(self, x):
        return F.gelu(self.fc(x))


def get_inputs():
    return [torch.randn(2, 128, 512, dtype=torch.bfloat16)]


def get_init_inputs():
    return [512, 2048]
