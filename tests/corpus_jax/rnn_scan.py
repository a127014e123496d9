"""Elman RNN over a sequence with lax.scan; the outputs are projected at every step."""
import jax.numpy as jnp
from jax import lax


# solar: x=f32[50,16,64], w_ih=f32[64,128], w_hh=f32[128,128], b=f32[128], w_out=f32[128,32]
def rnn(x, w_ih, w_hh, b, w_out):
    def step(h, xt):
        h = jnp.tanh(xt @ w_ih + h @ (w_hh * 0.1) + b)
        return h, h @ w_out

    h0 = jnp.zeros((x.shape[1], 128))
    h, ys = lax.scan(step, h0, x)
    return h, ys
