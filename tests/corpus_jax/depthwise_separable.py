"""MobileNet depthwise-separable block: 3x3 depthwise conv (feature_group_count=C), BN,
ReLU6, then a 1x1 pointwise conv (flax.linen)."""
import flax.linen as nn
import jax.numpy as jnp


# solar: x=f32[8,56,56,64], init={"out_ch": 128}
class DWSeparable(nn.Module):
    out_ch: int = 64

    @nn.compact
    def __call__(self, x):
        c = x.shape[-1]
        x = nn.Conv(c, (3, 3), feature_group_count=c, use_bias=False)(x)
        x = jnp.clip(nn.BatchNorm(use_running_average=True)(x), 0.0, 6.0)
        x = nn.Conv(self.out_ch, (1, 1), use_bias=False)(x)
        return jnp.clip(nn.BatchNorm(use_running_average=True)(x), 0.0, 6.0)
