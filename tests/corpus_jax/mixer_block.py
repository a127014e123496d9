"""MLP-Mixer block: token mixing across patches (via a transpose) and channel mixing."""
import flax.linen as nn


class MlpBlock(nn.Module):
    hidden: int

    @nn.compact
    def __call__(self, x):
        return nn.Dense(x.shape[-1])(nn.gelu(nn.Dense(self.hidden)(x)))


# solar: x=f32[8,196,256]
class MixerBlock(nn.Module):
    @nn.compact
    def __call__(self, x):
        y = nn.LayerNorm()(x).swapaxes(1, 2)
        x = x + MlpBlock(128)(y).swapaxes(1, 2)
        return x + MlpBlock(1024)(nn.LayerNorm()(x))
