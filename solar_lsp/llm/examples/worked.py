"""Worked examples for the LLM prompt: source and the IR the torch tracer produces for it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)

    def forward(self, x):
        h = torch.tanh(self.fc(x))
        return h * 0.5 + 1.0


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []


# solar: x=f32[4,10]
def softmax_rows(x):
    return torch.softmax(x, dim=-1)


# solar: x=f32[2,3,16], w=f32[4,3,3]
def conv_pad(x, w):
    return F.conv1d(x, w, padding=1)


# solar: table=f32[32,8], ids=i64[2,5]
def embed_t(table, ids):
    return F.embedding(ids, table).permute(0, 2, 1)


# solar: x=f32[3,7]
def running_sum(x):
    return torch.cumsum(x, dim=1)
