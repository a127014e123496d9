"""Spectral norm by power iteration: a fori_loop with a static trip count of 20."""
import jax.numpy as jnp
from jax import lax


# solar: w=f32[512,256], u0=f32[512]
def spectral_norm(w, u0):
    def body(_, u):
        v = w.T @ u
        v = v / jnp.linalg.norm(v)
        u = w @ v
        return u / jnp.linalg.norm(u)

    u = lax.fori_loop(0, 20, body, u0)
    v = w.T @ u
    return jnp.sqrt(jnp.sum(v * v))
