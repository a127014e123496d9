"""Pre-LayerNorm transformer encoder block (flax.linen MultiHeadDotProductAttention)."""
import flax.linen as nn


# solar: x=f32[2,128,256], init={"heads": 8, "mlp": 1024}
class EncoderBlock(nn.Module):
    heads: int = 4
    mlp: int = 512

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h)
        x = x + h
        h = nn.LayerNorm()(x)
        h = nn.Dense(self.mlp)(h)
        h = nn.gelu(h)
        return x + nn.Dense(x.shape[-1])(h)
