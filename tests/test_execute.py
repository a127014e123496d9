"""Executing IR kernels with numba (solar_lsp.ir.execute)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch

from solar_lsp.ir import execute as ex
from solar_lsp.ir import written
from solar_lsp.ir.core import (
    SCALAR_FUNCS,
    Affine,
    Call,
    Const,
    Guard,
    Index,
    Kernel,
    Load,
    Op,
    Program,
    TensorType,
    call,
)

V = Affine.var


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    # one cache directory for the whole session (compiled code is shared between tests)
    d = tmp_path_factory.getbasetemp() / "numba-cache"
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(d))
    # these tests are of the numba executor: no interpreted first tier (test_tiering below)
    monkeypatch.setattr(ex, "EXECUTOR", "numba")
    yield


def _rng(seed=0):
    return np.random.default_rng(seed)


def matmul(n, m, kk, out="C", init="identity"):
    return Kernel(
        "mm",
        (("i", n), ("j", m), ("k", kk)),
        Load(out, (V("i"), V("j"))),
        "+=",
        call("mul", Load("A", (V("i"), V("k"))), Load("B", (V("k"), V("j")))),
        init=init,
        unit="matrix",
    )


def conv2d(N, C, H, W, K, R, S, stride, pad, dil):
    OH = (H + 2 * pad - dil * (R - 1) - 1) // stride + 1
    OW = (W + 2 * pad - dil * (S - 1) - 1) // stride + 1
    ih = V("oh", stride) + V("r", dil) + (-pad)
    iw = V("ow", stride) + V("s", dil) + (-pad)
    k = Kernel(
        "conv",
        (("n", N), ("k", K), ("oh", OH), ("ow", OW), ("c", C), ("r", R), ("s", S)),
        Load("y", (V("n"), V("k"), V("oh"), V("ow"))),
        "+=",
        call("mul", Load("x", (V("n"), V("c"), ih, iw)), Load("w", (V("k"), V("c"), V("r"), V("s")))),
        guards=(Guard(ih, 0, H), Guard(iw, 0, W)),
        unit="matrix",
    )
    return k, (N, K, OH, OW)


def check_samples(k, arrays, before=None, n=50, seed=1):
    """sample_kernel on the pre-kernel arrays agrees with run_kernel's full result."""
    pre = {name: a.copy() for name, a in (before or arrays).items()}
    full = {name: a.copy() for name, a in pre.items()}
    ex.run_kernel(k, full)
    pts = ex.random_points(k, n, _rng(seed))
    vals, mags = ex.sample_kernel(k, pre, pts)
    pos = ex.out_positions(k, pts)
    ref = full[k.out.tensor][tuple(pos.T)] if pos.shape[1] else full[k.out.tensor].reshape(-1)[:1]
    assert np.all(np.isfinite(mags) | np.isinf(ref))
    np.testing.assert_allclose(vals, ref, rtol=1e-12, atol=1e-12 * (1 + mags.max(initial=0)))


# ---------------------------------------------------------------- kernels vs numpy / torch


def test_matmul():
    r = _rng()
    k = matmul(7, 5, 9)
    arrays = {"A": r.standard_normal((7, 9)), "B": r.standard_normal((9, 5)), "C": np.full((7, 5), 99.0)}
    ex.run_kernel(k, arrays)
    np.testing.assert_allclose(arrays["C"], arrays["A"] @ arrays["B"], rtol=1e-12, atol=1e-12)
    check_samples(k, arrays)


@pytest.mark.parametrize("stride,pad,dil", [(2, 1, 1), (1, 2, 2), (2, 1, 2)])
def test_conv2d(stride, pad, dil):
    r = _rng()
    N, C, H, W, K, R, S = 2, 3, 9, 8, 4, 3, 3
    k, oshape = conv2d(N, C, H, W, K, R, S, stride, pad, dil)
    arrays = {"x": r.standard_normal((N, C, H, W)), "w": r.standard_normal((K, C, R, S)),
              "y": np.zeros(oshape)}
    ex.run_kernel(k, arrays)
    ref = torch.nn.functional.conv2d(torch.from_numpy(arrays["x"]), torch.from_numpy(arrays["w"]),
                                     stride=stride, padding=pad, dilation=dil).numpy()
    np.testing.assert_allclose(arrays["y"], ref, rtol=1e-12, atol=1e-12)
    check_samples(k, arrays)


