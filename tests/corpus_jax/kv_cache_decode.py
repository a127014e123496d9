"""One autoregressive decode step: write the new key/value at position `pos` into the KV
cache (dynamic_update_slice) and attend over the cache with a length mask."""
import jax
import jax.numpy as jnp
from jax import lax


# solar: x=f32[4,1,256], k_cache=f32[4,512,256], v_cache=f32[4,512,256], pos=i32[], wq=f32[256,256], wk=f32[256,256], wv=f32[256,256]
def decode_step(x, k_cache, v_cache, pos, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv
    k_cache = lax.dynamic_update_slice(k_cache, k, (0, pos, 0))
    v_cache = lax.dynamic_update_slice(v_cache, v, (0, pos, 0))
    s = jnp.einsum("bqd,bkd->bqk", q, k_cache) / 16.0
    valid = jnp.arange(k_cache.shape[1])[None, None, :] <= pos
    p = jax.nn.softmax(jnp.where(valid, s, -jnp.inf), axis=-1)
    return jnp.einsum("bqk,bkd->bqd", p, v_cache), k_cache, v_cache
