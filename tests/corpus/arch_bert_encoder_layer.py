"""BERT-style encoder layer through torch's own nn.TransformerEncoderLayer (post-LN, GELU,
batch_first) with a key padding mask (fp32; 2 x 128 tokens, 512 wide)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, heads: int, ffn: int):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(dim, heads, ffn, dropout=0.1, activation="gelu",
                                                batch_first=True)

    def forward(self, x, padding_mask):
        return self.layer(x, src_key_padding_mask=padding_mask)


def get_inputs():
    pad = torch.zeros(2, 128, dtype=torch.bool)
    pad[1, 100:] = True
    return [torch.randn(2, 128, 512), pad]


def get_init_inputs():
    return [512, 8, 2048]
