"""Large float32 golden inputs reach the kernels as they are (issue 17, peak RSS): a kernel
converts each value it loads to float64, so its results are bit for bit those of a float64
copy, and checking an op no longer doubles a large weight in memory (VGG16's first classifier
weight: 411 MB as float32, 822 MB more as a float64 copy)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import short_reduction, traced_file, write

from solar_lsp.ir import execute as ex
from solar_lsp.ir.core import Affine, Kernel, Load, call
from solar_lsp.verify import core

V = Affine.var
MB = 2**20


@pytest.fixture(autouse=True)
def _numba(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "numba-cache"))
    monkeypatch.setattr(ex, "EXECUTOR", "numba")


def _matmul(n: int, m: int, kk: int) -> Kernel:
    return Kernel("mm", (("i", n), ("j", m), ("k", kk)), Load("C", (V("i"), V("j"))), "+=",
                  call("mul", Load("A", (V("i"), V("k"))), Load("B", (V("k"), V("j")))), unit="matrix")


def test_float32_inputs_give_the_float64_copies_results_bit_for_bit():
    # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 is exact in float64 and not in float32: a kernel that
    # multiplied the float32 values as they are would round every product
    r = np.random.default_rng(0)
    a = (1 + 2.0**-12 + r.integers(0, 64, (6, 9)) * 2.0**-20).astype(np.float32)
    b = (1 + 2.0**-12 + r.integers(0, 64, (9, 5)) * 2.0**-20).astype(np.float32)
    k = _matmul(6, 5, 9)
    native = {"A": a, "B": b, "C": np.zeros((6, 5))}
    copied = {"A": a.astype(np.float64), "B": b.astype(np.float64), "C": np.zeros((6, 5))}
    ex.run_kernel(k, native)
    ex.run_kernel(k, copied)
    assert np.array_equal(native["C"], copied["C"])
    assert not np.array_equal(native["C"], (a @ b).astype(np.float64))  # float32 arithmetic differs
    errs_n: dict = {}
    errs_c: dict = {}
    ex.run_kernel_err(k, native, errs_n, 2.0**-24)
    ex.run_kernel_err(k, copied, errs_c, 2.0**-24)
    assert np.array_equal(errs_n["C"], errs_c["C"])
    pts = ex.random_points(k, 10, np.random.default_rng(1))
    for x, y in zip(ex.sample_kernel_err(k, native, {}, pts, 2.0**-24),
                    ex.sample_kernel_err(k, copied, {}, pts, 2.0**-24)):
        assert np.array_equal(x, y)


def test_the_generated_kernel_converts_each_float32_load():
    from solar_lsp.ir.codegen import kernel_plan

    k = _matmul(2, 2, 2)
    plain = kernel_plan(k, False)
    native = kernel_plan(k, False, frozenset(), frozenset({"B"}))
    assert "np.float64(A" not in plain.source
    assert native.native == ("B",)
    i = native.tensors.index("B")
    assert f"np.float64(A{i}[" in native.source and f"np.float64(A{1 - i}[" not in native.source


def test_only_large_float32_inputs_skip_the_copy():
    big = torch.rand(core.NATIVE_ELEMENTS)
    small = torch.rand(16)
    got = core.kernel_input(big)
    assert got.dtype == np.float32 and np.shares_memory(got, big.numpy())
    assert core.kernel_input(small).dtype == np.float64
    assert core.kernel_input(big.double()).dtype == np.float64
    # a transposed view is made contiguous, still float32 (half the copy)
    t = core.kernel_input(torch.rand(4, core.NATIVE_ELEMENTS // 4).t())
    assert t.dtype == np.float32 and t.flags.c_contiguous


LINEAR = """
    import torch


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4096, 1280)  # 5.2 M weights: over NATIVE_ELEMENTS

        def forward(self, x):
            return self.fc(x)


    def get_inputs():
        return [torch.rand(4, 4096)]


    def get_init_inputs():
        return []
    """


def _lowered(path: str):
    traced, lowered, module, _ = traced_file(path)
    return traced, lowered, module


def test_the_peak_estimate_counts_no_copy_of_a_large_weight(tmp_path, monkeypatch):
    from solar_lsp.verify import stream

    _, lowered, _ = _lowered(str(write(tmp_path, "linear.py", LINEAR)))
    p = lowered.program
    with_native = stream.peak_bytes(p)
    monkeypatch.setattr(stream, "native_input", lambda dtype, numel: False)
    assert stream.peak_bytes(p) - with_native == 4096 * 1280 * 8  # the float64 copy


def test_a_large_weight_is_read_as_is_and_a_wrong_matmul_still_caught(tmp_path, monkeypatch):
    from solar_lsp.verify import check_torch

    traced, lowered, module = _lowered(str(write(tmp_path, "linear.py", LINEAR)))
    seen: list[tuple] = []
    real = ex._native

    def native(a):
        if real(a):
            seen.append(a.shape)
        return real(a)

    monkeypatch.setattr(ex, "_native", native)
    good = check_torch.verify(traced, lowered, module)
    assert good.status == "verified", good.detail
    assert (1280, 4096) in seen  # the weight, as torch holds it
    short_reduction(lowered.program)  # one term short in every dot product: caught on float32 values
    bad = check_torch.verify(traced, lowered, module)
    assert bad.status == "mismatch", bad.detail
