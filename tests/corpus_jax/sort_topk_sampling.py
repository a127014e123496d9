"""Top-k / top-p (nucleus) filtering of next-token logits: sort, cumulative mass, masking."""
import jax
import jax.numpy as jnp
from jax import lax


# solar: logits=f32[16,2048]
def filter_logits(logits):
    top_v, top_i = lax.top_k(logits, 50)
    kth = top_v[:, -1:]
    logits = jnp.where(logits < kth, -jnp.inf, logits)
    order = jnp.argsort(-logits, axis=-1)
    sorted_logits = jnp.take_along_axis(logits, order, axis=-1)
    cum = jnp.cumsum(jax.nn.softmax(sorted_logits, axis=-1), axis=-1)
    cutoff = jnp.sum(cum < 0.9, axis=-1, keepdims=True)
    thresh = jnp.take_along_axis(sorted_logits, cutoff, axis=-1)
    return jnp.where(logits < thresh, -jnp.inf, logits), top_i
