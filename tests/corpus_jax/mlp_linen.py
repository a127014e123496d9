"""Three-layer MLP classifier (flax.linen) on flattened 28x28 images."""
import flax.linen as nn


# solar: x=f32[128,784], init={"hidden": 512, "classes": 10}
class MLP(nn.Module):
    hidden: int = 256
    classes: int = 10

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.Dropout(0.1, deterministic=True)(x)
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.log_softmax(nn.Dense(self.classes)(x))
