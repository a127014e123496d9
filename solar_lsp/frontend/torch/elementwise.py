"""Lowerings of elementwise ATen ops: unary and binary math, bit operations, activations,
casts and copies, each one kernel over the output's index space (broadcast operands read
through their own index)."""

from __future__ import annotations

import math
from collections.abc import Callable

from solar_lsp.frontend.builders import CAST
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.torch.context import LOWERINGS, Ctx, lowers
from solar_lsp.ir.core import SCALAR_FUNCS, Expr, call


def _unary(fn: Callable[..., Expr]):
    return lambda c, a, kw: c.ew(fn, a[0])


def _binary(fn: Callable[..., Expr]):
    return lambda c, a, kw: c.ew(fn, a[0], a[1])


def gelu_expr(x: Expr, approximate: str = "none") -> Expr:
    """GELU as IR math: the erf form, or torch's tanh approximation."""
    if approximate == "tanh":
        inner = call("mul", math.sqrt(2 / math.pi),
                     call("add", x, call("mul", 0.044715, call("mul", x, call("mul", x, x)))))
        return call("mul", call("mul", 0.5, x), call("add", 1.0, call("tanh", inner)))
    return call("mul", call("mul", 0.5, x), call("add", 1.0, call("erf", call("mul", x, 1 / math.sqrt(2)))))


def softplus_expr(x: Expr, beta: float = 1.0, threshold: float = 20.0) -> Expr:
    """Softplus as IR math, linear above the threshold as torch computes it."""
    bx = call("mul", x, beta)
    return call("where", call("gt", bx, threshold), x, call("div", call("log1p", call("exp", bx)), beta))


UNARY: dict[str, Callable[[Expr], Expr]] = {
    "abs": lambda x: call("abs", x), "neg": lambda x: call("neg", x),
    "exp": lambda x: call("exp", x), "exp2": lambda x: call("exp2", x), "expm1": lambda x: call("expm1", x),
    "log": lambda x: call("log", x), "log2": lambda x: call("log2", x), "log1p": lambda x: call("log1p", x),
    "log10": lambda x: call("div", call("log", x), math.log(10)),
    "sqrt": lambda x: call("sqrt", x), "rsqrt": lambda x: call("rsqrt", x),
    "tanh": lambda x: call("tanh", x), "sigmoid": lambda x: call("sigmoid", x),
    "erf": lambda x: call("erf", x), "sin": lambda x: call("sin", x), "cos": lambda x: call("cos", x),
    "tan": lambda x: call("tan", x), "atan": lambda x: call("atan", x),
    "asin": lambda x: call("asin", x), "acos": lambda x: call("acos", x),
    "sinh": lambda x: call("sinh", x), "cosh": lambda x: call("cosh", x),
    "asinh": lambda x: call("asinh", x), "acosh": lambda x: call("acosh", x),
    "atanh": lambda x: call("atanh", x),
    "reciprocal": lambda x: call("reciprocal", x), "floor": lambda x: call("floor", x),
    "ceil": lambda x: call("ceil", x), "round": lambda x: call("round", x),
    "trunc": lambda x: call("trunc", x), "sign": lambda x: call("sign", x),
    "relu": lambda x: call("max", x, 0.0),
    "silu": lambda x: call("mul", x, call("sigmoid", x)),
    "mish": lambda x: call("mul", x, call("tanh", softplus_expr(x))),
    "hardsigmoid": lambda x: call("div", call("min", call("max", call("add", x, 3.0), 0.0), 6.0), 6.0),
    "hardswish": lambda x: call("mul", x, call("div", call("min", call("max", call("add", x, 3.0), 0.0), 6.0), 6.0)),
    "logical_not": lambda x: call("not", x),
    "isnan": lambda x: call("isnan", x), "isinf": lambda x: call("isinf", x),
    "square": lambda x: call("mul", x, x),
}
for _n, _f in UNARY.items():
    LOWERINGS[f"aten.{_n}.default"] = _unary(_f)

