"""BERT embeddings: word, absolute position and token-type embedding lookups summed, LayerNorm,
dropout (fp32; 30522-token vocabulary, 2 x 128 tokens)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab: int, dim: int, max_pos: int, types: int):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, dim, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, dim)
        self.token_type_embeddings = nn.Embedding(types, dim)
        self.LayerNorm = nn.LayerNorm(dim, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)))

    def forward(self, input_ids, token_type_ids):
        pos = self.position_ids[:, : input_ids.shape[1]]
        emb = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        emb = emb + self.position_embeddings(pos)
        return self.dropout(self.LayerNorm(emb))


def get_inputs():
    return [torch.randint(0, 30522, (2, 128)), torch.randint(0, 2, (2, 128))]


def get_init_inputs():
    return [30522, 512, 512, 2]
