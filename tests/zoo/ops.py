"""One pragma entry per lowering family of the engine issue; each must verify."""
import torch
import torch.nn.functional as F


# solar: a=f32[64,96], b=f32[96,48]
def mm(a, b):
    return torch.mm(a, b)


# solar: a=f32[4,32,64], b=f32[4,64,16]
def bmm(a, b):
    return torch.bmm(a, b)


# solar: c=f32[48], a=f32[64,96], b=f32[96,48]
def addmm(c, a, b):
    return torch.addmm(c, a, b, beta=0.5, alpha=2.0)


# solar: x=f32[2,3,40], w=f32[24,40], b=f32[24]
def linear(x, w, b):
    return F.linear(x, w, b)


# solar: a=f32[2,1,8,16], b=f32[3,16,4]
def matmul_broadcast(a, b):
    return torch.matmul(a, b)


# solar: a=f32[8,16], v=f32[16]
def matvec(a, v):
    return a @ v


# solar: a=f32[2,8,16], b=f32[2,16,4], c=f32[4,5]
def einsum_chain(a, b, c):
    return torch.einsum("bij,bjk,kl->bil", a, b, c)


# solar: a=f32[6,6], b=f32[3,6,6]
def einsum_diag_ellipsis(a, b):
    return torch.einsum("ii->i", a) + torch.einsum("...ij->...i", b).sum(0)


# solar: x=f32[2,4,50], w=f32[8,4,5]
def conv1d_dilated(x, w):
    return F.conv1d(x, w, stride=2, padding=3, dilation=2)


# solar: x=f32[2,8,17,17], w=f32[16,2,3,3], b=f32[16]
def conv2d_groups(x, w, b):
    return F.conv2d(x, w, b, stride=2, padding=1, groups=4)


# solar: x=f32[1,2,6,8,8], w=f32[4,2,3,3,3]
def conv3d(x, w):
    return F.conv3d(x, w, padding=1)


# solar: x=f32[2,8,9,9], w=f32[8,4,3,3]
def conv_transpose2d(x, w):
    return F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1)


# solar: x=f32[4,33]
def activations(x):
    y = F.relu(x) + F.gelu(x) + F.silu(x) + torch.sigmoid(x) + torch.tanh(x) + F.leaky_relu(x, 0.1)
    y = y + F.elu(x) + F.softplus(x) + F.hardswish(x) + F.gelu(x, approximate="tanh") + F.mish(x)
    return y * 2.0 - x.exp() / (1 + x.abs()) + torch.clamp(x, -0.5, 0.5) + x.pow(2) + x.rsqrt().nan_to_num()


# solar: x=f32[4,7,33]
def softmaxes(x):
    return F.softmax(x, dim=-1) + F.log_softmax(x, dim=1).mean()


# solar: x=f32[4,6,10,10], w=f32[6], b=f32[6]
def norms(x, w, b):
    ln = F.layer_norm(x, (10, 10))
    gn = F.group_norm(x, 3, w, b)
    inn = F.instance_norm(x)
    bn = F.batch_norm(x, torch.zeros(6), torch.ones(6), w, b, training=False)
    rms = F.rms_norm(x, (10,), eps=1e-6)
    return ln + gn + inn + bn + rms


# solar: x=f32[5,12,7]
def reductions(x):
    parts = [x.sum(2), x.mean(-1), x.amax(2), x.amin(2), x.var(2), x.std(2, correction=0),
             x.prod(2), x.argmax(2).float(), x.argmin(2).float(), x.cumsum(2).sum(-1),
             x.max(dim=2).values, x.min(dim=2, keepdim=True).indices.squeeze(-1).float(),
             x.logsumexp(2), x.norm(dim=2)]
    return torch.stack(parts).sum(0)


# solar: x=f32[2,3,20,20], y=f32[2,3,30], z=f32[1,2,8,8,8]
def pooling(x, y, z):
    a = F.max_pool2d(x, 3, stride=2, padding=1).sum()
    b = F.avg_pool2d(x, 2).sum() + F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False).sum()
    c = F.max_pool1d(y, 4).sum() + F.avg_pool1d(y, 3, stride=3).sum()
    d = F.max_pool3d(z, 2).sum() + F.avg_pool3d(z, 2).sum() + F.adaptive_avg_pool2d(x, 1).sum()
    return a + b + c + d


# solar: q=f32[2,4,16,8], k=f32[2,4,24,8], v=f32[2,4,24,8], m=f32[16,24]
def sdpa_masked(q, k, v, m):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m) + F.scaled_dot_product_attention(q, q, q, is_causal=True)


# solar: x=f32[4,6,8], idx=i64[5], table=f32[20,8]
def composition(x, idx, table):
    a = x.view(4, 48).reshape(8, 24).t().contiguous()
    b = x.permute(2, 0, 1).transpose(0, 1)[:, 1:7:2, :].clone()
    c = torch.cat([x, x[:, :2]], dim=1)
    d = torch.stack([x, x], dim=0).flatten(0, 1)
    e = F.pad(x, (1, 2, 0, 1), value=0.5)
    g = torch.gather(x, 2, torch.zeros(4, 6, 3, dtype=torch.long))
    h = torch.index_select(table, 0, idx) + F.embedding(idx, table)
    return a.sum() + b.sum() + c.sum() + d.sum() + e.sum() + g.sum() + h.sum() + x.to(torch.float16).float().sum()


# solar: x=bf16[8,64], w=bf16[32,64]
def bf16_linear(x, w):
    return F.linear(x, w).float().softmax(-1)


# solar: x=f32[6,6]
def triangles(x):
    return x.tril() + x.triu(1) + torch.where(x > 0, x, torch.zeros_like(x)) + x.masked_fill(x < 0, -1.0)
