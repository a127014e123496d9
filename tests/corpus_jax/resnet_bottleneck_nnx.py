"""ResNet-50 bottleneck block (1x1 -> 3x3 -> 1x1, expansion 4) written with flax.nnx."""
import jax
from flax import nnx


# solar: x=f32[4,28,28,256], init=(256, 64)
class Bottleneck(nnx.Module):
    def __init__(self, cin, width, *, rngs: nnx.Rngs):
        self.c1 = nnx.Conv(cin, width, (1, 1), use_bias=False, rngs=rngs)
        self.b1 = nnx.BatchNorm(width, use_running_average=True, rngs=rngs)
        self.c2 = nnx.Conv(width, width, (3, 3), use_bias=False, rngs=rngs)
        self.b2 = nnx.BatchNorm(width, use_running_average=True, rngs=rngs)
        self.c3 = nnx.Conv(width, 4 * width, (1, 1), use_bias=False, rngs=rngs)
        self.b3 = nnx.BatchNorm(4 * width, use_running_average=True, rngs=rngs)

    def __call__(self, x):
        y = jax.nn.relu(self.b1(self.c1(x)))
        y = jax.nn.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return jax.nn.relu(x + y)
