"""Multi-head latent attention (DeepSeek-V2 style): keys and values come from a low-rank
latent c_kv; a small decoupled RoPE key is shared across heads."""
import jax
import jax.numpy as jnp

H, DH, DR = 8, 32, 16


def rope(x, ang):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = jnp.cos(ang), jnp.sin(ang)
    return jnp.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


# solar: x=f32[2,64,256], w_dq=f32[256,96], w_uq=f32[96,256], w_qr=f32[96,128], w_dkv=f32[256,64], w_uk=f32[64,256], w_uv=f32[64,256], w_kr=f32[256,16], w_o=f32[256,256]
def mla(x, w_dq, w_uq, w_qr, w_dkv, w_uk, w_uv, w_kr, w_o):
    B, S, _ = x.shape
    freq = 1.0 / (10000 ** (jnp.arange(DR // 2, dtype=jnp.float32) / (DR // 2)))
    ang = jnp.arange(S, dtype=jnp.float32)[:, None] * freq[None, :]
    cq = x @ w_dq
    q = (cq @ w_uq).reshape(B, S, H, DH)
    qr = rope((cq @ w_qr).reshape(B, S, H, DR), ang[:, None, :])
    ckv = x @ w_dkv
    k = (ckv @ w_uk).reshape(B, S, H, DH)
    v = (ckv @ w_uv).reshape(B, S, H, DH)
    kr = rope(x @ w_kr, ang)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) + jnp.einsum("bqhr,bkr->bhqk", qr, kr)
    s = s / jnp.sqrt(DH + DR)
    causal = jnp.tril(jnp.ones((S, S), bool))
    p = jax.nn.softmax(jnp.where(causal, s, -1e9), axis=-1)
    o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(B, S, H * DH)
    return o @ w_o