def test_maxpool():
    r = _rng()
    N, C, H, W = 2, 3, 7, 6
    OH, OW = (H + 2 - 3) // 2 + 1, (W + 2 - 3) // 2 + 1
    ih, iw = V("oh", 2) + V("r") + (-1), V("ow", 2) + V("s") + (-1)
    k = Kernel(
        "pool",
        (("n", N), ("c", C), ("oh", OH), ("ow", OW), ("r", 3), ("s", 3)),
        Load("y", (V("n"), V("c"), V("oh"), V("ow"))),
        "max=",
        Load("x", (V("n"), V("c"), ih, iw)),
        guards=(Guard(ih, 0, H), Guard(iw, 0, W)),
    )
    arrays = {"x": r.standard_normal((N, C, H, W)), "y": np.zeros((N, C, OH, OW))}
    ex.run_kernel(k, arrays)
    ref = torch.nn.functional.max_pool2d(torch.from_numpy(arrays["x"]), 3, 2, 1).numpy()
    np.testing.assert_array_equal(arrays["y"], ref)
    check_samples(k, arrays)


def softmax_kernels(R, C):
    i, j = V("i"), V("j")
    return [
        Kernel("max", (("i", R), ("j", C)), Load("m", (i,)), "max=", Load("x", (i, j))),
        Kernel("exp", (("i", R), ("j", C)), Load("e", (i, j)), "=",
               call("exp", call("sub", Load("x", (i, j)), Load("m", (i,))))),
        Kernel("sum", (("i", R), ("j", C)), Load("s", (i,)), "+=", Load("e", (i, j))),
        Kernel("div", (("i", R), ("j", C)), Load("y", (i, j)), "=",
               call("div", Load("e", (i, j)), Load("s", (i,)))),
    ]


def test_softmax():
    r = _rng()
    R, C = 6, 11
    x = r.standard_normal((R, C)) * 10
    arrays = {"x": x, "m": np.zeros(R), "e": np.zeros((R, C)), "s": np.zeros(R), "y": np.zeros((R, C))}
    for k in softmax_kernels(R, C):
        before = {n: a.copy() for n, a in arrays.items()}
        ex.run_kernel(k, arrays)
        check_samples(k, before)
    ref = torch.softmax(torch.from_numpy(x), dim=1).numpy()
    np.testing.assert_allclose(arrays["y"], ref, rtol=1e-12, atol=1e-15)


def test_keep_accumulation():
    r = _rng()
    M, N, K = 5, 4, 3
    bias = Kernel("bias", (("i", M), ("j", N)), Load("C", (V("i"), V("j"))), "=", Load("b", (V("j"),)))
    mm = matmul(M, N, K, init="keep")
    arrays = {"A": r.standard_normal((M, K)), "B": r.standard_normal((K, N)), "b": r.standard_normal(N),
              "C": np.zeros((M, N))}
    ex.run_kernel(bias, arrays)
    before = {n: a.copy() for n, a in arrays.items()}
    ex.run_kernel(mm, arrays)
    np.testing.assert_allclose(arrays["C"], arrays["A"] @ arrays["B"] + arrays["b"], rtol=1e-12, atol=1e-12)
    check_samples(mm, before)


def test_tril_mask_where_index():
    r = _rng()
    n = 6
    i, j = V("i"), V("j")
    k = Kernel(
        "tril", (("i", n), ("j", n)), Load("y", (i, j)), "=",
        call("where", call("ge", Index(i), Index(j)), Load("x", (i, j)), Const(float("-inf"))),
    )
    x = r.standard_normal((n, n))
    arrays = {"x": x, "y": np.zeros((n, n))}
    ex.run_kernel(k, arrays)
    ref = np.where(np.tril(np.ones((n, n))) > 0, x, -np.inf)
    np.testing.assert_array_equal(arrays["y"], ref)
    # the same mask through a guard instead (j <= i, i.e. 0 <= i - j)
    kg = Kernel("tril_g", (("i", n), ("j", n)), Load("y", (i, j)), "=", Load("x", (i, j)),
                guards=(Guard(i + j * -1, 0, None),))
    arrays = {"x": x, "y": np.full((n, n), 7.0)}
    ex.run_kernel(kg, arrays)
    np.testing.assert_array_equal(arrays["y"], np.where(np.tril(np.ones((n, n))) > 0, x, 7.0))
    check_samples(kg, {"x": x, "y": np.full((n, n), 7.0)})


