"""Gated convolutional language-model layer (GLU over a causal 1-D conv), flax.linen."""
import flax.linen as nn


# solar: x=f32[8,256,128], init={"width": 4}
class GatedConv(nn.Module):
    width: int = 3

    @nn.compact
    def __call__(self, x):
        h = nn.Conv(2 * x.shape[-1], (self.width,), padding=[(self.width - 1, 0)])(x)
        return x + nn.glu(h, axis=-1)
