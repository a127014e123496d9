"""SIREN: an MLP with sine activations evaluated on a 2-D coordinate grid built with
jnp.meshgrid / linspace (flax.linen)."""
import flax.linen as nn
import jax.numpy as jnp


# solar: scale=f32[]
class Siren(nn.Module):
    @nn.compact
    def __call__(self, scale):
        t = jnp.linspace(-1.0, 1.0, 64)
        xy = jnp.stack(jnp.meshgrid(t, t), axis=-1).reshape(-1, 2) * scale
        h = jnp.sin(30.0 * nn.Dense(128)(xy))
        h = jnp.sin(nn.Dense(128)(h))
        return nn.Dense(3)(h).reshape(64, 64, 3)
