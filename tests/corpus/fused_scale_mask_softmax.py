"""Megatron's scaled masked softmax: scores * scale, masked_fill with -10000, softmax in fp32, back to fp16."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores, mask):
        x = (scores * self.scale).masked_fill(mask, -10000.0)
        return torch.softmax(x.float(), dim=-1).to(scores.dtype)


def get_inputs():
    scores = torch.randn(2, 8, 128, 128, dtype=torch.float16)
    mask = torch.ones(128, 128, dtype=torch.bool).triu(1)[None, None]
    return [scores, mask]


def get_init_inputs():
    return [0.125]
