"""CLIP-style contrastive loss: L2-normalised embeddings, a similarity matrix, and
cross-entropy against the diagonal (one-hot via iota == label)."""
import jax
import jax.numpy as jnp


# solar: img=f32[256,512], txt=f32[256,512], w_img=f32[512,256], w_txt=f32[512,256]
def clip_loss(img, txt, w_img, w_txt):
    a = img @ w_img
    b = txt @ w_txt
    a = a / jnp.linalg.norm(a, axis=-1, keepdims=True)
    b = b / jnp.linalg.norm(b, axis=-1, keepdims=True)
    logits = a @ b.T * 14.3
    labels = jnp.arange(a.shape[0])
    onehot = jax.nn.one_hot(labels, a.shape[0])
    li = -jnp.sum(onehot * jax.nn.log_softmax(logits, axis=1), axis=1)
    lt = -jnp.sum(onehot * jax.nn.log_softmax(logits, axis=0), axis=0)
    return (li.mean() + lt.mean()) / 2
