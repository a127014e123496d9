"""The small models the planted bugs of ``benchmarks/mutants.py`` run on: each one uses the op
its mutants break, at a size that keeps the whole suite within minutes on two cores (except
where the bug needs size to hide: a sum over 4096, K = 1024, a 1024² convolution).

Each value is a source file; ``write_models`` puts them in a directory.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

_TORCH = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
_JAX = "import jax\nimport jax.numpy as jnp\nfrom jax import lax\n"


def _fn(pragma: str, body: str) -> str:
    return _TORCH + "\n\n" + f"# solar: {pragma}\n" + textwrap.dedent(body).strip() + "\n"


def _module(init: str, forward: str, inputs: str, init_args: str = "") -> str:
    return _TORCH + textwrap.dedent(f'''

        class Model(nn.Module):
            def __init__(self{", " + init_args if init_args else ""}):
                super().__init__()
                {init}

            def forward(self, *xs):
                {forward}


        def get_inputs():
            return {inputs}


        def get_init_inputs():
            return []
        ''')


def _jax(pragma: str, body: str) -> str:
    return _JAX + "\n\n" + f"# solar: {pragma}\n" + textwrap.dedent(body).strip() + "\n"


MODELS: dict[str, str] = {
    "linear_sq": _module("self.fc = nn.Linear(64, 64)", "return self.fc(xs[0])", "[torch.randn(32, 64)]"),
    "relu": _fn("x=f32[64,256]", "def relu(x):\n    return torch.relu(x)"),
    "sum_sq": _fn("x=f32[64,64]", "def rowsum(x):\n    return x.sum(dim=1)"),
    "sum_4096": _fn("x=f32[8,4096]", "def rowsum(x):\n    return x.sum(dim=1)"),
    "mean_sq": _fn("x=f32[32,32]", "def rowmean(x):\n    return x.mean(dim=1)"),
    "softmax_sq": _fn("x=f32[64,64]", "def sm(x):\n    return torch.softmax(x, dim=-1)"),
    "conv": _module("self.conv = nn.Conv2d(4, 8, 3, padding=1)", "return self.conv(xs[0])",
                    "[torch.randn(2, 4, 16, 16)]"),
    "conv_1024": _module("self.conv = nn.Conv2d(1, 1, 3, padding=1)", "return self.conv(xs[0])",
                         "[torch.randn(1, 1, 1024, 1024)]"),
    "matmul_bf16_1024": _fn("a=bf16[64,1024], b=bf16[1024,64]", "def mm(a, b):\n    return a @ b"),
    "gelu_bf16": _fn("x=bf16[64,256]", "def gelu(x):\n    return F.gelu(x)"),
    "gelu_f32": _fn("x=f32[64,256]", "def gelu(x):\n    return F.gelu(x)"),
    "sigmoid": _fn("x=f32[64,256]", "def sig(x):\n    return torch.sigmoid(x)"),
    "cumsum": _fn("x=f32[16,64]", "def csum(x):\n    return torch.cumsum(x, dim=1)"),
    "tril": _fn("x=f32[32,32]", "def lower(x):\n    return torch.tril(x)"),
    "sdpa_causal": _fn("q=f32[2,4,16,32], k=f32[2,4,16,32], v=f32[2,4,16,32]",
                       "def attn(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v, is_causal=True)"),
    "sdpa_vdim": _fn("q=f32[2,4,16,32], k=f32[2,4,16,32], v=f32[2,4,16,16]",
                     "def attn(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)"),
    "layernorm": _module("self.ln = nn.LayerNorm(64)", "return self.ln(xs[0])", "[torch.randn(32, 64)]"),
    "rmsnorm": _module("self.rn = nn.RMSNorm(64)", "return self.rn(xs[0])", "[torch.randn(32, 64)]"),
    "batchnorm": _module("self.bn = nn.BatchNorm2d(8)", "return self.bn(xs[0])", "[torch.randn(4, 8, 8, 8)]"),
    "groupnorm": _module("self.gn = nn.GroupNorm(4, 16)", "return self.gn(xs[0])",
                         "[torch.randn(2, 16, 8, 8)]"),
    # JAX
    "jax_conv": _jax("x=f32[2,4,16,16], w=f32[8,4,3,3]",
                     "def conv(x, w):\n    return lax.conv_general_dilated(x, w, (1, 1), 'SAME')"),
    "jax_softmax": _jax("x=f32[64,64]", "def sm(x):\n    return jax.nn.softmax(x, axis=-1)"),
    "jax_dot": _jax("x=f32[32,64], w=f32[64,48]", "def dot(x, w):\n    return x @ w"),
    "jax_sum_sq": _jax("x=f32[64,64]", "def rowsum(x):\n    return jnp.sum(x, axis=1)"),
    "jax_mean": _jax("x=f32[32,48]", "def rowmean(x):\n    return jnp.mean(x, axis=1)"),
    "jax_dot_bf16_1024": _jax("a=bf16[64,1024], b=bf16[1024,64]", "def mm(a, b):\n    return a @ b"),
    "jax_rnn_scan": _jax("x=f32[16,8,32], w=f32[32,32]", '''
        def rnn(x, w):
            def step(h, xt):
                h = jnp.tanh(h @ w + xt)
                return h, h
            h0 = jnp.zeros((x.shape[1], w.shape[1]))
            return lax.scan(step, h0, x)[1]
        '''),
}


def write_models(root: Path) -> dict[str, Path]:
    """Write every model under ``root``; returns name -> path."""
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, src in MODELS.items():
        p = root / f"{name}.py"
        p.write_text(src)
        out[name] = p
    return out
