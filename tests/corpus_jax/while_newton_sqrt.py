"""Newton iterations for an elementwise reciprocal square root, written as a while_loop
with an explicit counter (a static trip count of 8)."""
import jax.numpy as jnp
from jax import lax


# solar: a=f32[1024,256]
def newton_rsqrt(a):
    a = jnp.abs(a) + 0.5

    def cond(state):
        i, _ = state
        return i < 8

    def body(state):
        i, y = state
        return i + 1, y * (1.5 - 0.5 * a * y * y)

    _, y = lax.while_loop(cond, body, (0, jnp.full_like(a, 0.5)))
    return y
