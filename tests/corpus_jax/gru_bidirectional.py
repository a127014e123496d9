"""Bidirectional GRU: one forward and one reverse lax.scan, concatenated."""
import jax
import jax.numpy as jnp
from jax import lax


def gru_dir(x, wx, wh, reverse):
    n = wh.shape[0]

    def cell(h, xt):
        zx, zh = xt @ wx, h @ wh
        r = jax.nn.sigmoid(zx[:, :n] + zh[:, :n])
        z = jax.nn.sigmoid(zx[:, n:2 * n] + zh[:, n:2 * n])
        cand = jnp.tanh(zx[:, 2 * n:] + r * zh[:, 2 * n:])
        h = (1 - z) * cand + z * h
        return h, h

    _, hs = lax.scan(cell, jnp.zeros((x.shape[1], n)), x, reverse=reverse)
    return hs


# solar: x=f32[24,4,32], wx_f=f32[32,192], wh_f=f32[64,192], wx_b=f32[32,192], wh_b=f32[64,192]
def bigru(x, wx_f, wh_f, wx_b, wh_b):
    return jnp.concatenate([gru_dir(x, wx_f, wh_f, False), gru_dir(x, wx_b, wh_b, True)], axis=-1)
