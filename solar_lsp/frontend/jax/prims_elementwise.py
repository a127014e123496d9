"""Elementwise JAX primitives: unary and binary math, integer and bitwise ops, selection,
casts, copies and ``iota``; each is one elementwise kernel of the IR's scalar vocabulary."""

from __future__ import annotations

import math
from collections.abc import Callable

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.builders import CAST
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.jax.context import LOWERINGS, JCtx, lowers
from solar_lsp.ir.core import Affine, Const, Expr, Index, Kernel, Load, call


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


UNARY: dict[str, Callable[[Expr], Expr]] = {
    "neg": lambda x: call("neg", x), "abs": lambda x: call("abs", x),
    "sign": lambda x: call("sign", x), "floor": lambda x: call("floor", x),
    "ceil": lambda x: call("ceil", x), "exp": lambda x: call("exp", x),
    "exp2": lambda x: call("exp2", x), "log": lambda x: call("log", x),
    "log1p": lambda x: call("log1p", x), "expm1": lambda x: call("expm1", x),
    "tanh": lambda x: call("tanh", x), "logistic": lambda x: call("sigmoid", x),
    "sin": lambda x: call("sin", x), "cos": lambda x: call("cos", x),
    "tan": lambda x: call("tan", x), "atan": lambda x: call("atan", x),
    "sqrt": lambda x: call("sqrt", x), "rsqrt": lambda x: call("rsqrt", x),
    "erf": lambda x: call("erf", x), "erfc": lambda x: call("sub", 1.0, call("erf", x)),
    "square": lambda x: call("mul", x, x),
    "is_finite": lambda x: call("lt", call("abs", x), math.inf),
    "cbrt": lambda x: call("mul", call("sign", x), call("pow", call("abs", x), 1.0 / 3.0)),
    "asin": lambda x: call("asin", x), "acos": lambda x: call("acos", x),
    "sinh": lambda x: call("sinh", x), "cosh": lambda x: call("cosh", x),
    "asinh": lambda x: call("asinh", x), "acosh": lambda x: call("acosh", x),
    "atanh": lambda x: call("atanh", x),
}
for _n, _f in UNARY.items():
    LOWERINGS[_n] = (lambda f: lambda c: c.ew(f, 0))(_f)

# primitive -> scalar function of the IR vocabulary (lax.rem is C's fmod)
BINARY_FUNCS = {"add": "add", "add_any": "add", "sub": "sub", "mul": "mul", "pow": "pow",
                "max": "max", "min": "min", "rem": "fmod", "eq": "eq", "ne": "ne", "lt": "lt",
                "le": "le", "gt": "gt", "ge": "ge", "atan2": "atan2",
                # lax.shift_right_arithmetic sign-extends, like the IR's shr
                "shift_right_arithmetic": "shr"}
BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    prim: (lambda f: lambda a, b: call(f, a, b))(fn) for prim, fn in BINARY_FUNCS.items()}
for _n, _f in BINARY.items():
    LOWERINGS[_n] = (lambda f: lambda c: c.ew(f, 0, 1))(_f)


@lowers("div")
def _div(c: JCtx) -> None:
    if _is_int(c.out_dtype()):  # integer division rounds toward zero
        c.ew(lambda a, b: call("trunc", call("div", a, b)), 0, 1)
    else:
        c.ew(lambda a, b: call("div", a, b), 0, 1)


# casts that wrap an overflowing left shift to the output's fixed width (as torch_lower's
# _WRAP; other widths are left unwrapped, and verification would say so)
_WRAP = {"int32": "cast_i32", "int8": "cast_i8", "uint8": "cast_u8"}


@lowers("shift_left")
def _shift_left(c: JCtx) -> None:
    wrap = _WRAP.get(c.out_dtype())
    c.ew(lambda a, b: call(wrap, call("shl", a, b)) if wrap else call("shl", a, b), 0, 1)


@lowers("and", "or", "xor")
def _logical(c: JCtx) -> None:
    """Logical on bool, two's-complement bitwise (band/bor/bxor) on integers."""
    od = c.out_dtype()
    if od == "bool":
        c.ew(lambda a, b: call(c.prim, a, b), 0, 1)
    elif _is_int(od):
        c.ew(lambda a, b: call("b" + c.prim, a, b), 0, 1)
    else:
        raise Unsupported(f"bitwise {c.prim} on {od}")


@lowers("not")
def _not(c: JCtx) -> None:
    od = c.out_dtype()
    if od == "bool":
        c.ew(lambda a: call("not", a), 0)
    elif od.startswith("uint"):  # ~x of an n-bit unsigned value is (2^n - 1) - x
        top = float(2 ** (8 * _int_bytes(od)) - 1)
        c.ew(lambda a: call("sub", top, a), 0)
    elif od.startswith("int"):
        c.ew(lambda a: call("bnot", a), 0)
    else:
        raise Unsupported(f"bitwise not on {od}")


def _int_bytes(dtype: str) -> int:
    import numpy as np
    return np.dtype(dtype).itemsize


@lowers("round")
def _round(c: JCtx) -> None:
    method = int(getattr(c.p.get("rounding_method", 0), "value", c.p.get("rounding_method", 0)))
    if method == 1:  # to nearest even
        c.ew(lambda a: call("round", a), 0)
    else:  # half away from zero
        c.ew(lambda a: call("mul", call("sign", a), call("floor", call("add", call("abs", a), 0.5))), 0)


@lowers("integer_pow")
def _integer_pow(c: JCtx) -> None:
    y = int(c.p["y"])

    def fn(x: Expr) -> Expr:
        if y == 0:
            return Const(1.0)
        e: Expr = x
        for _ in range(abs(y) - 1):
            e = call("mul", e, x)
        return call("div", 1.0, e) if y < 0 else e
    c.ew(fn, 0)


@lowers("select_n")
def _select_n(c: JCtx) -> None:
    n = len(c.ins) - 1

    def fn(p: Expr, *cases: Expr) -> Expr:
        if n == 1:
            return cases[0]
        if n == 2:
            return call("where", p, cases[1], cases[0])
        e = cases[n - 1]
        for j in reversed(range(n - 1)):
            e = call("where", call("eq", p, float(j)), cases[j], e)
        return e
    c.ew(fn, *range(len(c.ins)))


@lowers("clamp")
def _clamp(c: JCtx) -> None:
    c.ew(lambda lo, x, hi: call("min", call("max", x, lo), hi), 0, 1, 2)


@lowers("convert_element_type")
def _convert(c: JCtx) -> None:
    od, idt = c.out_dtype(), c.in_dtype(0)
    if c.is_lit(0):
        c.fill(float(c.lit(0)))
        return
    if od == idt:  # a weak-type change: no data moves
        c.t(0)
        c.kind = "alias"
        return
    if od not in CAST:
        raise Unsupported(f"conversion to {od}")
    c.ew(lambda x: call(CAST[od], x), 0)


@lowers("stop_gradient")
def _alias(c: JCtx) -> None:
    c.t(0)
    c.kind = "alias"


@lowers("copy", "copy_p")
def _copy(c: JCtx) -> None:
    c.ew(lambda x: x, 0)


@lowers("iota")
def _iota(c: JCtx) -> None:
    shape = c.out_shape()
    vs = B.ivars(len(shape))
    d = int(c.p["dimension"])
    o = c.out()
    c.emit(Kernel(c.name("iota"), tuple(zip(vs, shape)), Load(o, B.plain(vs)), "=", Index(Affine.var(vs[d]))))
    c.lw.iota_dim[o] = d

