"""Single-layer LSTM (fused gate matmul) unrolled with lax.scan over 32 steps."""
import jax
import jax.numpy as jnp
from jax import lax


# solar: x=f32[32,8,64], w=f32[192,512], b=f32[512]
def lstm(x, w, b):
    n = 128

    def cell(carry, xt):
        h, c = carry
        z = jnp.concatenate([xt, h], axis=-1) @ w + b
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((x.shape[1], n))
    (h, c), hs = lax.scan(cell, (zeros, zeros), x)
    return hs, h, c