def test_casts():
    x = np.array([0.0, 1.7, -1.7, 127.9, 128.5, 200.2, -129.9, 255.5, 256.0, -3.0, 3e9, -0.5])
    n = len(x)

    def run(fn):
        k = Kernel(fn, (("i", n),), Load("y", (V("i"),)), "=", call(fn, Load("x", (V("i"),))))
        arrays = {"x": x, "y": np.zeros(n)}
        ex.run_kernel(k, arrays)
        return arrays["y"]

    t = np.trunc(x).astype(np.int64)
    np.testing.assert_array_equal(run("cast_i8"), t.astype(np.int8))
    np.testing.assert_array_equal(run("cast_u8"), t.astype(np.uint8))
    np.testing.assert_array_equal(run("cast_i32"), t.astype(np.int32))
    np.testing.assert_array_equal(run("cast_i64"), t)
    np.testing.assert_array_equal(run("trunc"), np.trunc(x))
    np.testing.assert_array_equal(run("cast_bool"), (x != 0).astype(float))
    np.testing.assert_array_equal(run("cast_f16"), x)  # float casts are identity (float64)


# numpy reference for every scalar function
_REF = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "neg": np.negative,
    "abs": np.abs, "max": np.maximum, "min": np.minimum, "floor": np.floor, "ceil": np.ceil,
    "round": np.rint, "trunc": np.trunc, "sign": np.sign, "fmod": np.fmod,
    "remainder": np.remainder, "floordiv": lambda a, b: np.floor(a / b),
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a),
    "reciprocal": lambda a: 1 / a, "tanh": np.tanh,
    "erf": np.vectorize(math.erf, otypes=[float]),
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "pow": np.power,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "atan": np.arctan,
    "asin": np.arcsin, "acos": np.arccos, "atan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "where": lambda c, a, b: np.where(c != 0, a, b),
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "and": lambda a, b: (a != 0) & (b != 0), "or": lambda a, b: (a != 0) | (b != 0),
    "not": lambda a: a == 0, "xor": lambda a, b: (a != 0) ^ (b != 0),
    "isnan": np.isnan, "isinf": np.isinf,
}


def _scalar_inputs():
    a = np.array([0.0, -0.0, 1.5, -2.5, 2.5, 0.5, -7.25, 3.0, np.inf, -np.inf, np.nan, 1e-3, 40.0, -1.0])
    b = np.array([2.0, 0.0, -1.5, 3.0, 2.5, 0.0, 2.0, -2.0, 1.0, np.nan, 1.0, 0.5, -3.0, 0.0])
    c = np.array([1.0, 0.0, 0.0, 2.0, np.nan, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, -1.0, 0.0, 1.0])
    return a, b, c


_BITS = {
    "band": lambda a, b: np.bitwise_and(a.astype(np.int64), b.astype(np.int64)),
    "bor": lambda a, b: np.bitwise_or(a.astype(np.int64), b.astype(np.int64)),
    "bxor": lambda a, b: np.bitwise_xor(a.astype(np.int64), b.astype(np.int64)),
    "bnot": lambda a: np.invert(a.astype(np.int64)),
    "shl": lambda a, b: np.left_shift(a.astype(np.int64), b.astype(np.int64)),
    "shr": lambda a, b: np.right_shift(a.astype(np.int64), b.astype(np.int64)),
}


@pytest.mark.parametrize("interp", [False, True], ids=["numba", "python"])
def test_all_scalar_functions(interp, monkeypatch):
    monkeypatch.setattr(ex, "FORCE_INTERPRETER", interp)
    a, b, c = _scalar_inputs()
    n = len(a)
    i = V("i")
    for fn, (arity, _) in SCALAR_FUNCS.items():
        if fn.startswith("cast_"):
            continue
        ins = {"where": (c, a, b)}.get(fn, (a, b, c)[:arity])
        if fn in _BITS:  # integer functions: integer-valued inputs (shifts by 0..4)
            ins = (np.arange(n, dtype=float) - n // 2, np.arange(n, dtype=float) % 5)[:arity]
        args = tuple(Load(f"x{q}", (i,)) for q in range(arity))
        k = Kernel(fn, (("i", n),), Load("y", (i,)), "=", Call(fn, args))
        arrays = {f"x{q}": v for q, v in enumerate(ins)} | {"y": np.zeros(n)}
        with np.errstate(all="ignore"):
            ex.run_kernel(k, arrays)
            ref = np.asarray((_BITS.get(fn) or _REF[fn])(*ins), dtype=float)
        np.testing.assert_allclose(arrays["y"], ref, rtol=1e-14, atol=0, equal_nan=True, err_msg=fn)


def test_nan_propagates_through_max():
    x = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 4.0]])
    k = Kernel("max", (("i", 2), ("j", 3)), Load("m", (V("i"),)), "max=", Load("x", (V("i"), V("j"))))
    arrays = {"x": x, "m": np.zeros(2)}
    ex.run_kernel(k, arrays)
    assert np.isnan(arrays["m"][0]) and arrays["m"][1] == 5.0


