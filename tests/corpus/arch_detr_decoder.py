"""DETR decoder layer: object queries with positional embeddings, self-attention and cross-attention
to the encoder memory through nn.MultiheadAttention, post-norm FFN (fp32; 100 queries, 16x16 memory)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_model: int, heads: int, ffn: int):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, heads)
        self.cross_attn = nn.MultiheadAttention(d_model, heads)
        self.linear1 = nn.Linear(d_model, ffn)
        self.linear2 = nn.Linear(ffn, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def forward(self, tgt, memory, pos, query_pos):
        q = k = tgt + query_pos
        tgt = self.norm1(tgt + self.self_attn(q, k, tgt, need_weights=False)[0])
        tgt2 = self.cross_attn(tgt + query_pos, memory + pos, memory, need_weights=False)[0]
        tgt = self.norm2(tgt + tgt2)
        return self.norm3(tgt + self.linear2(F.relu(self.linear1(tgt))))


def get_inputs():
    # sequence-first, as nn.MultiheadAttention defaults to
    return [torch.randn(100, 2, 256), torch.randn(256, 2, 256), torch.randn(256, 2, 256), torch.randn(100, 2, 256)]


def get_init_inputs():
    return [256, 8, 1024]
