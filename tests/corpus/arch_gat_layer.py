"""Graph attention layer (GAT) on a dense adjacency: shared projection, per-head attention logits
a^T [Wh_i || Wh_j] as a broadcast sum, LeakyReLU(0.2), masked softmax over neighbours, ELU (fp32)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, cin: int, cout: int, heads: int):
        super().__init__()
        self.h, self.c = heads, cout
        self.W = nn.Linear(cin, heads * cout, bias=False)
        self.a_src = nn.Parameter(torch.randn(heads, cout) * 0.1)
        self.a_dst = nn.Parameter(torch.randn(heads, cout) * 0.1)

    def forward(self, x, adj):
        n = x.shape[0]
        h = self.W(x).view(n, self.h, self.c)  # [N, H, C]
        e_src = (h * self.a_src).sum(-1)  # [N, H]
        e_dst = (h * self.a_dst).sum(-1)
        e = F.leaky_relu(e_dst[:, None, :] + e_src[None, :, :], 0.2)  # [N(dst), N(src), H]
        e = e.masked_fill(adj[..., None] == 0, float("-inf"))
        alpha = torch.softmax(e, dim=1)
        out = torch.einsum("ijh,jhc->ihc", alpha, h)
        return F.elu(out.reshape(n, -1))


def get_inputs():
    adj = ((torch.rand(256, 256) < 0.05) | torch.eye(256, dtype=torch.bool)).float()
    return [torch.randn(256, 128), adj]


def get_init_inputs():
    return [128, 32, 4]
