"""Activations defined with jax.custom_vjp and jax.custom_jvp (forward only is analyzed)."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_grad_tanh(x):
    return jnp.tanh(x)


clip_grad_tanh.defvjp(lambda x: (jnp.tanh(x), x), lambda x, g: (jnp.clip(g, -1, 1) * (1 - jnp.tanh(x) ** 2),))


@jax.custom_jvp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))


# solar: x=f32[128,512], w=f32[512,512]
def act(x, w):
    return softplus(clip_grad_tanh(x @ w)) + jax.nn.relu(x)
