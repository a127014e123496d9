"""Data-dependent branch with lax.cond: an expensive attention-like path or a cheap
residual path; the bound counts the costlier one."""
import jax
import jax.numpy as jnp
from jax import lax


# solar: x=f32[128,256], w=f32[256,256]
def gated(x, w):
    def heavy(z):
        s = jax.nn.softmax(z @ w @ z.T / 16.0, axis=-1)
        return s @ z

    def light(z):
        return z * 0.5

    return lax.cond(jnp.mean(x) > 0, heavy, light, x)
