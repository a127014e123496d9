"""WaveNet-style stack of dilated causal 1-D convolutions with gated activations."""
import jax
import jax.numpy as jnp
from jax import lax


def causal_conv(x, w, dilation):
    pad = (w.shape[0] - 1) * dilation
    return lax.conv_general_dilated(x, w, (1,), [(pad, 0)], rhs_dilation=(dilation,),
                                    dimension_numbers=("NWC", "WIO", "NWC"))


# solar: x=f32[4,1024,32], wf=f32[3,2,32,32], wg=f32[3,2,32,32], wr=f32[3,32,32]
def wavenet(x, wf, wg, wr):
    scale = 1.0 / jnp.sqrt(2.0 * 32)  # fan-in scaling keeps activations O(1)
    for i, d in enumerate((1, 2, 4)):
        h = jnp.tanh(causal_conv(x, wf[i] * scale, d)) * jax.nn.sigmoid(causal_conv(x, wg[i] * scale, d))
        x = x + jnp.einsum("bwc,cd->bwd", h, wr[i] * scale)
    return x
