"""bfloat16 MLP whose matmuls accumulate in float32 (preferred_element_type)."""
import jax
import jax.numpy as jnp
from jax import lax


def dense(x, w):
    y = lax.dot_general(x, w, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)
    return y.astype(jnp.bfloat16)


# solar: x=bf16[256,1024], w1=bf16[1024,4096], w2=bf16[4096,1024]
def mlp_bf16(x, w1, w2):
    return dense(jax.nn.gelu(dense(x, w1)), w2)
