"""Bahdanau (additive) attention decoder step: score v^T tanh(W_h h_enc + W_s s), softmax over source
positions, context vector, nn.GRUCell update and output projection (fp32; 64 source tokens)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, enc: int, dec: int, attn: int, emb: int, vocab: int):
        super().__init__()
        self.W_h = nn.Linear(enc, attn, bias=False)
        self.W_s = nn.Linear(dec, attn)
        self.v = nn.Linear(attn, 1, bias=False)
        self.cell = nn.GRUCell(emb + enc, dec)
        self.out = nn.Linear(dec + enc, vocab)

    def forward(self, enc_out, state, y_prev):
        scores = self.v(torch.tanh(self.W_h(enc_out) + self.W_s(state)[:, None, :])).squeeze(-1)
        alpha = torch.softmax(scores, dim=-1)
        context = torch.bmm(alpha[:, None, :], enc_out).squeeze(1)
        state = self.cell(torch.cat([y_prev, context], dim=-1), state)
        return self.out(torch.cat([state, context], dim=-1)), state


def get_inputs():
    return [torch.randn(8, 64, 512), torch.randn(8, 256), torch.randn(8, 128)]


def get_init_inputs():
    return [512, 256, 256, 128, 8000]
