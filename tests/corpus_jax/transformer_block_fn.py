"""Decoder block as a pure function: fused QKV projection, causal attention, GELU MLP."""
import jax
import jax.numpy as jnp

H = 4


def layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + eps) * g + b


# solar: x=f32[2,64,256], wqkv=f32[256,768], wo=f32[256,256], w1=f32[256,1024], w2=f32[1024,256], g=f32[256], b=f32[256]
def block(x, wqkv, wo, w1, w2, g, b):
    B, S, D = x.shape
    q, k, v = jnp.split(layer_norm(x, g, b) @ wqkv, 3, axis=-1)
    q = q.reshape(B, S, H, D // H)
    k = k.reshape(B, S, H, D // H)
    v = v.reshape(B, S, H, D // H)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(D // H)
    mask = jnp.tril(jnp.ones((S, S), dtype=bool))
    s = jnp.where(mask, s, -1e9)
    a = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v).reshape(B, S, D)
    x = x + a @ wo
    return x + jax.nn.gelu(layer_norm(x, g, b) @ w1) @ w2
