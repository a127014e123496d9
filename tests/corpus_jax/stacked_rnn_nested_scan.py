"""Two stacked tanh RNN layers: an outer scan over time whose body runs an inner scan over
the layers (nested loops multiply: 2 x 40 cell updates)."""
import jax.numpy as jnp
from jax import lax


# solar: x=f32[40,8,64], w_x=f32[2,64,64], w_h=f32[2,64,64]
def stacked_rnn(x, w_x, w_h):
    def time_step(hs, xt):
        def layer(inp, params):
            h, wx, wh = params
            h_new = jnp.tanh(inp @ wx + h @ (wh * 0.1))
            return h_new, h_new

        top, hs_new = lax.scan(layer, xt, (hs, w_x, w_h))
        return hs_new, top

    h0 = jnp.zeros((2, x.shape[1], 64))
    hs, tops = lax.scan(time_step, h0, x)
    return hs, tops
