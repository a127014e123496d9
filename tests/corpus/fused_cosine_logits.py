"""CLIP's contrastive logits: L2-normalize both embeddings, scaled cosine-similarity matrix (fp32)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, image_emb, text_emb):
        image_emb = F.normalize(image_emb, dim=-1)
        text_emb = F.normalize(text_emb, dim=-1)
        return self.logit_scale.exp() * image_emb @ text_emb.t()


def get_inputs():
    return [torch.randn(256, 512), torch.randn(256, 512)]


def get_init_inputs():
    return []
