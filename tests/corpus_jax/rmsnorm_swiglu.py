"""LLaMA feed-forward: RMSNorm then a SwiGLU MLP, in bfloat16 with float32 statistics."""
import jax
import jax.numpy as jnp


# solar: x=bf16[4,256,512], g=bf16[512], w_gate=bf16[512,1376], w_up=bf16[512,1376], w_down=bf16[1376,512]
def swiglu_ffn(x, g, w_gate, w_up, w_down):
    xf = x.astype(jnp.float32)
    xn = (xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + 1e-6)).astype(x.dtype) * g
    return x + (jax.nn.silu(xn @ w_gate) * (xn @ w_up)) @ w_down