BINARY: dict[str, Callable[[Expr, Expr], Expr]] = {
    "mul": lambda a, b: call("mul", a, b), "div": lambda a, b: call("div", a, b),
    "pow": lambda a, b: call("pow", a, b), "maximum": lambda a, b: call("max", a, b),
    "minimum": lambda a, b: call("min", a, b), "eq": lambda a, b: call("eq", a, b),
    "ne": lambda a, b: call("ne", a, b), "lt": lambda a, b: call("lt", a, b),
    "le": lambda a, b: call("le", a, b), "gt": lambda a, b: call("gt", a, b),
    "ge": lambda a, b: call("ge", a, b), "logical_and": lambda a, b: call("and", a, b),
    "logical_or": lambda a, b: call("or", a, b), "logical_xor": lambda a, b: call("xor", a, b),
    "atan2": lambda a, b: call("atan2", a, b),
    "remainder": lambda a, b: call("remainder", a, b), "fmod": lambda a, b: call("fmod", a, b),
    "floor_divide": lambda a, b: call("floordiv", a, b),
}
for _n, _f in BINARY.items():
    for _ov in ("Tensor", "Scalar", "default", "Tensor_Scalar", "Scalar_Tensor", "Tensor_Tensor"):
        LOWERINGS[f"aten.{_n}.{_ov}"] = _binary(_f)


# Integer bit operations: torch name -> (IR function on integers, IR function on bool).
# On bool tensors torch's bitwise and/or/xor/not are the logical ones.
BITWISE: dict[str, tuple[str, str | None]] = {
    "bitwise_and": ("band", "and"), "bitwise_or": ("bor", "or"), "bitwise_xor": ("bxor", "xor"),
    "bitwise_not": ("bnot", "not"), "bitwise_left_shift": ("shl", None), "__lshift__": ("shl", None),
    "bitwise_right_shift": ("shr", None), "__rshift__": ("shr", None),
}
_INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
# casts that wrap a value to the fixed width of an output narrower than int64 (int16 has none:
# an overflowing int16 shift is left unwrapped, and verification says so)
_WRAP = {"int32": "cast_i32", "int8": "cast_i8", "uint8": "cast_u8"}


def _bitwise(c: Ctx, a: tuple, kw: dict) -> None:
    """Two's-complement bit operations; a result that can leave the output's integer range
    (a left shift, ~ on uint8) wraps to it, as torch's fixed-width integers do."""
    base = str(c.node.target).split(".")[1]
    on_int, on_bool = BITWISE[base]
    od = c.dtype(c.out)
    if od == "bool" and on_bool:
        fn = on_bool
    elif od in _INT_DTYPES:
        fn = on_int
    else:
        raise Unsupported(f"{base} on dtype {od}")
    wrap = _WRAP.get(od) if fn in ("shl", "bnot") else None

    def expr(*xs: Expr) -> Expr:
        e = call(fn, *xs)
        return call(wrap, e) if wrap else e
    c.ew(expr, *a[:SCALAR_FUNCS[fn][0]])


for _n in BITWISE:
    for _ov in ("default", "Tensor", "Scalar", "Tensor_Scalar", "Scalar_Tensor"):
        LOWERINGS[f"aten.{_n}.{_ov}"] = _bitwise


@lowers("aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar",
        "aten.rsub.Tensor", "aten.rsub.Scalar")
def _add_sub(c: Ctx, a: tuple, kw: dict) -> None:
    alpha = kw.get("alpha", a[2] if len(a) > 2 else 1)
    fn = "add" if "add" in str(c.node.target) else "sub"
    x, y = (a[1], a[0]) if "rsub" in str(c.node.target) else (a[0], a[1])
    if alpha == 1:
        c.ew(lambda p, q: call(fn, p, q), x, y)
    else:
        c.ew(lambda p, q: call(fn, p, call("mul", q, float(alpha))), x, y)


