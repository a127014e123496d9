"""Deep Sets: a per-element encoder, sum pooling over the set, and a decoder (flax.linen)."""
import flax.linen as nn


# solar: pts=f32[32,100,3]
class DeepSet(nn.Module):
    @nn.compact
    def __call__(self, pts):
        h = nn.relu(nn.Dense(128)(pts))
        h = nn.relu(nn.Dense(128)(h))
        pooled = h.sum(axis=1)
        return nn.Dense(10)(nn.relu(nn.Dense(128)(pooled)))
