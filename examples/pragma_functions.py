"""Plain functions analyzed through shape pragmas (no Model class needed)."""
import torch.nn.functional as F


# solar: B=4, S=512, D=1024, x=f32[B,S,D], w=f32[D,D]
def projection(x, w):
    return F.silu(x @ w)


# solar: q=bf16[2,16,512,64], k=bf16[2,16,512,64], v=bf16[2,16,512,64]
def attention_bf16(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)
