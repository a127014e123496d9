"""LSTM language model: token embedding, 2-layer nn.LSTM (batch_first), vocabulary head (fp32)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab: int, emb: int, hidden: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


def get_inputs():
    return [torch.randint(0, 4000, (2, 32))]


def get_init_inputs():
    return [4000, 256, 256, 2]
