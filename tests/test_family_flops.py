"""Vector FLOPs of the loss, mask and norm families against hand formulas.

Counting conventions (docs/sol-model.md): every scalar call is one op per element except the
free ones (where, neg, abs and casts: select or sign-bit operand modifiers on a GPU); a
reduction is one op per element it reads; ``pow(x, 2)`` is one multiply; a transcendental is
one vector op plus its special-function cost."""

from __future__ import annotations

import pathlib

from conftest import analyzed, only_entry

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"


def totals(name: str) -> dict:
    return only_entry(analyzed(str(CORPUS / name))).totals


def test_mse_mean():
    n = 256 * 1024
    t = totals("ops_loss_mse.py")
    # (p - y), its square, the sum, one divide by n
    assert t["vector_flops"] == 3 * n + 1
    assert t["transcendentals"] == 0


def test_l1_sum_and_none():
    n = 128 * 2048
    # sum: p - y, |.| (free), the sum; none: p - y, |.| (free)
    assert totals("ops_loss_l1.py")["vector_flops"] == 2 * n + n


def test_where_and_masked_fill():
    n, mask = 8 * 128 * 128, 8 * 128
    # where(pad, s, o): a select (free); where(s > 0, s, 0): one compare; masked_fill(~pad, -inf):
    # ~pad on the [8,128] mask before it broadcasts; masked_fill(s < -1, fill): one compare
    assert totals("ops_mask_where.py")["vector_flops"] == 2 * n + mask


def test_clamp_variants():
    n = 64 * 1024
    # clamp(-1, 1): max + min; min only; max only; tensor lo and hi: max + min; tensor min;
    # tensor max; hardtanh: max + min
    assert totals("ops_mask_clamp.py")["vector_flops"] == (2 + 1 + 1 + 2 + 1 + 1 + 2) * n


def test_instance_norm():
    n, c, hw = 2, 64, 64 * 64
    el, stats = n * c * hw, n * c
    t = totals("ops_norm_instance.py")
    # per element: sum (1), sum of squares (2), (x - mean) * rstd (2); per (sample, channel):
    # mean (1) and rstd (mul, mul, sub, add, rsqrt: 5)
    assert t["vector_flops"] == 5 * el + 6 * stats
    assert t["transcendentals"] == stats  # one rsqrt per statistic
