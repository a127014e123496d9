"""Megatron's bias-dropout-add + LayerNorm after an attention output projection (fp16, eval: dropout off)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_model: int):
        super().__init__()
        self.dense = nn.Linear(d_model, d_model, bias=False)
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.ln = nn.LayerNorm(d_model)
        self.half()

    def forward(self, attn_out, residual):
        h = F.dropout(self.dense(attn_out) + self.bias, p=0.1, training=self.training)
        return self.ln(residual + h)


def get_inputs():
    return [torch.randn(2, 128, 512, dtype=torch.float16), torch.randn(2, 128, 512, dtype=torch.float16)]


def get_init_inputs():
    return [512]
