"""The JAX / Flax frontend (docs/jax.md): every corpus model verified against jax, FLOPs
against XLA's own cost analysis, loop and cond rules against hand formulas, and the error
paths (no lowering, dynamic trip count, untraceable code)."""

from __future__ import annotations

import math
import pathlib

import pytest
from conftest import ROOT, line_of, only_entry, run_solar, write

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from solar_lsp.hardware.chips import load_chip  # noqa: E402
from solar_lsp.ir.text import parse_program, print_program  # noqa: E402
from solar_lsp.ir.validate import validate_program  # noqa: E402
from solar_lsp.pipeline.analyze import Config, analyze_file  # noqa: E402
from solar_lsp.source.discover import discover  # noqa: E402

CORPUS = ROOT / "tests" / "corpus_jax"
FILES = sorted(p.name for p in CORPUS.glob("*.py"))


def analyze(path: str, verify: bool = True):
    return analyze_file(str(path), Config(verify=verify))


@pytest.fixture(scope="module")
def corpus() -> dict:
    """Every corpus file analyzed and verified once for the module."""
    return {name: analyze(CORPUS / name) for name in FILES}


def test_corpus_is_large_enough():
    assert len(FILES) >= 40


@pytest.mark.timeout(1800)  # the first one runs the corpus fixture: 48 files, three verify passes each
@pytest.mark.parametrize("name", FILES)
def test_corpus_entry_verified(corpus, name):
    e = only_entry(corpus[name])
    assert e.frontend == "jax"
    assert e.status == "ok", e.error
    assert e.unsupported == []
    assert e.verification["status"] == "verified", e.verification
    assert e.verification["ops_checked"] == e.graph["ops"]
    tot = e.totals
    assert tot["flops"] > 0 and tot["bytes_fused"] > 0
    assert tot["flops"] == tot["tensor_flops"] + tot["vector_flops"]
    assert tot["t_fused_s"] <= tot["t_unfused_s"] * (1 + 1e-12)
    assert tot["bytes_fused"] <= tot["bytes_unfused"]
    # every op is on a line of the analyzed file
    n_lines = len((CORPUS / name).read_text().splitlines())
    assert all(ln.line is not None and 1 <= ln.line <= n_lines for ln in e.lines)
    # a well-formed program whose text form reads back to the same program
    validate_program(e.program)
    src = print_program(e.program)
    assert print_program(parse_program(src)) == src


# ------------------------------------------------------------------ XLA's own count


def _xla_flops(fn, *shapes) -> float:
    args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    ca = jax.jit(fn).lower(*args).compile().cost_analysis()
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    return float(ca["flops"])


DOT_SRC = '''
import jax.numpy as jnp
from jax import lax


# solar: x=f32[64,128], w=f32[128,96]
def mm(x, w):
    return x @ w


# solar: a=f32[8,32,48], b=f32[8,48,40]
def bmm(a, b):
    return jnp.einsum("bij,bjk->bik", a, b)


# solar: x=f32[2,16,16,8], w=f32[3,3,8,16]
def conv_valid(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))


# solar: x=f32[2,15,15,8], w=f32[3,3,8,16]
def conv_strided(x, w):
    return lax.conv_general_dilated(x, w, (2, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))


# solar: x=f32[2,8,16,16], w=f32[16,4,3,3]
def conv_grouped(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=2)
'''


def test_tensor_flops_match_xla(tmp_path):
    """On dot/conv-only programs our tensor FLOPs are XLA's flops (2 per multiply-add)."""
    path = write(tmp_path, "dots.py", DOT_SRC)
    r = analyze(path, verify=False)
    got = {e.name: e.totals for e in r.entries}
    ns = {}
    exec(compile(DOT_SRC, path, "exec"), ns)
    shapes = {"mm": [(64, 128), (128, 96)], "bmm": [(8, 32, 48), (8, 48, 40)],
              "conv_valid": [(2, 16, 16, 8), (3, 3, 8, 16)], "conv_strided": [(2, 15, 15, 8), (3, 3, 8, 16)],
              "conv_grouped": [(2, 8, 16, 16), (16, 4, 3, 3)]}
    for name, s in shapes.items():
        xla = _xla_flops(ns[name], *s)
        assert got[name]["tensor_flops"] == xla, (name, got[name]["tensor_flops"], xla)
        assert got[name]["vector_flops"] == 0
    assert got["mm"]["tensor_flops"] == 2 * 64 * 128 * 96  # and XLA agrees with the hand formula
    assert got["conv_grouped"]["tensor_flops"] == 2 * 2 * 16 * 14 * 14 * 4 * 9


