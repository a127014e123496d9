"""Token embedding, a LayerNorm and a tied LM head with log-softmax (flax.linen)."""
import flax.linen as nn
import jax.numpy as jnp


# solar: ids=i32[4,64], init={"vocab": 4096, "dim": 256}
class TiedLM(nn.Module):
    vocab: int = 1000
    dim: int = 64

    @nn.compact
    def __call__(self, ids):
        emb = nn.Embed(self.vocab, self.dim)
        h = nn.LayerNorm()(emb(ids))
        logits = emb.attend(h)
        return logits - jnp.max(logits, axis=-1, keepdims=True) - jnp.log(
            jnp.sum(jnp.exp(logits - jnp.max(logits, axis=-1, keepdims=True)), axis=-1, keepdims=True))
