"""Grouped-query attention (8 query heads share 2 KV heads) with rotary embeddings."""
import jax
import jax.numpy as jnp

HQ, HKV, D = 8, 2, 64


def rotary(x):
    S = x.shape[1]
    inv = 1.0 / (10000.0 ** (jnp.arange(0, D, 2, dtype=jnp.float32) / D))
    ang = jnp.arange(S, dtype=jnp.float32)[:, None] * inv[None, :]
    sin, cos = jnp.sin(ang)[None, :, None, :], jnp.cos(ang)[None, :, None, :]
    x1, x2 = x[..., ::2], x[..., 1::2]
    return jnp.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1).reshape(x.shape)


# solar: x=f32[2,128,512], wq=f32[512,512], wk=f32[512,128], wv=f32[512,128], wo=f32[512,512]
def gqa(x, wq, wk, wv, wo):
    B, S, _ = x.shape
    q = rotary((x @ wq).reshape(B, S, HQ, D))
    k = rotary((x @ wk).reshape(B, S, HKV, D))
    v = (x @ wv).reshape(B, S, HKV, D)
    k = jnp.repeat(k, HQ // HKV, axis=2)
    v = jnp.repeat(v, HQ // HKV, axis=2)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(D)
    s = jnp.where(jnp.tril(jnp.ones((S, S), bool)), s, -jnp.inf)
    o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, -1), v)
    return o.reshape(B, S, HQ * D) @ wo