def test_same_padding_counts_padded_taps_xla_skips(tmp_path):
    """With SAME padding we count every tap (FlopCounterMode's convention,
    docs/sol-model.md); XLA skips the taps that land in the padding. The difference is
    exactly the padded taps, counted here by hand."""
    path = write(tmp_path, "same.py", '''
        from jax import lax


        # solar: x=f32[2,16,16,8], w=f32[3,3,8,16]
        def conv_same(x, w):
            return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        ''')
    e = only_entry(analyze(path, verify=False))
    n, h, cin, cout, k = 2, 16, 8, 16, 3
    valid = sum(1 for o in range(h) for t in range(k) if 0 <= o + t - 1 < h)  # taps inside, per dim
    assert e.totals["tensor_flops"] == 2 * n * cin * cout * (h * k) ** 2
    xla = _xla_flops(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")), (2, 16, 16, 8), (3, 3, 8, 16))
    assert xla == 2 * n * cin * cout * valid ** 2
    assert e.totals["tensor_flops"] - xla == 2 * n * cin * cout * ((h * k) ** 2 - valid ** 2)


# ------------------------------------------------------------------ loops and cond


def test_scan_multiplies_its_body_by_the_trip_count(tmp_path):
    T, B, D = 24, 8, 64
    path = write(tmp_path, "scan.py", f'''
        import jax.numpy as jnp
        from jax import lax


        # solar: x=f32[{T},{B},{D}], w=f32[{D},{D}]
        def rnn(x, w):
            def step(h, xt):
                h = jnp.tanh(h @ w + xt)
                return h, h

            return lax.scan(step, jnp.zeros(({B}, {D})), x)
        ''')
    e = only_entry(analyze(path))
    assert e.verification["status"] == "verified", e.verification
    tot = e.totals
    assert tot["macs"] == T * B * D * D  # one [B,D]x[D,D] matmul per step
    assert tot["transcendentals"] == T * B * D  # one tanh per element per step
    # per step: the add and the tanh (B*D each); the zeros fill B*D once
    assert tot["vector_flops"] == 2 * T * B * D
    dot = [o for ln in e.lines for o in ln.ops if o.target == "dot_general"]
    assert len(dot) == 1 and dot[0].macs == T * B * D * D
    assert dot[0].bytes == T * 4 * (B * D + D * D + B * D)  # h and w read, h@w written, every step
    # fused: x and w read once (x slice by slice), final h and the stacked hs written once
    assert tot["bytes_fused"] == 4 * (T * B * D + D * D + B * D + T * B * D)
    assert any(n["kind"] == "scan" and f"{T}" in n["note"] for n in e.notes)


def test_nested_loops_and_static_while(tmp_path):
    path = write(tmp_path, "loops.py", '''
        import jax.numpy as jnp
        from jax import lax


        # solar: x=f32[16,32]
        def nested(x):
            def outer(c, _):
                c = lax.fori_loop(0, 3, lambda i, z: jnp.exp(-z * z), c)
                return c, None

            c, _ = lax.scan(outer, x, None, length=5)
            n = lax.while_loop(lambda s: s[0] < 4, lambda s: (s[0] + 1, jnp.sin(s[1])), (0, c))[1]
            return n
        ''')
    e = only_entry(analyze(path))
    assert e.verification["status"] == "verified", e.verification
    # exp: 5 x 3 times, sin: 4 times, each over 16*32 elements
    assert e.totals["transcendentals"] == (5 * 3 + 4) * 16 * 32
    kinds = sorted(n["kind"] for n in e.notes)
    assert kinds == ["scan", "scan", "while"]


def test_dynamic_trip_count_needs_a_pragma(tmp_path):
    src = '''
        import jax.numpy as jnp
        from jax import lax


        # solar: x=f32[64,64], n=i32[]
        def repeat(x, n):
            return lax.fori_loop(0, n, lambda i, z: jnp.tanh(z @ x), x){pragma}
        '''
    path = write(tmp_path, "dyn.py", src.format(pragma=""))
    e = only_entry(analyze(path))
    line = line_of(path, "lax.fori_loop")
    [u] = e.unsupported
    assert u["op"] == "while" and u["line"] == line and "solar: trips=" in u["reason"]
    assert e.totals["macs"] == 0  # the body is not guessed
    assert e.verification["status"] == "unverified"
    path = write(tmp_path, "dyn2.py", src.format(pragma="  # solar: trips=10"))
    e = only_entry(analyze(path))
    assert e.unsupported == []
    assert e.totals["macs"] == 10 * 64 ** 3
    assert any(n["kind"] == "while" and "pragma" in n["note"] for n in e.notes)
    # the loop's output cannot be replayed against data-dependent iterations
    assert e.verification["status"] == "unverified"
    assert "pragma" in e.verification["detail"]


def test_cond_counts_the_costlier_branch_and_says_so(tmp_path):
    path = write(tmp_path, "cond.py", '''
        import jax.numpy as jnp
        from jax import lax


        # solar: x=f32[128,128], w=f32[128,128]
        def branchy(x, w):
            return lax.cond(x[0, 0] > 100.0, lambda a: (a @ w) @ w, lambda a: a + 1.0, x)
        ''')
    e = only_entry(analyze(path))
    # the predicate is false on the golden inputs, but the costlier branch is what is counted
    assert e.totals["macs"] == 2 * 128 ** 3
    assert e.verification["status"] == "verified", e.verification
    [note] = [n for n in e.notes if n["kind"] == "cond"]
    assert note["line"] == line_of(path, "lax.cond")
    assert "costlier branch 1 of 2 (lax.cond's true function)" in note["note"]


# ------------------------------------------------------------------ errors


def test_primitive_without_lowering_is_listed_with_its_line(tmp_path):
    path = write(tmp_path, "fft.py", '''
        import jax.numpy as jnp


        # solar: x=f32[64,256], w=f32[256,256]
        def spectral(x, w):
            y = x @ w
            f = jnp.fft.rfft(y, axis=-1)
            return jnp.abs(f)
        ''')
    e = only_entry(analyze(path))
    assert e.status == "ok"
    ops = {u["op"]: u for u in e.unsupported}
    assert "fft" in ops and ops["fft"]["line"] == line_of(path, "jnp.fft.rfft")
    assert "no lowering" in ops["fft"]["reason"]
    assert e.totals["macs"] == 64 * 256 * 256  # the rest is still counted
    assert e.verification["status"] == "unverified"


def test_pure_callback_is_unsupported(tmp_path):
    path = write(tmp_path, "cb.py", '''
        import jax
        import numpy as np


        # solar: x=f32[32]
        def host(x):
            y = jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
            return y * 2
        ''')
    e = only_entry(analyze(path))
    [u] = e.unsupported
    assert u["op"] == "pure_callback" and u["line"] == line_of(path, "jax.pure_callback")


def test_untraceable_function_says_why_and_where(tmp_path):
    path = write(tmp_path, "bad.py", '''
        import jax.numpy as jnp


        # solar: x=f32[8]
        def f(x):
            if x.sum() > 0:
                return x * 2
            return x
        ''')
    e = only_entry(analyze(path))
    assert e.status == "error"
    assert "could not trace f" in e.error and "lax.cond" in e.error
    assert e.error_line == line_of(path, "if x.sum() > 0")


def test_wrong_lowering_is_caught(tmp_path, monkeypatch):
    """The verifier is not a rubber stamp: a tanh lowered as a sigmoid is a mismatch."""
    from solar_lsp.frontend.jax import prims as jax_prims
    from solar_lsp.ir.core import call
    monkeypatch.setitem(jax_prims.LOWERINGS, "tanh", lambda c: c.ew(lambda v: call("sigmoid", v), 0))
    path = write(tmp_path, "t.py", '''
        import jax.numpy as jnp


        # solar: x=f32[16,16]
        def f(x):
            return jnp.tanh(x) + 1.0
        ''')
    e = only_entry(analyze(path))
    assert e.verification["status"] == "mismatch"
    assert e.verification["issues"][0]["line"] == line_of(path, "jnp.tanh")


# ------------------------------------------------------------------ entries and counts


def test_flax_discovery_is_ast_only():
    src = '''
import flax.linen as nn
from flax import nnx


# solar: x=f32[4, 8], init={"features": 16}
class Dense(nn.Module):
    features: int = 4

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.features)(x)


# solar: x=f32[4, 8], init=(8, 16)
class Lin(nnx.Module):
    def __init__(self, a, b, *, rngs):
        self.l = nnx.Linear(a, b, rngs=rngs)

    def __call__(self, x):
        return self.l(x)
'''
    a, b = discover(src, "m.py")
    assert (a.name, a.kind, a.frontend, dict(a.init_kwargs)) == ("Dense", "module", "jax", {"features": 16})
    assert (b.name, b.kind, b.frontend, b.init_args) == ("Lin", "module", "jax", (8, 16))


def test_model_convention_with_flax(tmp_path):
    """``class Model`` + ``get_inputs()`` works for a Flax module: inputs are arrays."""
    path = write(tmp_path, "conv.py", '''
        import flax.linen as nn
        import jax.numpy as jnp


        class Model(nn.Module):
            width: int

            @nn.compact
            def __call__(self, x):
                return nn.Dense(self.width, use_bias=False)(x)


        def get_inputs():
            return [jnp.ones((16, 32))]


        def get_init_inputs():
            return [48]
        ''')
    e = only_entry(analyze(path))
    assert e.frontend == "jax" and e.status == "ok", e.error
    assert e.verification["status"] == "verified", e.verification
    assert e.totals["macs"] == 16 * 32 * 48
    assert e.inputs == [{"name": "x0", "dtype": "float32", "shape": [16, 32]}]


def test_linen_dense_counts_and_tf32_policy(tmp_path):
    """A Dense layer: params from init under eval_shape; fp32 dots get JAX's default TF32."""
    B, K, N = 256, 512, 1024
    path = write(tmp_path, "dense.py", f'''
        import flax.linen as nn


        # solar: x=f32[{B},{K}]
        class Layer(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.Dense({N})(x)
        ''')
    e = only_entry(analyze(path))
    assert e.verification["status"] == "verified", e.verification
    assert sorted(i["name"] for i in e.inputs) == ["x"]
    tot = e.totals
    assert tot["macs"] == B * K * N
    assert tot["vector_flops"] == B * N  # the bias add
    nbytes = 4 * (B * K + K * N + N + B * N)
    assert tot["bytes_fused"] == nbytes
    h100 = load_chip("h100-sxm")
    t = max(2 * B * K * N / h100.peak("matrix", "tf32"), B * N / h100.peak("vector", "fp32"),
            nbytes / h100.dram_bytes_per_s)
    assert math.isclose(tot["t_fused_s"], t, rel_tol=1e-9)


def test_cli_json_frontend_is_jax():
    r = run_solar("analyze", "tests/corpus_jax/mlp_fn.py", "--json", "--no-verify", timeout=300)
    assert r.returncode == 0, r.stderr
    import json
    doc = json.loads(r.stdout)
    [e] = doc["entries"]
    assert e["frontend"] == "jax" and e["status"] == "ok"
    assert e["totals"]["macs"] == 64 * 256 * 512 + 64 * 512 * 128
    assert "notes" in e
    assert all(op["op"] and not op["op"].startswith("aten.") for ln in e["lines"] for op in ln["ops"])


def test_corpus_files_are_written_for_this_project():
    for name in FILES:
        text = (CORPUS / name).read_text()
        assert text.startswith('"""'), name  # each says what it models
        assert "# solar:" in text, name
    assert pathlib.Path(CORPUS).is_dir()


def test_random_noise_is_listed_and_the_rest_counted(tmp_path):
    """jax.random inside an entry: the PRNG ops (on key-typed values numpy has no dtype
    for) are listed with their line and the matmul around them is still counted."""
    path = write(tmp_path, "noise.py", '''
        import jax


        # solar: x=f32[64,128], w=f32[128,96]
        def noisy(x, w):
            y = x @ w
            key = jax.random.PRNGKey(0)
            return y + 0.1 * jax.random.normal(key, y.shape)
        ''')
    e = only_entry(analyze(path))
    assert e.status == "ok", e.error
    assert e.totals["macs"] == 64 * 128 * 96
    assert e.totals["tensor_flops"] == 2 * 64 * 128 * 96
    by_op = {u["op"]: u for u in e.unsupported}
    bits = by_op["random_bits"]
    assert bits["line"] == line_of(path, "jax.random.normal")
    assert "random number generation has no lowering" in bits["reason"]
    assert by_op["random_seed"]["line"] == line_of(path, "PRNGKey")
    # the sampler's bit arithmetic the IR has no function for says so, on the same line
    assert by_op["erf_inv"]["line"] == bits["line"] and "no scalar function" in by_op["erf_inv"]["reason"]
    assert e.verification["status"] == "unverified"
    assert e.verification["issues"] == []  # everything that lowered matched jax


def test_key_as_model_input_is_opaque(tmp_path):
    """A PRNG key passed in (Model convention) is an opaque value, not a crash."""
    path = write(tmp_path, "keyin.py", '''
        import flax.linen as nn
        import jax
        import jax.numpy as jnp


        class Model(nn.Module):
            def __call__(self, x, key):
                return jnp.tanh(x) + jax.random.uniform(key, x.shape)


        def get_inputs():
            return [jnp.ones((16, 32)), jax.random.key(3)]
        ''')
    e = only_entry(analyze(path))
    assert e.status == "ok", e.error
    assert "random_bits" in {u["op"] for u in e.unsupported}
    assert "tanh" in {op.target for op in e.program.ops}  # the rest still lowers
    assert e.inputs[0] == {"name": "x0", "dtype": "float32", "shape": [16, 32]}
    assert e.verification["issues"] == []


def test_new_elementwise_primitives_verified(tmp_path):
    """Hyperbolic / inverse trig functions, atan2, integer bit operations and shifts lower to
    the IR's scalar functions and match jax; on bool, and/or/xor/not stay logical."""
    path = write(tmp_path, "ew.py", '''
        import jax.numpy as jnp
        from jax import lax


        # solar: x=f32[32,64], y=f32[32,64], i=i32[32,64], j=i32[32,64], u=u8[32,64]
        def ew(x, y, i, j, u):
            t = jnp.tanh(x) * 0.9
            a = jnp.sinh(x) + jnp.cosh(y) + jnp.arcsin(t) + jnp.arccos(t) + jnp.arctan2(x, y)
            b = jnp.arcsinh(x) + jnp.arccosh(jnp.abs(y) + 1.0) + jnp.arctanh(t)
            c = (i & j) + (i | j) + (i ^ j) + ~i + lax.shift_left(i, j) + lax.shift_right_arithmetic(i - 4, j)
            d = (x > y) & (y > 0) | ~(x < 0) ^ (y < x)
            return a, b, c, d, ~u, u << 5, u & 3
        ''')
    e = only_entry(analyze(path))
    assert e.status == "ok", e.error
    assert e.unsupported == []
    assert e.verification["status"] == "verified", e.verification
    assert e.verification["ops_checked"] == e.graph["ops"]
    import re
    called = set(re.findall(r"\b(\w+)\(", print_program(e.program)))  # `and` prints as and_
    for fn in ("asin", "acos", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh",
               "band", "bor", "bxor", "bnot", "shl", "shr", "and_", "or_", "xor", "not_"):
        assert fn in called, fn


def test_functions_without_an_ir_function_say_so(tmp_path):
    path = write(tmp_path, "special.py", '''
        import jax.numpy as jnp
        from jax import lax
        from jax.scipy import special


        # solar: x=f32[32,64], i=i32[32,64]
        def special_fns(x, i):
            a = special.erfinv(jnp.tanh(x))
            b = special.gammaln(jnp.abs(x) + 1.0)
            c = special.digamma(jnp.abs(x) + 1.0)
            d = jnp.nextafter(x, 0.0)
            e = lax.population_count(i)
            f = lax.shift_right_logical(i, 1)
            return a, b, c, d, e, f, jnp.sinh(x)
        ''')
    e = only_entry(analyze(path))
    assert e.status == "ok", e.error
    by_op = {u["op"]: u for u in e.unsupported}
    for prim, text in (("erf_inv", "erfinv"), ("lgamma", "gammaln"), ("digamma", "digamma"),
                       ("nextafter", "nextafter"), ("population_count", "population_count"),
                       ("shift_right_logical", "shift_right_logical")):
        assert prim in by_op, (prim, by_op)
        assert by_op[prim]["line"] == line_of(path, text)
        assert "no scalar function in the IR" in by_op[prim]["reason"]
    assert e.verification["issues"] == []