def test_reduction_outer_and_scalar_output():
    r = _rng()
    # reduction variable outermost: out[i, j] += A[i, k] * B[k, j] with loops (k, i, j)
    k = Kernel("mm_kij", (("k", 4), ("i", 3), ("j", 5)), Load("C", (V("i"), V("j"))), "+=",
               call("mul", Load("A", (V("i"), V("k"))), Load("B", (V("k"), V("j")))))
    arrays = {"A": r.standard_normal((3, 4)), "B": r.standard_normal((4, 5)), "C": np.zeros((3, 5))}
    check_samples(k, arrays)
    ex.run_kernel(k, arrays)
    np.testing.assert_allclose(arrays["C"], arrays["A"] @ arrays["B"], rtol=1e-12)
    # full reduction into a 0-d tensor
    ks = Kernel("sum", (("i", 3), ("j", 4)), Load("s", ()), "+=", Load("A", (V("i"), V("j"))))
    arrays = {"A": arrays["A"], "s": np.zeros(())}
    check_samples(ks, arrays)
    ex.run_kernel(ks, arrays)
    assert arrays["s"] == pytest.approx(arrays["A"].sum(), rel=1e-14)


def test_out_of_bounds_raises():
    k = Kernel("bad", (("i", 5),), Load("y", (V("i"),)), "=", Load("x", (V("i") + 1,)))
    with pytest.raises(IndexError):
        ex.run_kernel(k, {"x": np.zeros(5), "y": np.zeros(5)})


def test_numba_failure_falls_back(monkeypatch):
    import numba

    class Broken:
        def __init__(self, real):
            self.overloads = {}

        def __call__(self, *args):
            raise numba.core.errors.TypingError("simulated")

    real_load = ex._load_module

    def broken_load(source):
        mod = real_load(source)
        fake = type(mod)("broken")
        fake.run = Broken(mod.run)
        fake.sample = Broken(mod.sample)
        return fake

    monkeypatch.setattr(ex, "_load_module", broken_load)
    monkeypatch.setattr(ex, "_PY_MODULES", {})
    monkeypatch.setattr(ex, "_NUMBA_FAILED", set())
    r = _rng()
    k = matmul(3, 4, 5, init="keep")
    arrays = {"A": r.standard_normal((3, 5)), "B": r.standard_normal((5, 4)), "C": np.ones((3, 4))}
    n = len(ex.FALLBACKS)
    ex.run_kernel(k, arrays)
    assert len(ex.FALLBACKS) == n + 1 and "simulated" in ex.FALLBACKS[-1][1]
    np.testing.assert_allclose(arrays["C"], 1 + arrays["A"] @ arrays["B"], rtol=1e-12)


# ---------------------------------------------------------------- caching


def test_same_structure_reuses_compiled_code(tmp_path, monkeypatch):
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path))  # fresh disk cache: a real compile
    r = _rng()
    t0 = time.perf_counter()
    k, oshape = conv2d(1, 2, 8, 8, 3, 3, 3, 3, 1, 1)
    arrays = {"x": r.standard_normal((1, 2, 8, 8)), "w": r.standard_normal((3, 2, 3, 3)), "y": np.zeros(oshape)}
    ex.run_kernel(k, arrays)
    t1 = time.perf_counter()
    size = ex.cache_size()
    for shape in [(2, 3, 13, 10, 5, 3, 3), (1, 1, 5, 5, 2, 3, 3), (3, 4, 17, 9, 2, 3, 3)]:
        k, oshape = conv2d(*shape, 3, 1, 1)
        N, C, H, W, K, R, S = shape
        arrays = {"x": r.standard_normal((N, C, H, W)), "w": r.standard_normal((K, C, R, S)),
                  "y": np.zeros(oshape)}
        t2 = time.perf_counter()
        ex.run_kernel(k, arrays)
        t3 = time.perf_counter()
        ref = torch.nn.functional.conv2d(torch.from_numpy(arrays["x"]), torch.from_numpy(arrays["w"]),
                                         stride=3, padding=1).numpy()
        np.testing.assert_allclose(arrays["y"], ref, rtol=1e-12, atol=1e-12)
    # different padding / kernel size only changes arguments, not the source
    k, oshape = conv2d(1, 2, 9, 9, 3, 5, 5, 3, 2, 1)
    ex.run_kernel(k, {"x": np.ones((1, 2, 9, 9)), "w": np.ones((3, 2, 5, 5)), "y": np.zeros(oshape)})
    assert ex.cache_size() == size
    print(f"\nconv first call (compile or disk cache) {t1 - t0:.3f}s, same structure new shape {t3 - t2:.4f}s")


