"""Entry-point discovery and shape pragmas (solar_lsp.source.discover, solar_lsp.source.pragma)."""

from __future__ import annotations

import sys
import textwrap

import pytest

from solar_lsp.source.discover import DiscoveryError, Entry, TensorSpec, discover, discover_file
from solar_lsp.source.pragma import DTYPE_ALIASES, PragmaError, dtype_size, parse_pragma


def src(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


def one(source: str, **kw) -> Entry:
    entries = discover(src(source), **kw)
    assert len(entries) == 1, entries
    return entries[0]


# --------------------------------------------------------------------------- conventions

KERNELBENCH = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return self.lin(x)

def get_inputs():
    return [torch.randn(8, 1024)]

def get_init_inputs():
    return [1024]
"""


def test_model_convention():
    e = one(KERNELBENCH)
    assert e == Entry(
        name="Model", kind="model", line=4, end_line=10, frontend="torch", inputs=None
    )


def test_model_without_get_init_inputs_and_local_base():
    e = one(
        """
        from torch import nn
        class Base(nn.Module):
            pass
        class Model(Base):
            def forward(self, x):
                return x
        get_inputs = lambda: []
        """
    )
    assert (e.name, e.kind, e.inputs, e.init_args) == ("Model", "model", None, ())


def test_model_needs_get_inputs_and_module_base():
    assert discover(src("import torch\nclass Model(torch.nn.Module):\n    pass\n")) == []
    assert discover(src("class Model(object):\n    pass\ndef get_inputs():\n    return []\n")) == []


def test_function_pragma_above():
    e = one(
        """
        import torch

        # solar: x=f32[8,512,1024], w=bf16[1024,1024]
        def f(x, w):
            return x @ w.float()
        """
    )
    assert e.name == "f" and e.kind == "function" and e.frontend == "torch"
    assert e.line == 4 and e.end_line == 5
    assert e.inputs == (
        TensorSpec("x", "float32", (8, 512, 1024)),
        TensorSpec("w", "bfloat16", (1024, 1024)),
    )
    assert e.pragma == "x=f32[8,512,1024], w=bf16[1024,1024]"
    assert e.pragma_line == 3
    assert e.init_args == () and e.init_kwargs == ()


def test_pragma_end_of_def_line():
    e = one(
        """
        def f(x):  # solar: x=f16[4, 4]
            return x
        """
    )
    assert e.inputs == (TensorSpec("x", "float16", (4, 4)),)
    assert e.pragma_line == 1 and e.line == 1


def test_pragma_above_decorators_and_between():
    e = one(
        """
        import functools
        import torch

        # solar: B=2,
        # solar: x=f32[B, 3]
        @torch.no_grad()
        @functools.lru_cache
        def g(x):
            return x
        """
    )
    assert e.line == 8 and e.pragma_line == 4
    assert e.inputs == (TensorSpec("x", "float32", (2, 3)),)

    e = one(
        """
        import torch
        @torch.no_grad()
        # solar: x=i64[5]
        def g(x):
            return x
        """
    )
    assert e.inputs == (TensorSpec("x", "int64", (5,)),) and e.pragma_line == 3


def test_pragma_on_multiline_signature():
    e = one(
        """
        def f(
            x,  # solar: x=f32[8]
            y,  # solar: y=f32[8]
        ):
            return x + y
        """
    )
    assert [s.name for s in e.inputs] == ["x", "y"]
    assert e.pragma == "x=f32[8], y=f32[8]"


def test_unattached_pragmas_are_ignored():
    entries = discover(
        src(
            """
            # solar: x=f32[8]

            def separated_by_blank_line(x):
                return x

            def body_comment(x):
                # solar: x=f32[8]
                return x

            class C:
                # solar: x=f32[8]
                def method(self, x):
                    return x

            def outer():
                # solar: x=f32[8]
                def inner(x):
                    return x
                return inner
            """
        )
    )
    assert entries == []


def test_module_class_with_init_args():
    e = one(
        """
        import torch.nn as nn

        # solar: D=1024, x=f32[8, D], init=(1024, 4096)
        class MLP(nn.Module):
            def __init__(self, d, h):
                super().__init__()

            def forward(self, x):
                return x
        """
    )
    assert e.kind == "module" and e.frontend == "torch" and e.name == "MLP"
    assert e.init_args == (1024, 4096) and e.init_kwargs == ()
    assert e.inputs == (TensorSpec("x", "float32", (8, 1024)),)
    hash(e)


def test_module_init_kwargs_and_dims_in_init():
    e = one(
        """
        from torch import nn
        class M(nn.Module):  # solar: D=64, x=f32[D], init={"d": 64, "bias": False, "sizes": [1, 2]}
            def forward(self, x):
                return x
        """
    )
    assert e.init_args == ()
    assert e.init_kwargs == (("d", 64), ("bias", False), ("sizes", (1, 2)))
    hash(e)
    _, args, kwargs = parse_pragma("D=64, init=(D, 4*D)")
    assert args == (64, 256) and kwargs == ()
    _, args, _ = parse_pragma("init=512")
    assert args == (512,)


def test_pragma_on_model_overrides_get_inputs():
    source = KERNELBENCH.replace("class Model", "# solar: x=f32[2, 16], init=(16,)\nclass Model")
    e = one(source)
    assert e.kind == "module" and e.inputs == (TensorSpec("x", "float32", (2, 16)),)
    assert e.init_args == (16,)


def test_entries_ordered_by_line_and_last_definition_wins():
    entries = discover(
        src(
            """
            # solar: x=f32[1]
            def b(x):
                return x

            # solar: x=f32[2]
            def a(x):
                return x

            # solar: x=f32[3]
            def b(x):
                return -x
            """
        )
    )
    assert [(e.name, e.line, e.inputs[0].shape) for e in entries] == [
        ("a", 6, (2,)),
        ("b", 10, (3,)),
    ]


# --------------------------------------------------------------------------- dims


def test_symbolic_dims_in_pragma():
    e = one(
        """
        # solar: B=8, S=2048, x=f32[B,S,1024]
        def f(x):
            return x
        """
    )
    assert e.inputs[0].shape == (8, 2048, 1024)


def test_symbolic_dims_from_config():
    source = """
    # solar: x=f32[B, S, 64]
    def f(x):
        return x
    """
    e = one(source, config={"dims": {"B": 4, "S": 128}})
    assert e.inputs[0].shape == (4, 128, 64)
    # a dim defined in the pragma takes precedence over config
    e = one(source.replace("x=", "S=3, x="), config={"dims": {"B": 4, "S": 128}})
    assert e.inputs[0].shape == (4, 3, 64)


def test_arithmetic_dims():
    specs, _, _ = parse_pragma(
        "S=16, D=64, H=D//4, x=f32[S*2, D//4, (S+1)*2, H-1, D/2, 2**3, -(-S), S%5]"
    )
    assert specs[0].shape == (32, 16, 34, 15, 32, 8, 16, 1)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("x=f32[D/3]", "not an integer"),
        ("x=f32[S-20]", "negative"),
        ("x=f32[S//0]", "division by zero"),
        ("x=f32[2**1000]", "exponent too large"),
        ("x=f32[__import__('os')]", "unsupported expression"),
        ("x=f32[S.real]", "unsupported expression"),
        ("x=f32[1.5]", "not an integer"),
        ("x=f32[S,,]", "cannot parse"),
    ],
)
def test_bad_dim_expressions(text, needle):
    with pytest.raises(PragmaError, match=needle) as ei:
        parse_pragma("S=16, D=64, " + text, line=7)
    assert ei.value.line == 7
    assert "line 7" in str(ei.value)


def test_undefined_dim_names_symbol_and_line():
    source = """
    import torch

    # solar: x=f32[B, 16]
    def f(x):
        return x
    """
    with pytest.raises(PragmaError) as ei:
        discover(src(source))
    assert ei.value.line == 3
    assert "'B'" in str(ei.value) and "line 3" in str(ei.value)
    assert isinstance(ei.value, DiscoveryError)


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize(
    "name, canon, size",
    [
        ("f64", "float64", 8),
        ("f32", "float32", 4),
        ("f16", "float16", 2),
        ("bf16", "bfloat16", 2),
        ("i64", "int64", 8),
        ("i32", "int32", 4),
        ("i16", "int16", 2),
        ("i8", "int8", 1),
        ("u8", "uint8", 1),
        ("bool", "bool", 1),
        ("f8e4m3", "float8_e4m3fn", 1),
        ("f8e5m2", "float8_e5m2", 1),
        ("float32", "float32", 4),
        ("float16", "float16", 2),
        ("bfloat16", "bfloat16", 2),
        ("int64", "int64", 8),
        ("int32", "int32", 4),
        ("int8", "int8", 1),
        ("uint8", "uint8", 1),
        ("float8_e4m3fn", "float8_e4m3fn", 1),
        ("float8_e5m2", "float8_e5m2", 1),
        ("torch.bfloat16", "bfloat16", 2),
    ],
)
def test_dtypes(name, canon, size):
    (spec,), _, _ = parse_pragma(f"x={name}[2, 3]")
    assert spec == TensorSpec("x", canon, (2, 3))
    assert dtype_size(canon) == size and dtype_size(name) == size
    assert spec.nbytes == 6 * size


def test_dtype_aliases_table():
    assert DTYPE_ALIASES["bf16"] == "bfloat16"
    assert DTYPE_ALIASES["f8e4m3"] == "float8_e4m3fn"
    with pytest.raises(ValueError):
        dtype_size("f33")


def test_dtypes_match_torch():
    torch = pytest.importorskip("torch")
    for canon in set(DTYPE_ALIASES.values()):
        assert getattr(torch, canon).itemsize == dtype_size(canon)


def test_unknown_dtype_names_it_and_line():
    with pytest.raises(PragmaError) as ei:
        discover("\n\ndef f(x):  # solar: x=f33[8]\n    return x\n")
    assert ei.value.line == 3
    assert "unknown dtype 'f33'" in str(ei.value) and "line 3" in str(ei.value)


def test_zero_d_tensor_and_missing_shape():
    (spec,), _, _ = parse_pragma("x=f32[]")
    assert spec.shape == () and spec.scalar is None and not spec.is_scalar
    with pytest.raises(PragmaError, match="needs a shape"):
        parse_pragma("x=f32")


def test_scalars():
    specs, _, _ = parse_pragma("S=4, n=int:S*2, eps=float:1e-5, flag=bool:True, x=f32[n]")
    n, eps, flag, x = specs
    assert n == TensorSpec("n", "int", (), 8) and n.is_scalar
    assert eps == TensorSpec("eps", "float", (), 1e-5) and isinstance(eps.scalar, float)
    assert flag == TensorSpec("flag", "bool", (), True)
    assert x.shape == (8,)
    with pytest.raises(PragmaError, match="True or False"):
        parse_pragma("flag=bool:1")


@pytest.mark.parametrize(
    "text, needle",
    [
        ("x f32[8]", "expected name=value"),
        ("x=f32[8], x=f32[9]", "given twice"),
        ("x=", "missing value"),
        ("x=f32[(8]", "unbalanced|unclosed"),
        ("init={1: 2}", "not an identifier"),
        ("init={'a': {'b': 1}}", "nested"),
    ],
)
def test_malformed_pragmas(text, needle):
    with pytest.raises(PragmaError, match=needle):
        parse_pragma(text)


def test_parse_pragma_accepts_prefix_and_empty():
    specs, _, _ = parse_pragma("# solar: x=f32[1]")
    assert specs == [TensorSpec("x", "float32", (1,))]
    assert parse_pragma("") == ([], (), ())


# --------------------------------------------------------------------------- signature


def test_inputs_are_put_in_parameter_order():
    e = one(
        """
        def f(a, b, *, scale):  # solar: scale=float:0.5, b=f32[2], a=f32[1]
            return a
        """
    )
    assert [s.name for s in e.inputs] == ["a", "b", "scale"]


def test_signature_mismatch_is_a_pragma_error():
    with pytest.raises(PragmaError, match="'y' is not a parameter of 'f'"):
        discover("def f(x):  # solar: x=f32[1], y=f32[1]\n    return x\n")
    with pytest.raises(PragmaError, match="no input given for parameter 'w'") as ei:
        discover("\n# solar: x=f32[1]\ndef f(x, w):\n    return x\n")
    assert ei.value.line == 2
    # defaults, *args/**kwargs and inherited forward are fine
    discover("def f(x, w=None):  # solar: x=f32[1]\n    return x\n")
    discover("def f(*xs):  # solar: a=f32[1], b=f32[1]\n    return xs\n")
    discover("import torch\nclass M(torch.nn.Linear):  # solar: q=f32[1], init=(1, 1)\n    pass\n")


def test_init_on_function_is_an_error():
    with pytest.raises(PragmaError, match="only valid for a class"):
        discover("def f(x):  # solar: x=f32[1], init=(1,)\n    return x\n")


# --------------------------------------------------------------------------- config entries


def test_config_entries():
    source = """
    import torch

    def f(x, w):
        return x @ w

    def not_an_entry(x):
        return x
    """
    cfg = {"dims": {"D": 16}, "entries": {"f": "x=f32[8, D], w=f32[D, D]", "missing": "x=f32[1]"}}
    e = one(source, config=cfg)
    assert e.name == "f" and e.kind == "function" and e.line == 3
    assert e.inputs == (TensorSpec("x", "float32", (8, 16)), TensorSpec("w", "float32", (16, 16)))
    assert e.pragma == "x=f32[8, D], w=f32[D, D]" and e.pragma_line is None


def test_config_entry_overrides_source_pragma_and_path_scoping():
    source = "# solar: x=f32[1]\ndef f(x):\n    return x\n"
    e = one(source, path="pkg/mod.py", config={"entries": {"pkg/mod.py::f": "x=f32[2]"}})
    assert e.inputs[0].shape == (2,)
    e = one(source, path="pkg/mod.py", config={"entries": {"other.py::f": "x=f32[2]"}})
    assert e.inputs[0].shape == (1,)


def test_bad_config_entry_reports_def_line():
    with pytest.raises(PragmaError, match="config entry 'f'.*unknown dtype 'q8'") as ei:
        discover("\n\ndef f(x):\n    return x\n", config={"entries": {"f": "x=q8[1]"}})
    assert ei.value.line == 3


def test_bad_config_values():
    with pytest.raises(DiscoveryError, match="dim 'B'"):
        discover("", config={"dims": {"B": "8"}})
    with pytest.raises(DiscoveryError, match="entry"):
        discover("", config={"entries": {"f": 3}})


# --------------------------------------------------------------------------- errors, files


def test_syntax_error_reports_line_and_col():
    source = "import torch\n\ndef f(x):\n    return x +\n"
    with pytest.raises(DiscoveryError) as ei:
        discover(source)
    err = ei.value
    assert err.line == 4 and err.col is not None and err.col >= 1
    assert str(err).startswith(f"syntax error at line 4, col {err.col}: ")
    assert not isinstance(err, PragmaError)


def test_file_is_never_imported_or_run(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.py"
    path.write_text(
        src(
            f"""
            import nonexistent_module_xyz
            open({str(marker)!r}, "w").write("ran")
            raise RuntimeError("must not run")

            # solar: x=f32[4]
            def f(x):
                return x
            """
        )
    )
    modules_before = set(sys.modules)
    (e,) = discover_file(path)
    assert e.name == "f" and e.inputs == (TensorSpec("x", "float32", (4,)),)
    assert not marker.exists()
    assert (
        "nonexistent_module_xyz" not in sys.modules
        and "evil" not in set(sys.modules) - modules_before
    )


def test_discover_file_errors(tmp_path):
    with pytest.raises(DiscoveryError, match="cannot read") as ei:
        discover_file(tmp_path / "missing.py")
    assert ei.value.line is None
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"x = 1\ny = '\xff'\n")
    with pytest.raises(DiscoveryError, match="UTF-8") as ei:
        discover_file(bad)
    assert (ei.value.line, ei.value.col) == (2, 6)
    bom = tmp_path / "bom.py"
    bom.write_bytes("\ufeffdef f(x):  # solar: x=f32[1]\n    return x\n".encode())
    assert [e.name for e in discover_file(bom)] == ["f"]


def test_pragma_like_text_in_strings_is_not_a_pragma():
    source = '''
    def f(x):
        """
        # solar: x=f32[8]
        """
        return x
    s = "# solar: x=f32[8]"
    def g(x): return x
    '''
    assert discover(src(source)) == []


# --------------------------------------------------------------------------- frontends


def test_jax_function():
    e = one(
        """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def f(x, w):  # solar: x=f32[8, 16], w=bf16[16, 4]
            return jnp.dot(x, w)
        """
    )
    assert e.frontend == "jax" and e.kind == "function"


def test_flax_module():
    e = one(
        """
        import flax.linen as nn

        # solar: x=f32[4, 8], init={"features": 16}
        class Dense(nn.Module):
            features: int

            @nn.compact
            def __call__(self, x):
                return nn.Dense(self.features)(x)
        """
    )
    assert (e.kind, e.frontend, e.init_kwargs) == ("module", "jax", (("features", 16),))


def test_torch_module_in_file_that_also_imports_jax():
    entries = discover(
        src(
            """
            import jax.numpy as jnp
            import torch
            from torch import nn

            class M(nn.Module):  # solar: x=f32[2]
                def forward(self, x):
                    return x

            def t(x):  # solar: x=f32[2]
                return torch.relu(x)

            def j(x):  # solar: x=f32[2]
                return jnp.tanh(x)
            """
        )
    )
    assert [(e.name, e.frontend) for e in entries] == [("M", "torch"), ("t", "torch"), ("j", "jax")]


def test_default_frontend_is_torch():
    assert one("def f(x):  # solar: x=f32[2]\n    return x\n").frontend == "torch"


def test_async_function_with_pragma_is_an_error():
    with pytest.raises(PragmaError, match="async function 'f'"):
        discover("async def f(x):  # solar: x=f32[1]\n    return x\n")


def test_int_scalar_sizes_later_tensors():
    e = one("def f(n, x):  # solar: n=int:4, x=f32[n, 2*n]\n    return x\n")
    assert e.inputs == (TensorSpec("n", "int", (), 4), TensorSpec("x", "float32", (4, 8)))
