"""Contraction reordering (reorder.py): chains written in a bad order get the best order, with
FLOPs counted by hand here, and the rewritten expression computes the same values."""

from __future__ import annotations

import pytest
import torch
from conftest import line_of, write

from solar_lsp.pipeline.analyze import Config, analyze_file

SOURCE = """
import torch


# solar: a=f32[512,16], b=f32[16,512], c=f32[512,4]
def chain(a, b, c):
    return a @ b @ c


# solar: a=f32[512,16], b=f32[16,512], c=f32[512,4]
def chain_good(a, b, c):
    return a @ (b @ c)


# solar: q=f32[128,8,64], c=f32[1024,32], wuk=f32[32,8,64]
def mla(q, c, wuk):
    k = torch.einsum("tr,rhd->thd", c, wuk)
    return torch.einsum("shd,thd->hst", q, k)


# solar: x=f32[64,1024], wa=f32[16,1024], wb=f32[1024,16]
def lowrank(x, wa, wb):
    return (x @ wa.t()) @ wb.t()


# solar: a=f32[8,64], b=f32[64,64], c=f32[64,2]
def chain_scaled(a, b, c):
    return (a @ b) * 2.0 @ c
"""


@pytest.fixture(scope="module")
def entries(tmp_path_factory):
    path = write(tmp_path_factory.mktemp("reorder"), "chains.py", SOURCE)
    r = analyze_file(path, Config(verify=False))
    assert r.error is None
    return path, {e.name: e for e in r.entries}


def _run(expr: str, **tensors) -> torch.Tensor:
    return eval(expr, {"torch": torch}, tensors)  # noqa: S307 - the tool's own output


def test_matmul_chain_written_badly(entries):
    path, es = entries
    [r] = es["chain"].reorder
    m, k, n, q = 512, 16, 512, 4
    assert r["flops_before"] == 2 * m * k * n + 2 * m * n * q  # (a @ b) @ c as written
    assert r["flops_after"] == 2 * k * n * q + 2 * m * k * q  # a @ (b @ c)
    assert r["line"] == line_of(path, "return a @ b @ c")
    assert sorted(r["operands"]) == ["a", "b", "c"]
    t = {n_: torch.randn(*s, dtype=torch.float64) for n_, s in
         (("a", (m, k)), ("b", (k, n)), ("c", (n, q)))}
    torch.testing.assert_close(_run(r["expression"], **t), t["a"] @ t["b"] @ t["c"])


def test_good_order_and_non_chains_are_left_alone(entries):
    _, es = entries
    assert es["chain_good"].reorder == []
    assert es["lowrank"].reorder == []  # (x Waᵀ) Wbᵀ is already the cheap order
    assert es["chain_scaled"].reorder == []  # the scale between the matmuls breaks the chain


def test_mla_style_absorbed_projection(entries):
    path, es = entries
    [r] = es["mla"].reorder
    s, h, d, t, rank = 128, 8, 64, 1024, 32
    written = 2 * t * rank * h * d + 2 * s * h * d * t  # k = c·Wuk, then q·kᵀ
    absorbed = 2 * s * h * d * rank + 2 * s * h * rank * t  # q·Wukᵀ first, then with c
    assert r["flops_before"] == written
    assert r["flops_after"] == absorbed
    assert r["lines"] == [line_of(path, 'k = torch.einsum("tr,rhd->thd"'),
                          line_of(path, 'return torch.einsum("shd,thd->hst"')]
    tensors = {"q": torch.randn(s, h, d, dtype=torch.float64),
               "c": torch.randn(t, rank, dtype=torch.float64),
               "wuk": torch.randn(rank, h, d, dtype=torch.float64)}
    want = torch.einsum("shd,thd->hst", tensors["q"], torch.einsum("tr,rhd->thd", tensors["c"], tensors["wuk"]))
    torch.testing.assert_close(_run(r["expression"], **tensors), want)


def test_reorder_in_json_and_table(cli, entries):
    path, _ = entries
    r = cli("analyze", path, "--entry", "chain", "--no-verify", "--json")
    [item] = r.json()["entries"][0]["reorder"]
    assert {"line", "flops_before", "flops_after", "expression"} <= item.keys()
    r = cli("analyze", path, "--entry", "chain", "--no-verify")
    assert "reorder line" in r.out and "torch.einsum" in r.out


def test_jax_chain_is_rewritten_with_jnp_einsum(tmp_path):
    """A JAX file gets a jnp.einsum rewrite (it has no torch import to paste torch code into)."""
    path = write(tmp_path, "chain_jax.py", """
        import jax.numpy as jnp

        # solar: a=f32[512,8], b=f32[8,512], c=f32[512,512]
        def chain(a, b, c):
            return a @ b @ c
    """)
    e = analyze_file(path, Config(hw=["h100-sxm"], verify=False)).entries[0]
    assert e.status == "ok" and e.frontend == "jax", e.error
    [r] = e.reorder
    assert r["expression"].startswith("jnp.einsum(") and "torch" not in r["expression"]
    assert r["flops_after"] < r["flops_before"]
