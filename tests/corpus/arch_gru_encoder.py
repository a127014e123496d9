"""Bidirectional GRU sentence encoder: embedding, 1-layer bidirectional nn.GRU, max-pool over time,
linear classifier (fp32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab: int, emb: int, hidden: int, classes: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.gru = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, tokens):
        out, _ = self.gru(self.embed(tokens))
        return self.fc(out.amax(dim=1))


def get_inputs():
    return [torch.randint(0, 8000, (4, 32))]


def get_init_inputs():
    return [8000, 128, 128, 5]
