"""Loss: KL divergence (batchmean) against probabilities and against log-probabilities
(log_target)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, logp, q, logq):
        return (F.kl_div(logp, q, reduction="batchmean"),
                F.kl_div(logp, logq, reduction="batchmean", log_target=True))


def get_inputs():
    return [torch.randn(256, 1000).log_softmax(-1),
            torch.softmax(torch.randn(256, 1000), -1),
            torch.randn(256, 1000).log_softmax(-1)]


def get_init_inputs():
    return []
