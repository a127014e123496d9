"""Mixture-of-experts layer: softmax router, top-2 selection, dense dispatch over 8 experts
weighted by the renormalised gates."""
import jax
import jax.numpy as jnp
from jax import lax


# solar: x=f32[256,128], w_router=f32[128,8], w1=f32[8,128,256], w2=f32[8,256,128]
def moe(x, w_router, w1, w2):
    probs = jax.nn.softmax(x @ w_router, axis=-1)
    top_p, top_i = lax.top_k(probs, 2)
    gates = top_p / top_p.sum(-1, keepdims=True)
    onehot = jax.nn.one_hot(top_i, 8)  # [T, 2, E]
    combine = jnp.einsum("tk,tke->te", gates, onehot)
    h = jax.nn.relu(jnp.einsum("td,edh->teh", x, w1))
    y = jnp.einsum("teh,ehd->ted", h, w2)
    return jnp.einsum("ted,te->td", y, combine)
