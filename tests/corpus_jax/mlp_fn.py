"""Two-layer MLP as a plain JAX function with explicit weights."""
import jax


# solar: x=f32[64,256], w1=f32[256,512], b1=f32[512], w2=f32[512,128], b2=f32[128]
def mlp(x, w1, b1, w2, b2):
    h = jax.nn.gelu(x @ w1 + b1)
    return jax.nn.softmax(h @ w2 + b2, axis=-1)
