"""Pooling variants: overlapping 3x3/2 max pool, 2x2 average pool, global average pool."""
import flax.linen as nn
import jax.numpy as jnp


# solar: x=f32[16,32,32,64]
def pools(x):
    a = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
    b = nn.avg_pool(x, (2, 2), strides=(2, 2))
    c = jnp.mean(x, axis=(1, 2))
    return a, b, c