def test_second_process_hits_disk_cache(tmp_path):
    script = textwrap.dedent(
        """
        import time, numpy as np
        t0 = time.perf_counter()
        from solar_lsp.ir import execute as ex
        from solar_lsp.ir.core import Affine, Kernel, Load, call
        V = Affine.var
        k = Kernel("gelu_mm", (("i", 8), ("j", 8), ("k", 8)), Load("C", (V("i"), V("j"))), "+=",
                   call("mul", call("tanh", Load("A", (V("i"), V("k")))), Load("B", (V("k"), V("j")))))
        a = {"A": np.ones((8, 8)), "B": np.ones((8, 8)), "C": np.zeros((8, 8))}
        t1 = time.perf_counter()
        ex.run_kernel(k, a)
        t2 = time.perf_counter()
        assert abs(a["C"][0, 0] - 8 * np.tanh(1.0)) < 1e-12
        print(f"{t2 - t1:.4f} {t1 - t0:.4f}")
        """
    )
    env = dict(os.environ, SOLAR_CACHE_DIR=str(tmp_path), SOLAR_EXECUTOR="numba")
    times = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                             check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
        times.append(float(out.stdout.split()[0]))
    assert list((tmp_path / "__pycache__").glob("*.nbi"))
    print(f"\nfirst process compile+run {times[0]:.3f}s, second process (disk cache) {times[1]:.3f}s")


# ---------------------------------------------------------------- composition


def test_run_program_ops():
    r = _rng()
    T = TensorType
    i, j, q = V("i"), V("j"), V("k")
    prog = Program(
        "p",
        tensors={
            "x": T((4, 3), "float32"), "xt": T((3, 4), "float32"), "w": T((4, 5), "float32"),
            "h": T((3, 5), "float32"), "hr": T((15,), "float32"), "hs": T((5,), "float32"),
            "emb": T((10, 2), "float32"), "ids": T((2, 3), "int64"), "e": T((2, 3, 2), "float32"),
            "sel": T((2, 2), "float32"), "g": T((3, 2), "float32"), "gi": T((3, 2), "int64"),
            "u": T((1, 3, 2), "float32"), "sq": T((3, 2), "float32"),
            "ex": T((2, 3, 2), "float32"),
        },
        inputs=["x", "ids", "gi"],
        params=["w", "emb"],
    )
    prog.ops = [
        Op("0", "aten.t", None, ["x"], ["xt"], kind="view", call=("permute", (1, 0))),
        Op("1", "aten.mm", None, ["xt", "w"], ["h"], kernels=[
            Kernel("mm", (("i", 3), ("j", 5), ("k", 4)), Load("h", (i, j)), "+=",
                   call("mul", Load("xt", (i, q)), Load("w", (q, j))))]),
        Op("2", "aten.view", None, ["h"], ["hr"], kind="view", call=("reshape", (15,))),
        Op("3", "aten.slice", None, ["hr"], ["hs"], kind="view", call=("slice", 0, 1, 11, 2)),
        Op("4", "aten.embedding", None, ["emb", "ids"], ["e"], kind="gather", call=("embedding",)),
        Op("5", "aten.select", None, ["e"], ["sel"], kind="view", call=("select", 1, 2)),
        Op("6", "aten.index_select", None, ["emb", "sel_idx"], ["g"], kind="gather",
           call=("index_select", 0)),
        Op("7", "aten.gather", None, ["g", "gi"], ["g"], kind="gather", call=("gather", 1)),
        Op("8", "aten.unsqueeze", None, ["g"], ["u"], kind="view", call=("unsqueeze", 0)),
        Op("9", "aten.squeeze", None, ["u"], ["sq"], kind="view", call=("squeeze", (0,))),
        Op("10", "aten.expand", None, ["u"], ["ex"], kind="view", call=("expand", (2, -1, -1))),
    ]
    x, w, emb = r.standard_normal((4, 3)), r.standard_normal((4, 5)), r.standard_normal((10, 2))
    ids = np.array([[1, 2, 3], [7, 8, 9]], dtype=np.float64)
    gi = np.array([[1, 0], [0, 0], [1, 1]], dtype=np.float64)
    arrays = {"x": x.astype(np.float32), "w": w, "emb": emb, "ids": ids, "gi": gi,
              "sel_idx": np.array([4.0, 0.0, 9.0])}
    ex.run_program_ops(prog, arrays)
    h = x.astype(np.float32).astype(np.float64).T @ w
    np.testing.assert_allclose(arrays["h"], h, rtol=1e-12)
    np.testing.assert_allclose(arrays["hs"], h.reshape(-1)[1:11:2], rtol=1e-12)
    np.testing.assert_array_equal(arrays["e"], emb[ids.astype(int)])
    np.testing.assert_array_equal(arrays["sel"], emb[ids.astype(int)][:, 2])
    g = np.take_along_axis(emb[[4, 0, 9]], gi.astype(int), axis=1)
    np.testing.assert_array_equal(arrays["g"], g)
    np.testing.assert_array_equal(arrays["sq"], g)
    assert arrays["ex"].shape == (2, 3, 2)
    np.testing.assert_array_equal(arrays["ex"][1], g)


