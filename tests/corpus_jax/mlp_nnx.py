"""MLP with GELU and a residual projection, written with flax.nnx."""
from flax import nnx


# solar: x=f32[64,512], init=(512, 2048)
class FeedForward(nnx.Module):
    def __init__(self, d, hidden, *, rngs: nnx.Rngs):
        self.up = nnx.Linear(d, hidden, rngs=rngs)
        self.down = nnx.Linear(hidden, d, rngs=rngs)
        self.norm = nnx.LayerNorm(d, rngs=rngs)

    def __call__(self, x):
        h = nnx.gelu(self.up(self.norm(x)), approximate=False)
        return x + self.down(h)
