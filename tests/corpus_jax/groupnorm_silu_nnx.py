"""GroupNorm + SiLU + 3x3 conv, the diffusion-model building block, in flax.nnx."""
from flax import nnx


# solar: x=f32[4,32,32,128], init=(128, 128)
class NormActConv(nnx.Module):
    def __init__(self, cin, cout, *, rngs: nnx.Rngs):
        self.norm = nnx.GroupNorm(cin, num_groups=32, rngs=rngs)
        self.conv = nnx.Conv(cin, cout, (3, 3), rngs=rngs)

    def __call__(self, x):
        return self.conv(nnx.silu(self.norm(x)))
