"""A custom op the tracer keeps as one node and has no lowering for."""
import torch
import torch.nn as nn


@torch.library.custom_op("solar_llm_test::softclip", mutates_args=())
def softclip(x: torch.Tensor, scale: float) -> torch.Tensor:
    return x / (1.0 + torch.abs(x)) * scale


@softclip.register_fake
def _(x, scale):
    return torch.empty_like(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)

    def forward(self, x):
        h = self.fc(x)
        return softclip(h, 2.0) + h


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
