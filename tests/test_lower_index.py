"""Scans, sorting/selection and indexing (plus losses, masks and casts): every corpus file is
analyzed and verified against torch; counts follow the formulas of docs/sol-model.md, written
out here by hand; a corrupted recurrence is caught; FlopCounterMode agrees where it counts."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest
import torch
from conftest import corpus_entry
from torch.utils.flop_counter import FlopCounterMode

from solar_lsp.frontend.torch import lower as torch_lower
from solar_lsp.frontend.torch.trace import build, load_module
from solar_lsp.ir import calls_index, execute
from solar_lsp.ir.core import Affine, Guard, Kernel, Load, TensorType, call
from solar_lsp.ir.validate import IRValidationError, recurrence_var, validate_kernel
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.source.discover import discover_file

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"
FAMILIES = ("scan", "sort", "select", "index", "scatter", "loss", "mask", "cast")
FILES = sorted(p.name for f in FAMILIES for p in CORPUS.glob(f"ops_{f}_*.py"))


report = corpus_entry


def ops_of(e, target: str) -> list:
    return [o for ln in e.lines for o in ln.ops if o.target == target]


def test_corpus_covers_every_family():
    assert len(FILES) >= 45
    for f in FAMILIES:
        assert any(n.startswith(f"ops_{f}_") for n in FILES), f


@pytest.mark.parametrize("name", FILES)
def test_corpus_file_verified(name):
    e = report(name)
    assert e.status == "ok", e.error
    assert e.unsupported == []
    assert e.verification["status"] == "verified", e.verification


@pytest.mark.parametrize("name", FILES)
def test_tensor_flops_equal_flop_counter(name):
    """FlopCounterMode counts matmul-like ops only; none of these families uses the matrix
    units, and the engine must not invent any either."""
    path = str(CORPUS / name)
    module = load_module(path)
    entry = discover_file(path)[0]
    model, inputs = build(module, entry, path, device="cpu")
    with FlopCounterMode(display=False) as fc, torch.no_grad():
        model(*inputs)
    assert report(name, verify=False).totals["tensor_flops"] == fc.get_total_flops()


# ---------------------------------------------------------------- scans


def test_cumsum_counts_n_minus_1_adds_per_line():
    e = report("ops_scan_cumsum.py", verify=False)
    b, n, h = 16, 512, 64
    assert e.totals["vector_flops"] == b * (n - 1) * h
    (op,) = ops_of(e, "aten.cumsum.default")
    assert op.bytes == 2 * b * n * h * 4  # one read, one write


def test_cummax_counts_max_and_index_compare():
    e = report("ops_scan_cummax.py", verify=False)
    b, n = 64, 2048
    (op,) = ops_of(e, "aten.cummax.default")
    assert op.vector_flops == 2 * b * (n - 1)  # the running max and the index's compare
    assert op.bytes == b * n * (4 + 4 + 8)  # x, values, int64 indices


def test_logcumsumexp_counts_stable_combine():
    e = report("ops_scan_logcumsumexp.py", verify=False)
    lines = 8 * 16
    n = 256
    # max(p, q) + log1p(exp(-|p - q|)): max, sub, exp, log1p, add (abs, neg are free)
    assert e.totals["vector_flops"] == lines * (n - 1) * 5
    assert e.totals["transcendentals"] == lines * (n - 1) * 2


def test_reverse_and_exclusive_scans_count_the_scan_once():
    e = report("ops_scan_cumsum_reverse.py", verify=False)
    assert e.totals["vector_flops"] == 64 * 1023  # the flips are copies
    e = report("ops_scan_cumsum_exclusive.py", verify=False)
    assert e.totals["vector_flops"] == (4095 + 4096) + (255 * 128 + 256 * 128)


def _cumsum_kernels(n: int = 6, b: int = 3) -> tuple[list[Kernel], dict[str, TensorType]]:
    tensors = {"x": TensorType((b, n), "float32"), "y": TensorType((b, n), "float32")}
    first = Kernel("c0", (("b", b),), Load("y", (Affine.var("b"), Affine.of(0))), "=",
                   Load("x", (Affine.var("b"), Affine.of(0))))
    nxt = (Affine.var("b"), Affine.var("i") + 1)
    scan = Kernel("c1", (("b", b), ("i", n - 1)), Load("y", nxt), "=",
                  call("add", Load("y", (Affine.var("b"), Affine.var("i"))), Load("x", nxt)))
    return [first, scan], tensors


def test_recurrence_executes_in_order():
    ks, tensors = _cumsum_kernels()
    for k in ks:
        validate_kernel(k, tensors)
    x = np.random.default_rng(0).standard_normal((3, 6))
    arrays = {"x": x, "y": np.zeros((3, 6))}
    for k in ks:
        execute.run_kernel(k, arrays)
    np.testing.assert_allclose(arrays["y"], np.cumsum(x, axis=1), rtol=1e-12)
    assert recurrence_var(ks[1]) == "i" and recurrence_var(ks[0]) is None


def test_validator_accepts_guarded_recurrence_and_rejects_other_self_reads():
    tensors = {"x": TensorType((8,), "float32"), "y": TensorType((8,), "float32"),
               "h": TensorType((5, 4), "float32"), "w": TensorType((4, 4), "float32")}
    i = Affine.var("i")
    guarded = Kernel("g", (("i", 8),), Load("y", (i,)), "=",
                     call("add", Load("y", (i + -1,)), Load("x", (i,))),
                     guards=(Guard(i + -1, 0, None),))
    validate_kernel(guarded, tensors)
    assert recurrence_var(guarded) == "i"
    # an RNN-style reduction over the previous step is a recurrence along t
    t, j, k = Affine.var("t"), Affine.var("j"), Affine.var("k")
    rnn = Kernel("r", (("t", 4), ("j", 4), ("k", 4)), Load("h", (t + 1, j)), "+=",
                 call("mul", Load("w", (j, k)), Load("h", (t, k))), init="keep")
    validate_kernel(rnn, tensors)
    assert recurrence_var(rnn) == "t"
    later = Kernel("bad", (("i", 7),), Load("y", (i,)), "=",
                   call("add", Load("y", (i + 1,)), Load("x", (i,))))
    with pytest.raises(IRValidationError, match="not written strictly earlier"):
        validate_kernel(later, tensors)
    # reading across the inner loop while the outer one is not held fixed is not a recurrence
    inner = Kernel("inner", (("j", 4), ("t", 4)), Load("h", (t + 1, j)), "=",
                   call("add", Load("h", (t, j)), 1.0))
    validate_kernel(inner, tensors)  # j, the outer loop, is held fixed; t carries: accepted
    crossed = Kernel("bad3", (("j", 3), ("t", 4)), Load("h", (t + 1, j)), "=",
                     call("add", Load("h", (t, j + 1)), 1.0))
    with pytest.raises(IRValidationError, match="not written strictly earlier"):
        validate_kernel(crossed, tensors)


def test_corrupted_recurrence_is_a_mismatch(monkeypatch):
    """A scan that combines with the wrong element must fail verification, even though each
    kernel alone is well-formed: the recurrence is executed in full, not sampled."""
    good = torch_lower.LOWERINGS["aten.cumsum.default"]

    def corrupted(c, a, kw):
        good(c, a, kw)
        k = c.kernels[-1]
        prev, cur = k.expr.args
        # x[b, i] instead of x[b, i + 1]: an off-by-one in the scanned dim
        wrong = Load(cur.tensor, tuple(ix + (-1) if d == 1 else ix
                                       for d, ix in enumerate(cur.index)))
        c.kernels[-1] = Kernel(k.name, k.loops, k.out, k.op, call("add", prev, wrong))

    monkeypatch.setitem(torch_lower.LOWERINGS, "aten.cumsum.default", corrupted)
    r = analyze_file(str(CORPUS / "ops_scan_cumsum.py"), Config())
    v = r.entries[0].verification
    assert v["status"] == "mismatch", v
    assert v["issues"][0]["op"] == "cumsum"


# ---------------------------------------------------------------- sorting and selection


def _log2_ceil(n: int) -> int:
    """ceil(log2(n)) for a positive integer, exactly."""
    return (n - 1).bit_length()


def test_sort_counts_log2_of_n_factorial_per_line():
    e = report("ops_sort_sort.py", verify=False)
    (op,) = ops_of(e, "aten.sort.stable")
    assert op.vector_flops == 2048 * _log2_ceil(math.factorial(64))
    assert op.bytes == 2048 * 64 * (4 + 4 + 8)  # read once; values and int64 indices written


def test_topk_counts_at_least_n_minus_1_per_row():
    e = report("ops_sort_topk.py", verify=False)
    (op,) = ops_of(e, "aten.topk.default")
    n, k = 32000, 50
    assert op.vector_flops == 16 * max(n - 1, _log2_ceil(math.perm(n, k)))
    assert op.bytes == 16 * n * 4 + 16 * k * (4 + 8)
    e = report("ops_sort_topk_smallest_unsorted.py", verify=False)
    (op,) = ops_of(e, "aten.topk.default")
    assert op.vector_flops == 256 * max(1023, _log2_ceil(math.comb(1024, 16)))


def test_argmax_and_max_dim_count_comparisons():
    e = report("ops_select_argmax.py", verify=False)
    assert e.totals["vector_flops"] == 64 * (32000 - 1)
    e = report("ops_select_argmax_flat.py", verify=False)
    assert e.totals["vector_flops"] == (8 * 64 * 64 - 1) + 8 * 64 * 63
    e = report("ops_select_max_dim.py", verify=False)
    assert e.totals["vector_flops"] == 32 * 128 * 255 + 32 * 256 * 127
    # values only: an affine max reduction (one combine per element, as amax counts)
    e = report("ops_select_max_values.py", verify=False)
    assert e.totals["vector_flops"] == 3 * 32 * 512 * 256
    assert all("max=" in o.einsum for o in ops_of(e, "aten.max.dim"))


def test_kthvalue_median_mode_count_n_minus_1():
    assert report("ops_select_kthvalue.py", verify=False).totals["vector_flops"] == 512 * 99
    assert report("ops_select_mode.py", verify=False).totals["vector_flops"] == 1024 * 32
    e = report("ops_select_median.py", verify=False)
    assert e.totals["vector_flops"] == 256 * 254 + (256 * 255 - 1) + 255 * 255


def test_unspecified_tie_order_is_canonical_but_wrong_indices_fail():
    x = torch.tensor([[3.0, 1.0, 3.0, 2.0, 1.0, 1.0, 3.0]])
    xs = [x.double().numpy()]
    call_ = ("sort", 1, True, False)
    v, i = torch.sort(x, 1, descending=True)
    ours = calls_index.apply(call_, xs)
    ref = (v.double().numpy(), i.double().numpy())
    a, b = calls_index.canonical(call_, ours, xs), calls_index.canonical(call_, ref, xs)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    wrong = (ref[0], ref[1][:, [1, 0, 2, 3, 4, 5, 6]])  # swaps a 3 with a 3: still correct
    assert np.array_equal(calls_index.canonical(call_, wrong, xs)[1], b[1])
    wrong = (ref[0], ref[1][:, [0, 1, 2, 4, 3, 5, 6]])  # swaps the 2 with a 1: wrong
    assert not np.array_equal(calls_index.canonical(call_, wrong, xs)[1], b[1])
    wrong = (ref[0], ref[1][:, [0, 0, 2, 3, 4, 5, 6]])  # one 3 twice: not a permutation
    assert not np.array_equal(calls_index.canonical(call_, wrong, xs)[1], b[1])
    # topk(sorted=False): any order of the right set passes, a wrong member does not
    call_ = ("topk", 3, 1, True, False)
    v, i = torch.topk(x, 3, 1, sorted=False)
    ref = calls_index.canonical(call_, (v.double().numpy(), i.double().numpy()), xs)
    ours = calls_index.canonical(call_, calls_index.apply(call_, xs), xs)
    assert all(np.array_equal(p, q) for p, q in zip(ours, ref))
    bad = calls_index.canonical(call_, (np.array([[3.0, 3.0, 2.0]]), np.array([[0.0, 2.0, 3.0]])), xs)
    assert not np.array_equal(bad[0], ref[0])


# ---------------------------------------------------------------- indexing


def test_advanced_index_reads_only_gathered_rows():
    e = report("ops_index_rows.py", verify=False)
    a, b = ops_of(e, "aten.index.Tensor")
    assert a.bytes == 16 * 64 * 128 * 4 + 16 * 64 * 8 + 16 * 64 * 128 * 4
    assert b.bytes == 8 * 64 * 256 * 4 + 64 * 8 + 8 * 64 * 256 * 4
    assert e.totals["vector_flops"] == 0


def test_accumulating_index_put_and_scatter_count_one_combine_per_element():
    e = report("ops_index_put_accumulate.py", verify=False)
    assert e.totals["vector_flops"] == 4096 * 64 + 8192
    assert report("ops_index_put.py", verify=False).totals["vector_flops"] == 0
    assert report("ops_scatter_add.py", verify=False).totals["vector_flops"] == 64 * 500 * 16
    assert report("ops_scatter_reduce.py", verify=False).totals["vector_flops"] == 2 * 4096 * 32
    e = report("ops_index_add.py", verify=False)
    assert e.totals["vector_flops"] == 2 * 8000 * 64  # alpha * src, then the accumulation


def test_masked_assignment_is_a_static_index_put(tmp_path):
    e = report("ops_index_put_mask.py", verify=False)
    assert e.totals["vector_flops"] == 2 * 128 * 4096  # the two compares; the puts count none
    a, b = ops_of(e, "aten.index_put.default")
    x = 128 * 4096
    assert a.bytes == x * 4 + x + 4 + x * 4  # self, mask, the one value, out
    p = tmp_path / "mask_values.py"
    p.write_text(
        "import torch\nimport torch.nn as nn\n\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x, v):\n"
        "        y = x.clone()\n"
        "        y[x > 0] = v\n"
        "        return y\n\n\n"
        "def get_inputs():\n    return [torch.ones(4, 8), torch.randn(32)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    e = analyze_file(str(p), Config()).entries[0]
    (u,) = e.unsupported
    assert u["op"] == "aten.index_put.default" and u["line"] == 8
    assert "number of True elements" in u["reason"]


def test_embedding_bag_counts_and_reads_the_bagged_rows():
    e = report("ops_index_embedding_bag_sum.py", verify=False)
    (op,) = ops_of(e, "aten._embedding_bag.default")
    assert op.vector_flops == 2 * 4096 * 64  # weight multiply and accumulate per element
    # unfused: the bagged rows, ids, offsets, weights; the bags plus torch's offset2bag and
    # bag_size bookkeeping written
    assert op.bytes == 4096 * 64 * 4 + 4096 * (8 + 4) + 256 * 8 + 256 * 64 * 4 + 4096 * 8 + 256 * 8
    assert e.totals["bytes_fused"] == 4096 * 64 * 4 + 4096 * (8 + 4) + 256 * 8 + 256 * 64 * 4
    e = report("ops_index_embedding_bag_max.py", verify=False)
    assert e.totals["vector_flops"] == 2048 * 64
    e = report("ops_index_embedding_bag_mean.py", verify=False)
    # 256 bags of 20 ids: accumulate, then a divide per output; the offsets arange: 2 per bag
    assert e.totals["vector_flops"] == 256 * 20 * 128 + 256 * 128 + 2 * 256


def test_diagonal_view_costs_only_the_diagonal():
    e = report("ops_index_diagonal.py", verify=False)
    (red,) = ops_of(e, "aten.sum.dim_IntList")
    assert red.bytes == 16 * 512 * 4 + 16 * 4
    assert all(o.bytes == 0 for o in ops_of(e, "aten.diagonal.default"))


def test_masked_scatter_source_read_is_data_dependent():
    e = report("ops_index_masked_scatter.py", verify=False)
    (op,) = ops_of(e, "aten.masked_scatter.default")
    x = 4 * 256 * 512 * 4
    assert op.bytes == x + 4 * 256 + x  # self and mask read, out written; source counted 0


def test_casts_bytes_follow_dtype():
    e = report("ops_cast_fp16.py", verify=False)
    copies = ops_of(e, "aten._to_copy.default")
    assert sorted(o.bytes for o in copies) == [1024 * 1024 * (4 + 2)] * 2
    e = report("ops_cast_fp8.py", verify=False)
    assert sorted(o.bytes for o in ops_of(e, "aten._to_copy.default")) == [
        1024 * 1024 * (1 + 4), 1024 * 1024 * (4 + 1)]


def test_data_dependent_shapes_are_unsupported_with_reason(tmp_path):
    p = tmp_path / "dd.py"
    p.write_text(
        "import torch\nimport torch.nn as nn\n\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        nz = torch.nonzero(x > 0)\n"
        "        pos = x[x > 0]\n"
        "        return nz, pos, x * 2\n\n\n"
        "def get_inputs():\n    return [torch.randn(16, 32)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    e = analyze_file(str(p), Config()).entries[0]
    assert e.status == "ok"
    by_op = {u["op"]: u for u in e.unsupported}
    assert by_op["aten.nonzero.default"]["line"] == 7
    assert "decides the output shape" in by_op["aten.nonzero.default"]["reason"]
    assert by_op["aten.index.Tensor"]["line"] == 8
    assert "boolean-mask" in by_op["aten.index.Tensor"]["reason"]
    assert e.verification["status"] == "unverified"
    assert e.totals["vector_flops"] >= 16 * 32  # the rest is still counted