def test_random_points_and_positions():
    k, _ = conv2d(2, 3, 9, 8, 4, 3, 3, 2, 1, 1)
    pts = ex.random_points(k, 10, _rng())
    assert pts.shape == (10, 4) and len({tuple(p) for p in pts}) == 10
    allp = ex.random_points(k, 10**6, _rng())
    assert len(allp) == 2 * 4 * 5 * 4 and len({tuple(p) for p in allp}) == len(allp)
    kk = Kernel("t", (("i", 3), ("j", 4)), Load("y", (V("j"), V("i", 2) + 1)), "=", Const(0.0))
    pos = ex.out_positions(kk, np.array([[2, 3], [0, 1]]))
    np.testing.assert_array_equal(pos, [[3, 5], [1, 1]])


def _random_kernel(rng: np.random.Generator, separable: bool) -> tuple[Kernel, tuple[int, ...]]:
    """A kernel whose output index is affine in its loop variables: each output dimension
    reading its own variables (``separable``) or some read by two dimensions; with guards."""
    names = [f"v{i}" for i in range(5)]
    loops = tuple((v, int(rng.integers(1, 7))) for v in names)
    dims = int(rng.integers(1 if separable else 2, 4))
    owner = {v: int(rng.integers(0, dims)) for v in names}
    index = []
    for d in range(dims):
        terms = tuple((v, int(rng.integers(-3, 4)) or 1) for v in names if owner[v] == d)
        index.append(Affine(terms, int(rng.integers(-3, 4))))
    if not separable:
        v = names[int(rng.integers(0, 5))]
        d = (owner[v] + 1) % dims
        index[d] = index[d] + Affine.var(v, 2)
    guards = []
    for _ in range(int(rng.integers(0, 3))):
        d = int(rng.integers(0, dims))
        mine = [v for v in names if owner[v] == d] or names[:1]
        guards.append(Guard(Affine.var(mine[0]) + int(rng.integers(-2, 2)), 0, int(rng.integers(1, 6))))
    shape = tuple(int(rng.integers(2, 12)) for _ in range(dims))
    return Kernel("k", loops, Load("y", tuple(index)), "=", Const(1.0), guards=tuple(guards)), shape


@pytest.mark.parametrize("separable", [True, False])
def test_mark_written_by_axis_is_the_enumeration(separable):
    """The written points found one output dimension at a time (``_mark_separable``) are the
    points found by enumerating every loop point; an index that mixes dimensions is
    enumerated."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        k, shape = _random_kernel(rng, separable)
        whole, by_axis = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        written.mark_written(k, whole, chunk=k.points + 1)  # one chunk: every point enumerated
        guards = [g for g in k.guards if g.expr.vars() <= set(k.out_vars)]
        assert written._mark_separable(k, k.out_vars, guards, by_axis) is separable, k
        assert np.array_equal(whole, by_axis) if separable else not by_axis.any(), k
