"""Cross-attention with a key padding mask given as a boolean input."""
import jax
import jax.numpy as jnp


# solar: x=f32[8,32,128], mem=f32[8,96,128], keep=bool[8,96], wq=f32[128,128], wk=f32[128,128], wv=f32[128,128]
def cross_attention(x, mem, keep, wq, wk, wv):
    q, k, v = x @ wq, mem @ wk, mem @ wv
    s = jnp.einsum("bqd,bkd->bqk", q, k) / jnp.sqrt(128.0)
    s = jnp.where(keep[:, None, :], s, -jnp.inf)
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("bqk,bkd->bqd", p, v)
