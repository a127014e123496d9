"""ViT stem: 16x16 patchify convolution, class token, learned position embedding, LayerNorm."""
import flax.linen as nn
import jax.numpy as jnp


# solar: img=f32[4,224,224,3], init={"dim": 384}
class PatchEmbed(nn.Module):
    dim: int = 192

    @nn.compact
    def __call__(self, img):
        x = nn.Conv(self.dim, (16, 16), strides=(16, 16), padding="VALID")(img)
        b, h, w, d = x.shape
        x = x.reshape(b, h * w, d)
        cls = self.param("cls", nn.initializers.zeros, (1, 1, d))
        x = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, d)), x], axis=1)
        pos = self.param("pos", nn.initializers.normal(0.02), (1, h * w + 1, d))
        return nn.LayerNorm()(x + pos)
