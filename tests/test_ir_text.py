"""Text form of the Affine Loop IR: printer/parser round trips and the validator."""

from __future__ import annotations

import math
import textwrap

import pytest

from solar_lsp.ir.core import (
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
from solar_lsp.ir.text import (
    PRELUDE,
    IRSyntaxError,
    parse_kernel,
    parse_program,
    print_kernel,
    print_program,
)
from solar_lsp.ir.validate import IRValidationError, validate_kernel, validate_program

V = Affine.var


def ld(t: str, *idx: Affine | str | int) -> Load:
    return Load(t, tuple(V(i) if isinstance(i, str) else Affine.of(i) if isinstance(i, int) else i
                         for i in idx))


def f32(*shape: int) -> TensorType:
    return TensorType(tuple(shape), "float32")


# ------------------------------------------------------------------ programs


def matmul_program() -> Program:
    k = Kernel("k0", (("m", 8), ("n", 256), ("k", 64)), ld("t0", "m", "n"), "+=",
               call("mul", ld("x", "m", "k"), ld("wt", "k", "n")), unit="matrix")
    relu = Kernel("k1", (("m", 8), ("n", 256)), ld("t1", "m", "n"), "=",
                  call("max", ld("t0", "m", "n"), 0.0))
    return Program(
        "Model",
        tensors={"x": f32(8, 64), "w": f32(256, 64), "wt": f32(64, 256),
                 "t0": f32(8, 256), "t1": f32(8, 256)},
        ops=[
            Op("permute_0", "aten.permute.default", 11, ["w"], ["wt"], kind="view",
               call=("permute", (1, 0))),
            Op("linear_1", "aten.linear.default", 12, ["x", "wt"], ["t0"], [k]),
            Op("relu_2", "aten.relu.default", None, ["t0"], ["t1"], [relu]),
        ],
        inputs=["x"], params=["w"], outputs=["t1"], views={"wt": "w"},
    )


def conv_program() -> Program:
    """3x3 conv, stride 2, padding 1: x[1,3,8,8] * w[4,3,3,3] -> y[1,4,4,4]."""
    ih = V("oh", 2) + V("kh") + (-1)
    iw = V("ow", 2) + V("kw") + (-1)
    k = Kernel(
        "k0",
        (("b", 1), ("co", 4), ("oh", 4), ("ow", 4), ("ci", 3), ("kh", 3), ("kw", 3)),
        ld("y", "b", "co", "oh", "ow"), "+=",
        call("mul", ld("x", "b", "ci", ih, iw), ld("w", "co", "ci", "kh", "kw")),
        guards=(Guard(ih, 0, 8), Guard(iw, 0, 8)), unit="matrix",
    )
    return Program(
        "Conv",
        tensors={"x": f32(1, 3, 8, 8), "w": f32(4, 3, 3, 3), "y": f32(1, 4, 4, 4)},
        ops=[Op("conv_0", "aten.convolution.default", 3, ["x", "w"], ["y"], [k])],
        inputs=["x"], params=["w"], outputs=["y"],
    )


def softmax_program() -> Program:
    loops2 = (("i", 4), ("j", 16))
    ks = [
        Kernel("k0", loops2, ld("mx", "i"), "max=", ld("x", "i", "j")),
        Kernel("k1", loops2, ld("e", "i", "j"), "=",
               call("exp", call("sub", ld("x", "i", "j"), ld("mx", "i")))),
        Kernel("k2", loops2, ld("s", "i"), "+=", ld("e", "i", "j")),
        Kernel("k3", loops2, ld("y", "i", "j"), "=", call("div", ld("e", "i", "j"), ld("s", "i"))),
    ]
    return Program(
        "Softmax",
        tensors={"x": f32(4, 16), "mx": f32(4), "e": f32(4, 16), "s": f32(4), "y": f32(4, 16)},
        ops=[Op("softmax_0", "aten._softmax.default", 7, ["x"], ["y"], ks)],
        inputs=["x"], outputs=["y"],
    )


def misc_program() -> Program:
    """Casts, a tril mask with Index, all assign ops, constants, gather and expand views."""
    i, j = V("i"), V("j")
    cast = Kernel("k0", (("i", 4), ("j", 4)), ld("h", "i", "j"), "=", call("cast_f16", ld("x", "i", "j")))
    tril = Kernel("k0", (("i", 4), ("j", 4)), ld("m", "i", "j"), "=",
                  call("where", call("le", Index(j), Index(i)), ld("x", "i", "j"), float("-inf")))
    prod = Kernel("k1", (("i", 4), ("j", 4)), ld("p", "i"), "*=",
                  call("add", ld("m", "i", "j"), 1.5), init="keep")
    mn = Kernel("k2", (("i", 4), ("j", 4)), ld("q", "i"), "min=",
                call("sub", ld("x", "i", "j"), call("sub", Const(2.0), Index(i * 3 + (-1)))))
    # nested arithmetic needing parentheses, negative constants, and/or/not
    arith = Kernel("k3", (("i", 4),), ld("r", "i"), "=",
                   call("div", call("mul", call("add", ld("p", "i"), Const(-1.0)), ld("q", "i")),
                        call("sub", Const(1e-30), call("neg", ld("q", "i")))))
    logic = Kernel("k4", (("i", 4),), ld("r", "i"), "=",
                   call("where", call("and", call("not", call("isnan", ld("r", "i"))),
                                      call("or", call("gt", ld("q", "i"), math.inf), Const(0.0))),
                        ld("r", "i"), call("pow", ld("q", "i"), 2.0)))
    # '=' whose right side looks like the max= form: must stay '='
    selfmax = Kernel("k5", (("i", 4),), ld("r", "i"), "=", call("max", ld("r", "i"), 0.0))
    # one-sided guards, a both-sided guard, scalar output, out-of-order affine terms
    shifted = Kernel("k0", (("i", 4), ("j", 4)), ld("z"), "+=", ld("x", V("j") + V("i", 1) + (-1), "j"),
                     guards=(Guard(V("j") + V("i") + (-1), 0, None), Guard(V("j") + V("i") + (-1), None, 4),
                             Guard(V("i", -1) + 3, 0, 4)))
    return Program(
        "Misc",
        tensors={"x": f32(4, 4), "h": TensorType((4, 4), "float16"), "m": f32(4, 4),
                 "p": f32(4), "q": f32(4), "r": f32(4), "z": f32(), "xb": f32(2, 4, 4),
                 "ids": TensorType((3,), "int64"), "g": f32(3, 4),
                 "b8": TensorType((2,), "bfloat16"), "e8": TensorType((2,), "float8_e4m3fn"),
                 "odd": TensorType((2,), "complex64")},
        ops=[
            Op("to_0", "aten._to_copy.default", 1, ["x"], ["h"], [cast]),
            Op("fused_1", "aten.masked_fill.Scalar", None, ["x", "p"], ["r", "q"],
               [tril, prod, mn, arith, logic, selfmax], note="tril then reductions"),
            Op("sum_2", "aten.sum.default", 5, ["x"], ["z"], [shifted]),
            Op("expand_3", "aten.expand.default", 6, ["x"], ["xb"], kind="view", call=("expand", (2, 4, 4))),
            Op("index_select_4", "aten.index_select.default", 7, ["x", "ids"], ["g"], kind="gather",
               call=("index_select", 0)),
            Op("slice_5", "aten.slice.Tensor", None, ["x"], ["g"], kind="view",
               call=("slice", 0, 1, None, 1)),
            Op("odd.6", "custom.op", None, ["x"], [], kind="view", call=None),
            Op("split_7", "aten.split.Tensor", 9, ["x"], ["q", "p"], kind="view", call=("split", 2, -1.5)),
        ],
        inputs=["x", "ids"], outputs=["r", "z"], views={"xb": "x"}, unique={"xb": 16},
    )


PROGRAMS = [matmul_program, conv_program, softmax_program, misc_program]


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("make", PROGRAMS, ids=lambda f: f.__name__)
def test_round_trip(make):
    p = make()
    text = print_program(p)
    q = parse_program(text)
    assert q == p, text
    assert print_program(q) == text


@pytest.mark.parametrize("make", PROGRAMS[:3], ids=lambda f: f.__name__)
def test_examples_validate(make):
    validate_program(make())
    validate_program(parse_program(print_program(make())))


@pytest.mark.parametrize("make", PROGRAMS, ids=lambda f: f.__name__)
def test_text_is_executable_python(make):
    ns: dict = {}
    exec(PRELUDE, ns)
    exec(compile(print_program(make()), "<ir>", "exec"), ns)


def test_kernel_text_runs_as_python():
    """The kernel text computes with numpy arrays under the prelude."""
    import numpy as np

    p = conv_program()
    k = p.ops[0].kernels[0]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = np.zeros((1, 4, 4, 4), np.float32)
    ns: dict = {}
    exec(PRELUDE, ns)
    ns.update(x=x, w=w, y=y)
    exec(print_kernel(k, p.tensors), ns)
    ns[k.name]()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros_like(y)
    for oh in range(4):
        for ow in range(4):
            patch = xp[0, :, 2 * oh:2 * oh + 3, 2 * ow:2 * ow + 3]
            ref[0, :, oh, ow] = np.einsum("chw,ochw->o", patch, w)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_nan_constants_round_trip():
    # dataclass equality holds for nan only through identity: the parser yields math.nan
    k = Kernel("k0", (("i", 4),), ld("y", "i"), "=",
               call("where", call("isnan", ld("x", "i")), math.nan, call("neg", Const(math.nan))))
    text = print_kernel(k, None)
    assert "where(isnan(x[i]), nan, neg(nan))" in text
    assert parse_kernel(text) == k
    assert parse_kernel(text.replace("neg(nan)", "-nan")).expr.args[2] == Const(math.nan)


def test_printed_text_shape():
    text = print_program(matmul_program())
    assert "x: f32[8, 64]  # input" in text
    assert "wt = w.permute((1, 0))" in text
    assert '@op("aten.linear.default", line=12)' in text
    assert "def linear_1(x, wt) -> t0:" in text
    assert '@kernel(unit="matrix", init="identity")' in text
    assert "t0[m, n] += x[m, k] * wt[k, n]" in text
    assert "t1[m, n] = max(t0[m, n], 0.0)" in text
    misc = print_program(misc_program())
    assert "g = gather.index_select(x, 0, ids)" in misc
    assert "where(le(idx(j), idx(i)), x[i, j], -inf)" in misc
    assert "(p[i] + -1.0) * q[i] / (1e-30 - neg(q[i]))" in misc
    assert "and_(not_(isnan(r[i])), or_(gt(q[i], inf), 0.0))" in misc
    assert "q[i] = min(q[i], x[i, j] - (2.0 - idx(3*i - 1)))" in misc
    assert '@kernel(op="=")' in misc
    assert "if j + i - 1 >= 0 and j + i - 1 < 4 and 0 <= -i + 3 < 4:" in misc
    assert "z[()] += x[j + i - 1, j]" in misc
    assert "e8: f8e4m3[2]" in misc and "odd: complex64[2]" in misc and "z: f32[()]" in misc
    assert '@op("custom.op", id="odd.6", kind="view")' in misc


def test_parse_kernel_and_convenience_forms():
    k = parse_kernel("""
        # a comment
        @kernel(init="keep")
        def k7():
            for i in range(4):
                for j in range(3):
                    if 1 <= 2*i - j <= 5 and i > 0:
                        y[i] += add(x[2*(i + 1) - j], -x[j]) ** 2.0 if x[i] < 1 else 0
    """)
    i, j = V("i"), V("j")
    assert k.name == "k7" and k.init == "keep" and k.op == "+="
    assert k.loops == (("i", 4), ("j", 3))
    assert k.guards == (Guard(Affine((("i", 2), ("j", -1)), 0), 1, 6), Guard(i, 1, None))
    xi = Load("x", (Affine((("i", 2), ("j", -1)), 2),))
    assert k.expr == Call("where", (
        Call("lt", (ld("x", "i"), Const(1.0))),
        Call("pow", (Call("add", (xi, Call("neg", (Load("x", (j,)),)))), Const(2.0))),
        Const(0.0),
    ))
    assert parse_kernel(print_kernel(k, {})) == k


# ------------------------------------------------------------------ syntax errors


def _kernel_text(stmt: str, loops=(("i", 4), ("j", 4)), deco="@kernel()") -> str:
    lines = [deco, "def kbad():"]
    d = 1
    for v, e in loops:
        lines.append("    " * d + f"for {v} in range({e}):")
        d += 1
    lines.append("    " * d + stmt)
    return "\n".join(lines) + "\n"


def test_non_affine_index_is_rejected():
    with pytest.raises(IRSyntaxError) as ei:
        parse_kernel(_kernel_text("y[i] += x[i*j]"))
    msg = str(ei.value)
    assert "kernel 'kbad': index 'i*j' of 'x' is not affine in the loop variables" in msg
    assert ei.value.lineno == 5


@pytest.mark.parametrize("text, needle", [
    ("y[i] = x[i] if True else 0\nz = 1", "exactly one `@kernel"),
    (_kernel_text("y[i] -= x[i, j]"), "augmented"),
    (_kernel_text("y[i] += i"), "idx(i)"),
    (_kernel_text("y[i] += x[i:j]"), "slices"),
    (_kernel_text("y[i] += x[i // 2]"), "not affine"),
    ("@kernel()\ndef k():\n    for i in range(4):\n        y[i] = 1.0\n        y[i] = 2.0\n", "perfect loop nest"),
    ("@kernel()\ndef k():\n    for i in range(0, 4):\n        y[i] = 1.0\n", "range(N)"),
    ("@kernel()\ndef k(:\n", "syntax"),
])
def test_syntax_errors(text, needle):
    with pytest.raises(IRSyntaxError) as ei:
        parse_kernel(text)
    assert needle in str(ei.value)
    assert ei.value.lineno is not None


def test_program_syntax_errors():
    good = print_program(softmax_program())
    with pytest.raises(IRSyntaxError, match="missing the program"):
        parse_program("\n".join(ln for ln in good.splitlines() if not ln.startswith("program(")))
    with pytest.raises(IRSyntaxError, match="outside the IR subset"):
        parse_program(good.replace('program("Softmax"', 'prog("Softmax"'))
    bad = good.replace("e[i, j] = exp(x[i, j] - mx[i])", "e[i, j] = exp(x[i, j] - mx[i]); print(1)")
    with pytest.raises(IRSyntaxError, match="kernel 'k1'"):
        parse_program(bad)
    with pytest.raises(IRSyntaxError, match="declared twice"):
        parse_program(good.replace("mx: f32[4]", "mx: f32[4]\nmx: f32[4]"))


# ------------------------------------------------------------------ validator


TENS = {"x": f32(4, 4), "y": f32(4), "x1": f32(8), "y1": f32(8), "a": f32(4, 4), "b": f32(4, 4), "c": f32(4, 4)}


def _check(stmt: str, loops=(("i", 4), ("j", 4)), deco="@kernel()"):
    validate_kernel(parse_kernel(_kernel_text(stmt, loops, deco)), TENS)


def test_validator_accepts_basic_kernels():
    _check("y[i] += x[i, j]")
    _check("y[i] = max(y[i], exp(x[i, j]))")
    _check("c[i, j] += a[i, j] * cast_f32(b[j, i])", loops=(("i", 4), ("j", 4), ("k", 2)),
           deco='@kernel(unit="matrix")')


def test_validator_rejects_unknown_function():
    with pytest.raises(IRValidationError) as ei:
        _check("y[i] += softplus(x[i, j])")
    msg = str(ei.value)
    assert "kernel 'kbad'" in msg and "'softplus'" in msg and "not in the IR vocabulary" in msg
    assert "sigmoid" in msg  # lists what is allowed


def test_validator_rejects_wrong_arity():
    with pytest.raises(IRValidationError, match=r"kernel 'kbad': scalar function 'exp' takes 1 argument\(s\), got 2"):
        _check("y[i] += exp(x[i, j], 1.0)")
    with pytest.raises(IRValidationError, match="'where' takes 3"):
        _check("y[i] += where(x[i, j], 1.0)")


def test_validator_out_of_bounds_and_guard():
    stmt = "y1[i] = x1[i - 1]"
    with pytest.raises(IRValidationError) as ei:
        _check(stmt, loops=(("i", 8),))
    msg = str(ei.value)
    assert "kernel 'kbad'" in msg and "'x1'" in msg and "dim 0" in msg and "[-1, 6]" in msg
    _check("if 0 <= i - 1 < 8:\n            " + stmt, loops=(("i", 8),))
    _check("if i - 1 >= 0:\n            " + stmt, loops=(("i", 8),))
    # a guard on a different expression does not help, nor one wider than the tensor
    with pytest.raises(IRValidationError, match="out of bounds"):
        _check("if i >= 1:\n            " + stmt, loops=(("i", 8),))
    with pytest.raises(IRValidationError, match="out of bounds"):
        _check("if -1 <= i - 1 < 8:\n            " + stmt, loops=(("i", 8),))
    with pytest.raises(IRValidationError, match=r"'y1'.*\[1, 8\]"):
        _check("y1[i + 1] = x1[i]", loops=(("i", 8),))
    # the conv padding guards make the padded program valid; dropping them does not
    p = conv_program()
    validate_program(p)
    k = p.ops[0].kernels[0]
    p.ops[0].kernels[0] = Kernel(k.name, k.loops, k.out, k.op, k.expr, (), k.init, k.unit)
    with pytest.raises(IRValidationError, match=r"op 'conv_0'.*dim 2 of 'x'.*\[-1, 7\]"):
        validate_program(p)


def test_validator_rejects_assign_with_reduction():
    with pytest.raises(IRValidationError) as ei:
        _check("y[i] = x[i, j]")
    msg = str(ei.value)
    assert "kernel 'kbad'" in msg and "'j'" in msg and "last write wins" in msg


def test_validator_matrix_form():
    loops = (("i", 4), ("j", 4), ("k", 2))
    deco = '@kernel(unit="matrix")'
    for stmt in ("c[i, j] += a[i, j] + b[j, i]",
                 "c[i, j] = max(c[i, j], a[i, j] * b[j, i])",
                 "c[i, j] += exp(a[i, j]) * b[j, i]",
                 "c[i, j] += a[i, j] * b[j, i] * a[j, i]"):
        with pytest.raises(IRValidationError, match="matrix kernel must have the form"):
            _check(stmt, loops, deco)
    with pytest.raises(IRValidationError, match="reduction variable"):
        _check("c[i, j] += a[i, j] * b[j, i]", (("i", 4), ("j", 4)), deco)


def test_validator_other_kernel_errors():
    with pytest.raises(IRValidationError, match="not a loop variable"):
        _check("y[i] += x[i, n]")
    with pytest.raises(IRValidationError, match="bound twice"):
        _check("y[i] += x[i, i]", loops=(("i", 4), ("i", 4)))
    with pytest.raises(IRValidationError, match="positive ints"):
        _check("y[i] += x[i, j]", loops=(("i", 4), ("j", 0)))
    with pytest.raises(IRValidationError, match="rank 2"):
        _check("y[i] += x[i]")
    with pytest.raises(IRValidationError, match="'nope' is not declared"):
        _check("y[i] += nope[i, j]")
    with pytest.raises(IRValidationError, match="empty"):
        _check("if 3 <= j < 3:\n                y[i] += x[i, j]")
    k = Kernel("kx", (("i", 4),), ld("y", "i"), "-=", ld("y", "i"))
    with pytest.raises(IRValidationError, match="kernel 'kx': assignment op '-='"):
        validate_kernel(k, TENS)


def test_validate_program_dataflow():
    p = softmax_program()
    validate_program(p)
    # reading a temporary before the kernel that writes it
    op = p.ops[0]
    op.kernels = [op.kernels[1], op.kernels[0]] + op.kernels[2:]
    with pytest.raises(IRValidationError, match="op 'softmax_0': kernel 'k1': reads 'mx'"):
        validate_program(p)
    p = softmax_program()
    p.ops[0].inputs = ["x", "ghost"]
    with pytest.raises(IRValidationError, match="input tensor 'ghost' is not declared"):
        validate_program(p)
    p = matmul_program()
    p.outputs = ["t9"]
    with pytest.raises(IRValidationError, match="output 't9'"):
        validate_program(p)


def test_parsed_bad_text_fails_validation_with_line_context():
    text = textwrap.dedent("""\
        program("P", inputs=["x"], outputs=["y"])
        x: f32[4]
        y: f32[4]

        @op("aten.softplus.default", line=3)
        def softplus_0(x) -> y:
            @kernel()
            def k3():
                for i in range(4):
                    y[i] = softplus(x[i])
    """)
    with pytest.raises(IRValidationError, match="op 'softplus_0': kernel 'k3': scalar function 'softplus'"):
        validate_program(parse_program(text))


def test_training_phases_round_trip():
    """A training step's backward and optimizer ops keep their phase through the text (the
    `solar ir --mode train` output parses back to the same step)."""
    import dataclasses

    p = matmul_program()
    p.ops = [dataclasses.replace(p.ops[0], phase="backward")] + p.ops[1:]
    text = print_program(p)
    assert 'phase="backward"' in text
    q = parse_program(text)
    assert q == p and q.ops[0].phase == "backward"
    assert "phase=" not in print_program(matmul_program())  # forward ops print as before
    with pytest.raises(Exception, match="phase= must be forward, backward or optimizer"):
        parse_program(text.replace('phase="backward"', 'phase="sideways"'))
