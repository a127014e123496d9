"""ViT patch embedding the lucidrains way: einops Rearrange layer cuts 8x8 patches, LayerNorm, Linear,
LayerNorm, then a learned position embedding (fp32, 64 px images)."""
import torch
import torch.nn as nn
from einops.layers.torch import Rearrange


class Model(nn.Module):
    def __init__(self, patch: int, channels: int, dim: int, num_patches: int):
        super().__init__()
        patch_dim = channels * patch * patch
        self.to_patch_embedding = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
            nn.LayerNorm(patch_dim),
            nn.Linear(patch_dim, dim),
            nn.LayerNorm(dim),
        )
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches, dim))

    def forward(self, img):
        return self.to_patch_embedding(img) + self.pos_embedding


def get_inputs():
    return [torch.randn(2, 3, 64, 64)]


def get_init_inputs():
    return [8, 3, 384, 64]