@lowers("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div_mode(c: Ctx, a: tuple, kw: dict) -> None:
    mode = kw.get("rounding_mode")
    post = {"floor": "floor", "trunc": "trunc"}.get(mode)
    c.ew(lambda p, q: call(post, call("div", p, q)) if post else call("div", p, q), a[0], a[1])


@lowers("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(c: Ctx, a: tuple, kw: dict) -> None:
    c.ew(lambda p, x, y: call("where", p, x, y), a[0], a[1], a[2])


@lowers("aten.clamp.default", "aten.clamp.Tensor", "aten.hardtanh.default",
        "aten.clamp_min.default", "aten.clamp_max.default")
def _clamp(c: Ctx, a: tuple, kw: dict) -> None:
    target = str(c.node.target)
    if "hardtanh" in target:
        lo, hi = (a[1] if len(a) > 1 else -1.0), (a[2] if len(a) > 2 else 1.0)
    elif "clamp_min" in target:
        lo, hi = a[1], None
    elif "clamp_max" in target:
        lo, hi = None, a[1]
    else:
        lo = a[1] if len(a) > 1 else kw.get("min")
        hi = a[2] if len(a) > 2 else kw.get("max")
    args = [a[0]] + [v for v in (lo, hi) if v is not None]

    def fn(x, *bounds):
        it = iter(bounds)
        e = x
        if lo is not None:
            e = call("max", e, next(it))
        if hi is not None:
            e = call("min", e, next(it))
        return e
    c.ew(fn, *args)


@lowers("aten.gelu.default")
def _gelu(c: Ctx, a: tuple, kw: dict) -> None:
    approx = kw.get("approximate", a[1] if len(a) > 1 else "none")
    c.ew(lambda x: gelu_expr(x, approx), a[0])


@lowers("aten.leaky_relu.default")
def _leaky(c: Ctx, a: tuple, kw: dict) -> None:
    slope = a[1] if len(a) > 1 else 0.01
    c.ew(lambda x: call("where", call("gt", x, 0.0), x, call("mul", x, float(slope))), a[0])


@lowers("aten.elu.default")
def _elu(c: Ctx, a: tuple, kw: dict) -> None:
    alpha = a[1] if len(a) > 1 else 1.0
    c.ew(lambda x: call("where", call("gt", x, 0.0), x, call("mul", float(alpha), call("expm1", x))), a[0])


@lowers("aten.softplus.default")
def _softplus(c: Ctx, a: tuple, kw: dict) -> None:
    beta = a[1] if len(a) > 1 else 1.0
    th = a[2] if len(a) > 2 else 20.0
    c.ew(lambda x: softplus_expr(x, float(beta), float(th)), a[0])


@lowers("aten._to_copy.default", "aten.clone.default", "aten.contiguous.default",
        "aten.to.dtype", "aten.copy.default", "aten.lift_fresh_copy.default")
def _copy(c: Ctx, a: tuple, kw: dict) -> None:
    src = a[1] if "aten.copy" in str(c.node.target) else a[0]
    od, idt = c.dtype(c.out), c.dtype(c.t(src))
    if od != idt:
        c.ew(lambda x: call(CAST[od], x), src)
    else:
        c.ew(lambda x: x, src)


@lowers("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(c: Ctx, a: tuple, kw: dict) -> None:
    c.ew(lambda x, m, v: call("where", m, v, x), a[0], a[1], a[2])


@lowers("aten.lerp.Scalar", "aten.lerp.Tensor")
def _lerp(c: Ctx, a: tuple, kw: dict) -> None:
    c.ew(lambda s, e, w: call("add", s, call("mul", w, call("sub", e, s))), a[0], a[1], a[2])


@lowers("aten.addcmul.default", "aten.addcdiv.default")
def _addc(c: Ctx, a: tuple, kw: dict) -> None:
    v = float(kw.get("value", a[3] if len(a) > 3 else 1.0))
    op = "mul" if "addcmul" in str(c.node.target) else "div"
    c.ew(lambda s, t1, t2: call("add", s, call("mul", v, call(op, t1, t2))), a[0], a[1], a[2])
