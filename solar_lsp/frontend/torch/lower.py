"""Lower a decomposed torch.export graph into an Affine Loop IR program.

One table maps each ATen op to a lowering; families share a builder (elementwise,
reductions, contractions, conv, pooling, norms, softmax). An op without a lowering is
never dropped: it is listed in ``unsupported`` with its line and reason.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable
from typing import Any

import torch

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.builders import CAST
from solar_lsp.frontend.errors import Lowered, Unsupported, UnsupportedOp
from solar_lsp.frontend.torch import norm_kernels as NK
from solar_lsp.frontend.torch.trace import Traced
from solar_lsp.ir.core import (
    SCALAR_FUNCS,
    Affine,
    Const,
    Expr,
    Index,
    Kernel,
    Load,
    Op,
    Program,
    TensorType,
    call,
)
from solar_lsp.ir.validate import IRValidationError, validate_kernel

Shape = tuple[int, ...]


def dtype_name(dt: torch.dtype) -> str:
    return str(dt).replace("torch.", "")


class Ctx:
    """What a lowering sees: its node, tensor names, shapes, and ways to emit kernels."""

    def __init__(self, lw: LowerState, node: Any):
        self.lw = lw
        self.node = node
        self.kernels: list[Kernel] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self._k = 0
        self.kind = "compute"
        self.call: tuple | None = None

    # -- tensors
    def t(self, arg: Any) -> str:
        """Tensor name of an fx node argument."""
        if not hasattr(arg, "name"):
            raise Unsupported(f"expected a tensor argument, got {type(arg).__name__}")
        name = self.lw.env[arg.name]
        if isinstance(name, (tuple, list)):
            raise Unsupported("tuple-valued argument")
        if name is None:
            raise Unsupported(f"input {arg.name} was not lowered")
        if arg.name.startswith("__tmp_"):
            return name
        if name not in self.inputs:
            self.inputs.append(name)
        return name

    def shape(self, name: str) -> Shape:
        return self.lw.program.tensors[name].shape

    def dtype(self, name: str) -> str:
        return self.lw.program.tensors[name].dtype

    def operand(self, arg: Any) -> B.Operand:
        if hasattr(arg, "name"):
            n = self.t(arg)
            return (n, self.shape(n))
        if isinstance(arg, (int, float, bool)):
            return arg
        raise Unsupported(f"unsupported operand {arg!r}")

    @property
    def out(self) -> str:
        return self.out_n(0)

    def out_n(self, i: int) -> str:
        name = self.lw.out_names(self.node)[i]
        if name not in self.outputs:
            self.outputs.append(name)
        return name

    @property
    def out_shape(self) -> Shape:
        return self.shape(self.out)

    def tmp(self, shape: Shape, dtype: str = "float32") -> str:
        return self.lw.new_tensor(f"{self.node.name}_t", tuple(shape), dtype)

    def name(self, tag: str = "") -> str:
        self._k += 1
        return f"{self.node.name}_{tag}{self._k}"

    def emit(self, *ks: Kernel) -> None:
        self.kernels.extend(ks)

    def ew(self, fn: Callable[..., Expr], *args: Any, out: str | None = None) -> None:
        out = out or self.out
        ops = [self.operand(a) for a in args]
        self.emit(B.elementwise(self.name("ew"), out, self.shape(out), ops, fn))

    def view(self, *callspec: Any) -> None:
        self.kind = "view"
        self.call = tuple(callspec)


class LowerState:
    def __init__(self, traced: Traced):
        self.traced = traced
        self.program = Program(name=traced.entry.name)
        self.env: dict[str, Any] = {}
        self.unsupported: list[UnsupportedOp] = []
        self.counter = 0
        self.node_of_tensor: dict[str, str] = {}

    def new_tensor(self, base: str, shape: Shape, dtype: str) -> str:
        name = base
        while name in self.program.tensors:
            self.counter += 1
            name = f"{base}{self.counter}"
        self.program.tensors[name] = TensorType(tuple(int(s) for s in shape), dtype)
        return name

    def out_names(self, node: Any) -> list[str]:
        val = self.env.get(node.name)
        return list(val) if isinstance(val, (list, tuple)) else [val]

    def define_outputs(self, node: Any) -> None:
        """An IR tensor per tensor output; a complex one gets none (the IR has no complex
        dtype), so its consumers are reported instead of analyzed with a wrong type."""
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and not val.is_complex():
            self.env[node.name] = self.new_tensor(node.name, tuple(val.shape), dtype_name(val.dtype))
            self.node_of_tensor[self.env[node.name]] = node.name
        elif isinstance(val, (list, tuple)):
            names = []
            for i, v in enumerate(val):
                if isinstance(v, torch.Tensor) and not v.is_complex():
                    n = self.new_tensor(f"{node.name}_{i}", tuple(v.shape), dtype_name(v.dtype))
                    self.node_of_tensor[n] = node.name
                    names.append(n)
                else:
                    names.append(None)
            self.env[node.name] = names
        else:
            self.env[node.name] = None


# ------------------------------------------------------------------ the op table

LOWERINGS: dict[str, Callable[[Ctx, tuple, dict], None]] = {}

# Core ATen ops (torch.Tag.core) handled by the driver itself rather than by LOWERINGS:
# split pieces become slice views at their getitem; symbolic sizes carry no work.
DRIVER_OPS: frozenset[str] = frozenset({
    "split_with_sizes", "split", "unbind", "chunk",
    "sym_size", "sym_numel", "sym_stride", "sym_storage_offset",
})

# Core ATen ops left without a lowering on purpose, with the reason; an entry that uses one
# lists it in ``unsupported``. docs/coverage.md carries the same list; the test
# tests/test_ops_extra.py fails when a core op is neither lowered nor listed here.
NOT_LOWERED: dict[str, str] = {
    "rand": "random values: no deterministic result to verify against torch",
    "randn": "random values: no deterministic result to verify against torch",
    "randperm": "a random permutation: no deterministic result to verify against torch",
    "native_dropout": "training-mode dropout draws a random mask (eval dropout is lowered as an alias)",
    "_fft_r2c": "FFTs produce complex tensors; the IR has no complex dtype",
    "_fft_c2r": "FFTs read complex tensors; the IR has no complex dtype",
    "_local_scalar_dense": "Tensor.item(): the value leaves the graph for the host",
    "as_strided": "arbitrary strides over the storage, not a view of the logical tensor",
    "grid_sampler_2d": "sampling positions are data (a gather with data-dependent bilinear weights)",
    "_cdist_forward": "p-norm pairwise distances: not lowered yet (p=2 needs the matmul identity)",
    "_pdist_forward": "p-norm pairwise distances of the condensed upper triangle: not lowered yet",
    "resize_": "in-place storage resize: functionalized graphs from torch.export do not carry it",
}


def lowers(*names: str):
    def deco(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco


def _unary(fn: Callable[..., Expr]):
    return lambda c, a, kw: c.ew(fn, a[0])


def _binary(fn: Callable[..., Expr]):
    return lambda c, a, kw: c.ew(fn, a[0], a[1])


def gelu_expr(x: Expr, approximate: str = "none") -> Expr:
    if approximate == "tanh":
        inner = call("mul", math.sqrt(2 / math.pi),
                     call("add", x, call("mul", 0.044715, call("mul", x, call("mul", x, x)))))
        return call("mul", call("mul", 0.5, x), call("add", 1.0, call("tanh", inner)))
    return call("mul", call("mul", 0.5, x), call("add", 1.0, call("erf", call("mul", x, 1 / math.sqrt(2)))))


def softplus_expr(x: Expr, beta: float = 1.0, threshold: float = 20.0) -> Expr:
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


# ---- creation

@lowers("aten.full.default", "aten.zeros.default", "aten.ones.default", "aten.full_like.default",
        "aten.zeros_like.default", "aten.ones_like.default", "aten.scalar_tensor.default",
        "aten.new_zeros.default", "aten.new_ones.default", "aten.new_full.default")
def _full(c: Ctx, a: tuple, kw: dict) -> None:
    t = str(c.node.target)
    if "zeros" in t:
        v = 0.0
    elif "ones" in t:
        v = 1.0
    elif "scalar_tensor" in t:
        v = float(a[0])
    elif "new_full" in t:  # new_full(self, size, fill_value)
        v = float(a[2] if len(a) > 2 else kw.get("fill_value"))
    else:
        v = float(a[1] if len(a) > 1 else kw.get("fill_value"))
    c.ew(lambda: Const(v))


@lowers("aten.fill.Scalar", "aten.fill.Tensor")
def _fill(c: Ctx, a: tuple, kw: dict) -> None:
    """Every element becomes the value (a number, or the one element of a 0-d tensor)."""
    if hasattr(a[1], "name"):
        c.ew(lambda v: v, a[1])
    else:
        c.ew(lambda: Const(float(a[1])))


@lowers("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(c: Ctx, a: tuple, kw: dict) -> None:
    nums = [x for x in a if isinstance(x, (int, float))]
    start, step = (0, 1)
    if len(nums) >= 2:
        start = nums[0]
    if len(nums) >= 3:
        step = nums[2]
    c.emit(Kernel(c.name("arange"), (("i0", c.out_shape[0]),), Load(c.out, (Affine.var("i0"),)), "=",
                  call("add", float(start), call("mul", Index(Affine.var("i0")), float(step)))))


@lowers("aten.eye.default", "aten.eye.m")
def _eye(c: Ctx, a: tuple, kw: dict) -> None:
    """Kept whole: its decomposition builds a uint16 arange the CPU cannot run."""
    n, m = c.out_shape
    c.emit(Kernel(c.name("eye"), (("i0", n), ("i1", m)), Load(c.out, (Affine.var("i0"), Affine.var("i1"))), "=",
                  call("where", call("eq", Index(Affine.var("i0")), Index(Affine.var("i1"))), 1.0, 0.0)))


@lowers("aten.empty.memory_format", "aten.empty_like.default", "aten.empty_strided.default",
        "aten.empty.default")
def _empty(c: Ctx, a: tuple, kw: dict) -> None:
    c.out  # noqa: B018 - registers the output; empty allocates without writing
    c.kind = "alloc"


@lowers("aten.tril.default", "aten.triu.default")
def _tri(c: Ctx, a: tuple, kw: dict) -> None:
    diag = a[1] if len(a) > 1 else 0
    x = c.t(a[0])
    shp = c.shape(x)
    vs = B.ivars(len(shp))
    i, j = vs[-2], vs[-1]
    keep = call("le", Index(Affine.var(j)), Index(Affine.var(i) + diag)) if "tril" in str(c.node.target) \
        else call("ge", Index(Affine.var(j)), Index(Affine.var(i) + diag))
    c.emit(Kernel(c.name("tri"), tuple(zip(vs, shp)), Load(c.out, B.plain(vs)), "=",
                  call("where", keep, Load(x, B.plain(vs)), 0.0)))


# ---- reductions

def _dims(a: tuple, kw: dict, rank: int, pos: int = 1) -> list[int]:
    d = a[pos] if len(a) > pos else kw.get("dim")
    if d is None or d == []:
        return list(range(rank))
    if isinstance(d, int):
        d = [d]
    return [x % rank for x in d] if rank else []


def _keep(a: tuple, kw: dict, pos: int = 2) -> bool:
    return bool(a[pos] if len(a) > pos else kw.get("keepdim", False))


def _numel(shape: Shape, dims: list[int]) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


@lowers("aten.sum.dim_IntList", "aten.sum.default", "aten.mean.dim", "aten.mean.default",
        "aten.amax.default", "aten.amin.default", "aten.prod.dim_int", "aten.prod.default",
        "aten.any.dim", "aten.any.default", "aten.all.dim", "aten.all.default", "aten.any.dims",
        "aten.logsumexp.default", "aten.linalg_vector_norm.default")
def _reduce(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    t = str(c.node.target)
    if "norm" in t:
        ordp = a[1] if len(a) > 1 else kw.get("ord", 2)
        dims = _dims(a, kw, len(xs), 2)
        keep = _keep(a, kw, 3)
    else:
        dims = _dims(a, kw, len(xs))
        keep = _keep(a, kw)
    if t.endswith(".default") and "amax" not in t and "amin" not in t and "logsumexp" not in t \
            and "norm" not in t:
        dims, keep = list(range(len(xs))), False
    out = c.out
    name = c.name("red")
    t = t.split(".")[1]  # the op's base name: "sum", "logsumexp", ...
    if t == "sum":
        c.emit(B.reduce(name, x, xs, dims, keep, out, "+="))
    elif t == "mean":
        s = c.tmp(c.out_shape)
        c.emit(B.reduce(name, x, xs, dims, keep, s, "+="))
        c.ew(lambda v: call("div", v, float(_numel(xs, dims))), _node_for(c, s))
    elif t == "amax":
        c.emit(B.reduce(name, x, xs, dims, keep, out, "max="))
    elif t == "amin":
        c.emit(B.reduce(name, x, xs, dims, keep, out, "min="))
    elif t == "prod":
        c.emit(B.reduce(name, x, xs, dims, keep, out, "*="))
    elif t == "any":
        c.emit(B.reduce(name, x, xs, dims, keep, out, "max=", pre=lambda v: call("ne", v, 0.0)))
    elif t == "all":
        c.emit(B.reduce(name, x, xs, dims, keep, out, "min=", pre=lambda v: call("ne", v, 0.0)))
    elif t == "logsumexp":
        ks = tuple(1 if d in dims else s for d, s in enumerate(xs))
        m, s = c.tmp(ks), c.tmp(ks)
        c.emit(B.reduce(name, x, xs, dims, True, m, "max="))
        c.emit(B.reduce(c.name("red"), x, xs, dims, True, s, "+=",
                        pre=lambda v, mm: call("exp", call("sub", v, mm)), extra=[(m, ks)]))
        rs = c.out_shape
        vs = B.ivars(len(rs))
        ki = _reduced_to_keep(vs, xs, dims, keep)
        c.emit(Kernel(c.name("lse"), tuple(zip(vs, rs)), Load(out, B.plain(vs)), "=",
                      call("add", Load(m, ki), call("log", Load(s, ki)))))
    else:  # vector norm
        if ordp == 2:
            s = c.tmp(c.out_shape)
            c.emit(B.reduce(name, x, xs, dims, keep, s, "+=", pre=lambda v: call("mul", v, v)))
            c.ew(lambda v: call("sqrt", v), _node_for(c, s))
        elif ordp == 1:
            c.emit(B.reduce(name, x, xs, dims, keep, out, "+=", pre=lambda v: call("abs", v)))
        elif ordp == float("inf"):
            c.emit(B.reduce(name, x, xs, dims, keep, out, "max=", pre=lambda v: call("abs", v)))
        elif ordp == float("-inf"):
            c.emit(B.reduce(name, x, xs, dims, keep, out, "min=", pre=lambda v: call("abs", v)))
        elif ordp == 0:  # the number of non-zero elements
            c.emit(B.reduce(name, x, xs, dims, keep, out, "+=", pre=lambda v: call("ne", v, 0.0)))
        else:  # (sum |x|^p)^(1/p), negative and fractional p alike
            p = float(ordp)
            s = c.tmp(c.out_shape)
            c.emit(B.reduce(name, x, xs, dims, keep, s, "+=", pre=lambda v: call("pow", call("abs", v), p)))
            c.ew(lambda v: call("pow", v, 1.0 / p), _node_for(c, s))


class _TmpRef:
    """Stands for an op-internal temporary where a builder expects an fx node."""

    def __init__(self, name: str):
        self.name = name


def _node_for(c: Ctx, tensor: str) -> _TmpRef:
    c.lw.env.setdefault(f"__tmp_{tensor}", tensor)
    return _TmpRef(f"__tmp_{tensor}")


@lowers("aten.var.correction", "aten.std.correction", "aten.var.dim", "aten.std.dim",
        "aten.var_mean.correction", "aten.var.default", "aten.std.default")
def _var(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    dims = _dims(a, kw, len(xs))
    t = str(c.node.target)
    corr = kw.get("correction", 1 if "correction" not in t else 1)
    if "unbiased" in kw:
        corr = 1 if kw["unbiased"] else 0
    if corr is None:
        corr = 1
    keep = bool(kw.get("keepdim", a[3] if len(a) > 3 else False))
    n = _numel(xs, dims)
    ks = tuple(1 if d in dims else s for d, s in enumerate(xs))
    m, ss = c.tmp(ks), c.tmp(ks)
    c.emit(B.reduce(c.name("mean"), x, xs, dims, True, m, "+="))
    c.emit(B.reduce(c.name("ssq"), x, xs, dims, True, ss, "+=",
                    pre=lambda v, mm: call("mul", call("sub", v, call("div", mm, float(n))),
                                           call("sub", v, call("div", mm, float(n)))),
                    extra=[(m, ks)]))
    outs = c.lw.out_names(c.node)
    var_out = outs[0]
    c.outputs.append(var_out) if var_out not in c.outputs else None
    post = (lambda v: call("sqrt", call("div", v, float(max(n - corr, 0) or 1)))) if "std" in t else \
        (lambda v: call("div", v, float(max(n - corr, 0) or 1)))
    rs = c.shape(var_out)
    vs = B.ivars(len(rs))
    idx = _reduced_to_keep(vs, xs, dims, keep)
    c.emit(Kernel(c.name("var"), tuple(zip(vs, rs)), Load(var_out, B.plain(vs)), "=", post(Load(ss, idx))))
    if len(outs) > 1:
        mean_out = outs[1]
        c.outputs.append(mean_out)
        c.emit(Kernel(c.name("mean"), tuple(zip(vs, rs)), Load(mean_out, B.plain(vs)), "=",
                      call("div", Load(m, idx), float(n))))


def _reduced_to_keep(vs: list[str], xs: Shape, dims: list[int], keep: bool) -> tuple[Affine, ...]:
    """Index a keepdim-shaped temp from the loop vars of a (maybe) squeezed result."""
    if keep:
        return tuple(Affine.of(0) if d in dims else Affine.var(vs[d]) for d in range(len(xs)))
    it = iter(vs)
    return tuple(Affine.of(0) if d in dims else Affine.var(next(it)) for d in range(len(xs)))


@lowers("aten.cumsum.default", "aten.cumprod.default", "aten.cummax.default", "aten.cummin.default",
        "aten.logcumsumexp.default")
def _cum(c: Ctx, a: tuple, kw: dict) -> None:
    """A scan as a recurrence: ``out[.., 0, ..] = x[.., 0, ..]`` then, for v < n-1,
    ``out[.., v+1, ..] = out[.., v, ..] (+) x[.., v+1, ..]``: n-1 combines per scan line,
    executed in order (docs/sol-model.md, Scans)."""
    x = c.t(a[0])
    xs = c.shape(x)
    if not xs:  # a 0-d scan is a copy
        c.ew(lambda v: v, a[0])
        return
    dim = a[1] % len(xs)
    base = str(c.node.target).split(".")[1]
    n = xs[dim]
    if n == 0 or 0 in xs:  # an empty scan writes nothing
        for o in c.lw.out_names(c.node):
            c.outputs.append(o)
        c.kind = "alloc"
        return
    vs = B.ivars(len(xs))
    first_loops = tuple((v, s) for d, (v, s) in enumerate(zip(vs, xs)) if d != dim)
    first_idx = tuple(Affine.of(0) if d == dim else Affine.var(v) for d, v in enumerate(vs))
    scan_loops = tuple((v, n - 1 if d == dim else s) for d, (v, s) in enumerate(zip(vs, xs)))
    prev = B.plain(vs)
    cur = tuple(Affine.var(v) + 1 if d == dim else Affine.var(v) for d, v in enumerate(vs))
    outs = c.lw.out_names(c.node)
    val = c.out_n(0)

    def combine(p: Expr, q: Expr) -> Expr:
        if base == "cumsum":
            return call("add", p, q)
        if base == "cumprod":
            return call("mul", p, q)
        if base == "cummax":
            return call("max", p, q)
        if base == "cummin":
            return call("min", p, q)
        # log(exp(p) + exp(q)), stable: max + log1p(exp(-|p - q|))
        return call("add", call("max", p, q), call("log1p", call("exp", call("neg", call("abs", call("sub", p, q))))))

    c.emit(Kernel(c.name("scan0"), first_loops, Load(val, first_idx), "=", Load(x, first_idx)))
    if n > 1:
        c.emit(Kernel(c.name("scan"), scan_loops, Load(val, cur), "=", combine(Load(val, prev), Load(x, cur))))
    if base in ("cummax", "cummin") and len(outs) > 1:
        # index of the running extreme: moves on ties (torch compares with >= / <=)
        idx = c.out_n(1)
        c.emit(Kernel(c.name("arg0"), first_loops, Load(idx, first_idx), "=", Const(0.0)))
        if n > 1:
            cmp = "ge" if base == "cummax" else "le"
            take = call(cmp, Load(x, cur), Load(val, prev))
            c.emit(Kernel(c.name("arg"), scan_loops, Load(idx, cur), "=",
                          call("where", take, Index(Affine.var(vs[dim]) + 1), Load(idx, prev))))


# ---- contractions

@lowers("aten.mm.default", "aten.bmm.default", "aten.matmul.default", "aten.mv.default",
        "aten.dot.default")
def _matmul(c: Ctx, a: tuple, kw: dict) -> None:
    x, y = c.t(a[0]), c.t(a[1])
    _matmul_into(c, x, c.shape(x), y, c.shape(y), c.out, c.out_shape, "identity")


def _matmul_into(c: Ctx, x: str, xs: Shape, y: str, ys: Shape, out: str, os_: Shape, init: str) -> None:
    """torch.matmul semantics: 1-D promotion and broadcast batch dims."""
    xr, yr = len(xs), len(ys)
    ext: dict[str, int] = {"k": xs[-1]}
    if xr == 1 and yr == 1:
        c.emit(dataclasses.replace(B.contraction(c.name("dot"), out, [], x, [Affine.var("k")], y,
                                                 [Affine.var("k")], ext, init=init, out_idx=()),
                                   unit="vector"))
        return
    nb = max(max(xr, yr) - 2, 0)  # broadcast batch dims of the output
    bv = [f"b{d}" for d in range(nb)]
    for v, s in zip(bv, os_[:nb]):
        ext[v] = s
    out_vars = list(bv)
    xi: list[Affine] = []
    yi: list[Affine] = []
    if xr >= 2:
        ext["m"] = xs[-2]
        xb = xs[:-2]
        xi = list(B.broadcast_index(xb, tuple(os_[:nb]), bv)) + [Affine.var("m"), Affine.var("k")]
        out_vars.append("m")
    else:
        xi = [Affine.var("k")]
    if yr >= 2:
        ext["n"] = ys[-1]
        yb = ys[:-2]
        yi = list(B.broadcast_index(yb, tuple(os_[:nb]), bv)) + [Affine.var("k"), Affine.var("n")]
        out_vars.append("n")
    else:
        yi = [Affine.var("k")]
    k = B.contraction(c.name("mm"), out, out_vars, x, xi, y, yi, ext, init=init)
    if yr == 1 or (xr == 1 and yr == 2):
        # torch runs these as mv (GEMV): CUDA cores, not tensor cores (nor FlopCounterMode)
        k = dataclasses.replace(k, unit="vector")
    c.emit(k)


@lowers("aten.addmm.default", "aten.baddbmm.default", "aten.addmv.default")
def _addmm(c: Ctx, a: tuple, kw: dict) -> None:
    bias, x, y = c.t(a[0]), c.t(a[1]), c.t(a[2])
    beta = float(kw.get("beta", 1))
    alpha = float(kw.get("alpha", 1))
    out = c.out
    if alpha == 1:
        c.ew(lambda b: b if beta == 1 else call("mul", b, beta), a[0])
        _matmul_into(c, x, c.shape(x), y, c.shape(y), out, c.out_shape, "keep")
    else:
        tmp = c.tmp(c.out_shape)
        _matmul_into(c, x, c.shape(x), y, c.shape(y), tmp, c.out_shape, "identity")
        c.ew(lambda b, t: call("add", call("mul", b, beta), call("mul", t, alpha)), a[0], _node_for(c, tmp))
    del bias


@lowers("aten.linear.default")
def _linear(c: Ctx, a: tuple, kw: dict) -> None:
    x, w = c.t(a[0]), c.t(a[1])
    xs, ws = c.shape(x), c.shape(w)
    bias = a[2] if len(a) > 2 else kw.get("bias")
    init = "identity"
    if bias is not None:
        c.ew(lambda b: b, bias)
        init = "keep"
    lead = B.ivars(len(xs) - 1, "b")
    ext = dict(zip(lead, xs[:-1])) | {"k": xs[-1]}
    if len(ws) == 2:
        ext["n"] = ws[0]
        c.emit(B.contraction(c.name("mm"), c.out, lead + ["n"], x, B.plain(lead) + (Affine.var("k"),),
                             w, (Affine.var("n"), Affine.var("k")), ext, init=init))
    else:
        c.emit(B.contraction(c.name("mm"), c.out, lead, x, B.plain(lead) + (Affine.var("k"),),
                             w, (Affine.var("k"),), ext, init=init))


@lowers("aten.einsum.default")
def _einsum(c: Ctx, a: tuple, kw: dict) -> None:
    eq = a[0].replace(" ", "")
    ops = [c.t(o) for o in a[1]]
    shapes = [c.shape(o) for o in ops]
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    # expand ellipsis
    letters = set(eq) - set(",->.")
    free = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if ch not in letters]
    ell_rank = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(free[:ell_rank])
    terms = [t.replace("...", ell[ell_rank - (len(s) - len(t.replace("...", ""))):]) for t, s in zip(terms, shapes)]
    if not _:
        counts = {ch: "".join(terms).count(ch) for ch in set("".join(terms))}
        rhs = ell + "".join(sorted(ch for ch, n in counts.items() if n == 1 and ch not in ell))
    else:
        rhs = rhs.replace("...", ell)
    ext: dict[str, int] = {}
    for t, s in zip(terms, shapes):
        for ch, n in zip(t, s):
            if n != 1 or ch not in ext:
                ext[ch] = max(ext.get(ch, 1), n)

    def idx(t: str, s: Shape) -> tuple[Affine, ...]:
        return tuple(Affine.of(0) if (n == 1 and ext[ch] != 1) else Affine.var(ch) for ch, n in zip(t, s))

    cur, cur_t, cur_s = ops[0], terms[0], shapes[0]
    if len(ops) == 1:
        loops = tuple((ch, ext[ch]) for ch in dict.fromkeys(rhs + cur_t))
        c.emit(Kernel(c.name("ein"), loops, Load(c.out, B.plain(list(rhs))), "+=" if set(cur_t) - set(rhs) else "=",
                      Load(cur, idx(cur_t, cur_s))))
        return
    # torch.einsum contracts in opt_einsum's order (strategy "auto"); follow it so the count
    # is what torch runs
    import opt_einsum
    path, _ = opt_einsum.contract_path(",".join(terms) + "->" + rhs, *shapes, shapes=True, optimize="auto")
    live = list(zip(ops, terms, shapes))
    for step, pos in enumerate(path):
        picked = [live[i] for i in pos]
        for i in sorted(pos, reverse=True):
            live.pop(i)
        last = step == len(path) - 1
        later = set("".join(t for _, t, _ in live)) | set(rhs)
        union = "".join(dict.fromkeys("".join(t for _, t, _ in picked)))
        out_t = rhs if last else "".join(ch for ch in union if ch in later)
        out_s = tuple(ext[ch] for ch in out_t)
        out = c.out if last else c.tmp(out_s, c.dtype(c.out))
        if len(picked) == 2:
            (a_, at, as_), (b_, bt, bs) = picked
            # torch.einsum first sums out the indices only one operand has (sumproduct_pair)
            a_, at, as_ = _einsum_presum(c, a_, at, as_, set(bt) | later, idx)
            b_, bt, bs = _einsum_presum(c, b_, bt, bs, set(at) | later, idx)
            if (set(at) & set(bt)) - set(out_t):
                c.emit(B.contraction(c.name("ein"), out, list(out_t), a_, idx(at, as_), b_, idx(bt, bs), ext))
            else:  # nothing to contract: an elementwise (outer) product, which torch runs as mul
                loops = tuple((ch, ext[ch]) for ch in out_t)
                c.emit(Kernel(c.name("ein"), loops, Load(out, B.plain(list(out_t))), "=",
                              call("mul", Load(a_, idx(at, as_)), Load(b_, idx(bt, bs)))))
        else:
            (a_, at, as_), = picked
            loops = tuple((ch, ext[ch]) for ch in dict.fromkeys(out_t + at))
            c.emit(Kernel(c.name("ein"), loops, Load(out, B.plain(list(out_t))),
                          "+=" if set(at) - set(out_t) else "=", Load(a_, idx(at, as_))))
        live.append((out, out_t, out_s))


def _einsum_presum(c: Ctx, x: str, t: str, s: Shape, keep: set[str],
                   idx: Callable[[str, Shape], tuple[Affine, ...]]) -> tuple[str, str, Shape]:
    """Sum out of one einsum operand the indices no other operand nor the output has."""
    sizes = dict(zip(t, s))
    kept = "".join(ch for ch in dict.fromkeys(t) if ch in keep)
    if len(kept) == len(set(t)):
        return x, t, s
    ks = tuple(sizes[ch] for ch in kept)
    out = c.tmp(ks, c.dtype(x))
    loops = tuple((ch, sizes[ch]) for ch in dict.fromkeys(kept + t))
    c.emit(Kernel(c.name("ein_sum"), loops, Load(out, B.plain(list(kept))), "+=", Load(x, idx(t, s))))
    return out, kept, ks


@lowers("aten.convolution.default", "aten._convolution.default", "aten.conv1d.default",
        "aten.conv2d.default", "aten.conv3d.default", "aten.conv_transpose1d.default",
        "aten.conv_transpose2d.input", "aten.conv_transpose3d.input")
def _conv(c: Ctx, a: tuple, kw: dict) -> None:
    t = str(c.node.target)
    x, w = c.t(a[0]), c.t(a[1])
    xs, ws = c.shape(x), c.shape(w)
    nd = len(xs) - 2
    bias = a[2] if len(a) > 2 else None

    def tup(v: Any, default: int) -> list[int]:
        if v is None:
            return [default] * nd
        if isinstance(v, int):
            return [v] * nd
        v = list(v)
        return v * nd if len(v) == 1 else v
    if "convolution" in t:
        stride, padding, dilation = tup(a[3], 1), tup(a[4], 0), tup(a[5], 1)
        transposed, groups = bool(a[6]), int(a[8])
    elif "transpose" in t:
        stride, padding = tup(a[3] if len(a) > 3 else 1, 1), tup(a[4] if len(a) > 4 else 0, 0)
        groups = int(a[6]) if len(a) > 6 else 1
        dilation = tup(a[7] if len(a) > 7 else 1, 1)
        transposed = True
    else:
        stride, padding = tup(a[3] if len(a) > 3 else 1, 1), a[4] if len(a) > 4 else 0
        if isinstance(padding, str):
            raise Unsupported(f"string padding {padding!r}")
        padding = tup(padding, 0)
        dilation = tup(a[5] if len(a) > 5 else 1, 1)
        groups = int(a[6]) if len(a) > 6 else 1
        transposed = False
    b = c.t(bias) if bias is not None else None
    c.emit(*B.conv(c.name("conv"), x, xs, w, ws, c.out, c.out_shape, stride, padding, dilation,
                   groups, transposed, b))


@lowers("aten.scaled_dot_product_attention.default")
def _sdpa(c: Ctx, a: tuple, kw: dict) -> None:
    q, k, v = c.t(a[0]), c.t(a[1]), c.t(a[2])
    qs, ks_, vs_ = c.shape(q), c.shape(k), c.shape(v)
    mask = a[3] if len(a) > 3 else kw.get("attn_mask")
    causal = bool(a[5] if len(a) > 5 else kw.get("is_causal", False))
    scale = kw.get("scale", a[6] if len(a) > 6 else None)
    d = qs[-1]
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(d)
    lq, lk, ev = qs[-2], ks_[-2], vs_[-1]
    lead = qs[:-2]
    nb = len(lead)
    bv = B.ivars(nb, "b")
    # grouped-query attention: q head h = hk * rep + r reads k/v head hk
    rep = 1
    if nb >= 1 and ks_[-3] != qs[-3] if len(ks_) >= 3 else False:
        rep = qs[-3] // ks_[-3]
    ext = dict(zip(bv, lead)) | {"i": lq, "j": lk, "d": d, "e": ev}
    if rep > 1:
        ext[bv[-1]] = ks_[-3]
        ext["r"] = rep
        qh = B.plain(bv[:-1]) + (Affine.var(bv[-1], rep) + Affine.var("r"),)
        kh = B.plain(bv)
        ob = bv[:-1] + [bv[-1], "r"]
    else:
        qh = kh = B.plain(bv)
        ob = list(bv)
    sshape = tuple(lead) + (lq, lk)
    s = c.tmp(sshape)
    so = ob
    s_idx = qh + (Affine.var("i"), Affine.var("j"))
    c.emit(B.contraction(c.name("qk"), s, so + ["i", "j"], q, qh + (Affine.var("i"), Affine.var("d")),
                         k, kh + (Affine.var("j"), Affine.var("d")), ext, out_idx=s_idx))
    logits = c.tmp(sshape)
    sv = B.ivars(len(sshape))
    body: Expr = call("mul", Load(s, B.plain(sv)), scale)
    if mask is not None:
        mname = c.t(mask)
        ml = Load(mname, B.broadcast_index(c.shape(mname), sshape, sv))
        if c.dtype(mname) == "bool":
            body = call("where", ml, body, float("-inf"))
        else:
            body = call("add", body, ml)
    if causal:
        body = call("where", call("le", Index(Affine.var(sv[-1])), Index(Affine.var(sv[-2]))), body, float("-inf"))
    c.emit(Kernel(c.name("scale"), tuple(zip(sv, sshape)), Load(logits, B.plain(sv)), "=", body))
    p = c.tmp(sshape, c.dtype(q))  # P·V runs at the inputs' precision
    c.emit(*B.softmax(c.name("sm"), logits, sshape, -1, p, c.tmp))
    c.emit(B.contraction(c.name("pv"), c.out, so + ["i", "e"], p, s_idx,
                         v, kh + (Affine.var("j"), Affine.var("e")), ext,
                         out_idx=qh + (Affine.var("i"), Affine.var("e"))))


# ---- norms and softmax

@lowers("aten._softmax.default", "aten._log_softmax.default", "aten.softmax.int", "aten.log_softmax.int")
def _softmax(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    c.emit(*B.softmax(c.name("sm"), x, c.shape(x), a[1], c.out, c.tmp, log="log" in str(c.node.target)))


def _vec(c: Ctx, arg: Any, index: tuple[Affine, ...], vars_: tuple[str, ...]) -> NK.Affine1 | None:
    """A weight/bias argument (None when absent) indexed by ``index`` over ``vars_``."""
    return None if arg is None else NK.Affine1(c.t(arg), index, vars_)


def _stat_outputs(c: Ctx, sp: NK.NormSpace, mean: str | None, rstd: str, shape_of: Shape) -> None:
    """native_* variants also return mean and rstd: copy the statistics into them."""
    outs = c.lw.out_names(c.node)
    for i, src in ((1, mean), (2, rstd)):
        if len(outs) <= i or outs[i] is None or src is None or c.shape(outs[i]) != shape_of:
            continue
        dst = c.out_n(i)
        vs = list(sp.stat_vars)  # the leading dims; the normalised ones are kept as size 1
        di = sp.idx(vs) + (Affine.of(0),) * (len(shape_of) - len(vs))
        c.kernels.insert(len(c.kernels) - 1, Kernel(c.name("stat"), sp.sub(vs), Load(dst, di), "=",
                                                    Load(src, sp.idx(vs))))


@lowers("aten.layer_norm.default", "aten.native_layer_norm.default")
def _layer_norm(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    nd = len(a[1])
    w = a[2] if len(a) > 2 else kw.get("weight")
    b = a[3] if len(a) > 3 else kw.get("bias")
    eps = float(a[4] if len(a) > 4 else kw.get("eps", 1e-5))
    _row_norm(c, x, xs, nd, w, b, eps, rms=False)


@lowers("aten.rms_norm.default")
def _rms_norm(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    nd = len(a[1])
    w = a[2] if len(a) > 2 else kw.get("weight")
    eps = a[3] if len(a) > 3 else kw.get("eps")
    if eps is None:
        eps = torch.finfo(getattr(torch, c.dtype(x))).eps
    _row_norm(c, x, xs, nd, w, None, float(eps), rms=True)


def _row_norm(c: Ctx, x: str, xs: Shape, nd: int, w: Any, b: Any, eps: float, rms: bool) -> None:
    """Layer / RMS norm: statistics per leading index over the last ``nd`` dims; the affine
    runs along the normalised dims (no folding: it would be as large as x)."""
    vs = B.ivars(len(xs))
    lead, norm = tuple(vs[:len(xs) - nd]), tuple(vs[len(xs) - nd:])
    sp = NK.NormSpace(tuple(zip(vs, xs)), B.plain(vs), lead)
    ks, mean, rstd, _ = NK.statistics(lambda s: c.name(s), sp, x, c.tmp, eps, rms=rms)
    c.emit(*ks)
    c.emit(*NK.normalize_out(lambda s: c.name(s), sp, x, c.out_n(0), B.plain(vs), mean, rstd,
                             _vec(c, w, B.plain(norm), norm), _vec(c, b, B.plain(norm), norm), c.tmp))
    _stat_outputs(c, sp, mean, rstd, tuple(s if d < len(xs) - nd else 1 for d, s in enumerate(xs)))


@lowers("aten._native_batch_norm_legit_no_training.default", "aten.batch_norm.default",
        "aten._native_batch_norm_legit.default", "aten.native_batch_norm.default",
        "aten._native_batch_norm_legit.no_stats", "aten._native_batch_norm_legit_functional.default")
def _batch_norm(c: Ctx, a: tuple, kw: dict) -> None:
    """Batch statistics per channel in training (and the running-stat updates of the
    functional variant), running statistics in eval; both fold into a per-channel
    scale and shift."""
    t = str(c.node.target)
    x = c.t(a[0])
    xs = c.shape(x)
    w, b = a[1], a[2]
    if "no_stats" in t:
        rm = rv = None
        training, momentum, eps = bool(a[3]), float(a[4]), float(a[5])
    elif "no_training" in t:
        rm, rv, training, momentum, eps = a[3], a[4], False, float(a[5]), float(a[6])
    else:
        rm, rv, training, momentum, eps = a[3], a[4], bool(a[5]), float(a[6]), float(a[7])
    vs = B.ivars(len(xs))
    ch = (Affine.var(vs[1]),)
    sp = NK.NormSpace(tuple(zip(vs, xs)), B.plain(vs), (vs[1],))
    name = lambda s: c.name(s)  # noqa: E731
    out = c.out_n(0)
    if training or rm is None:
        outs = c.lw.out_names(c.node)
        keep = [i for i in (1, 2) if len(outs) > i and outs[i] is not None
                and c.shape(outs[i]) == (xs[1],)]
        ks, mean, rstd, q = NK.statistics(name, sp, x, c.tmp, eps,
                                          mean_out=c.out_n(1) if 1 in keep else None,
                                          rstd_out=c.out_n(2) if 2 in keep else None)
        c.emit(*ks)
        if "functional" in t and rm is not None and len(outs) > 4:
            n = sp.n
            unbiased = call("mul", call("sub", call("div", Load(q, ch), float(n)),
                                        call("mul", Load(mean, ch), Load(mean, ch))),
                            float(n) / max(n - 1, 1))
            for i, run, new in ((3, rm, Load(mean, ch)), (4, rv, unbiased)):
                c.emit(Kernel(c.name("running"), ((vs[1], xs[1]),), Load(c.out_n(i), ch), "=",
                              call("add", call("mul", Load(c.t(run), ch), 1.0 - momentum),
                                   call("mul", new, momentum))))
    else:
        mean = c.t(rm)
        rstd = c.tmp((xs[1],))
        c.emit(Kernel(c.name("rstd"), ((vs[1], xs[1]),), Load(rstd, ch), "=",
                      call("rsqrt", call("add", Load(c.t(rv), ch), eps))))
    c.emit(*NK.normalize_out(name, sp, x, out, B.plain(vs), mean, rstd,
                             _vec(c, w, ch, (vs[1],)), _vec(c, b, ch, (vs[1],)), c.tmp))


@lowers("aten.instance_norm.default")
def _instance_norm(c: Ctx, a: tuple, kw: dict) -> None:
    """Statistics per (sample, channel) over the spatial dims (or the running statistics
    when ``use_input_stats`` is off); the affine folds per (sample, channel)."""
    x = c.t(a[0])
    xs = c.shape(x)
    w, b, rm, rv, use_stats, eps = a[1], a[2], a[3], a[4], bool(a[5]), float(a[7])
    vs = B.ivars(len(xs))
    ch = (Affine.var(vs[1]),)
    name = lambda s: c.name(s)  # noqa: E731
    if not use_stats and rm is not None:
        sp = NK.NormSpace(tuple(zip(vs, xs)), B.plain(vs), (vs[1],))
        mean, rstd = c.t(rm), c.tmp((xs[1],))
        c.emit(Kernel(c.name("rstd"), ((vs[1], xs[1]),), Load(rstd, ch), "=",
                      call("rsqrt", call("add", Load(c.t(rv), ch), eps))))
    else:
        sp = NK.NormSpace(tuple(zip(vs, xs)), B.plain(vs), (vs[0], vs[1]))
        ks, mean, rstd, _ = NK.statistics(name, sp, x, c.tmp, eps)
        c.emit(*ks)
    c.emit(*NK.normalize_out(name, sp, x, c.out, B.plain(vs), mean, rstd,
                             _vec(c, w, ch, (vs[1],)), _vec(c, b, ch, (vs[1],)), c.tmp))


@lowers("aten.group_norm.default", "aten.native_group_norm.default")
def _group_norm(c: Ctx, a: tuple, kw: dict) -> None:
    """Statistics per (sample, group); the affine folds per (sample, channel)."""
    x = c.t(a[0])
    xs = c.shape(x)
    t = str(c.node.target)
    if "native" in t:
        w, b, groups, eps = a[1], a[2], int(a[6]), float(a[7])
    else:
        groups = int(a[1])
        w = a[2] if len(a) > 2 else kw.get("weight")
        b = a[3] if len(a) > 3 else kw.get("bias")
        eps = float(a[4] if len(a) > 4 else kw.get("eps", 1e-5))
    n, ch = xs[0], xs[1]
    cg = ch // groups
    spv = [f"s{d}" for d in range(len(xs) - 2)]
    loops = (("n", n), ("g", groups), ("c", cg)) + tuple(zip(spv, xs[2:]))
    xi = (Affine.var("n"), Affine.var("g", cg) + Affine.var("c")) + B.plain(spv)
    sp = NK.NormSpace(loops, xi, ("n", "g"))
    name = lambda s: c.name(s)  # noqa: E731
    outs = c.lw.out_names(c.node)
    keep = {i: c.out_n(i) for i in (1, 2) if len(outs) > i and outs[i] is not None
            and c.shape(outs[i]) == (n, groups)}
    ks, mean, rstd, _ = NK.statistics(name, sp, x, c.tmp, eps, mean_out=keep.get(1), rstd_out=keep.get(2))
    c.emit(*ks)
    chi = (Affine.var("g", cg) + Affine.var("c"),)
    c.emit(*NK.normalize_out(name, sp, x, c.out_n(0), xi, mean, rstd, _vec(c, w, chi, ("g", "c")),
                             _vec(c, b, chi, ("g", "c")), c.tmp))


# ---- pooling: frontend/lower_spatial.py


# ---- copies with affine structure

@lowers("aten.cat.default")
def _cat(c: Ctx, a: tuple, kw: dict) -> None:
    dim = a[1] if len(a) > 1 else kw.get("dim", 0)
    os_ = c.out_shape
    dim %= len(os_)
    off = 0
    for t in a[0]:
        name = c.t(t)
        s = c.shape(name)
        if len(s) == 1 and s[0] == 0:
            continue
        vs = B.ivars(len(s))
        oi = tuple(Affine.var(v) + (off if d == dim else 0) for d, v in enumerate(vs))
        c.emit(Kernel(c.name("cat"), tuple(zip(vs, s)), Load(c.out, oi), "=", Load(name, B.plain(vs))))
        off += s[dim]


@lowers("aten.constant_pad_nd.default")
def _pad(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    pads = list(a[1])
    value = float(a[2] if len(a) > 2 else 0.0)
    os_ = c.out_shape
    c.ew(lambda: Const(value))
    vs = B.ivars(len(xs))
    lo = [0] * len(xs)
    for i in range(len(pads) // 2):
        lo[len(xs) - 1 - i] = pads[2 * i]
    # negative padding crops: iterate the kept part of x
    loops, xi, oi = [], [], []
    for d, (v, s) in enumerate(zip(vs, xs)):
        start = max(0, -lo[d])
        n = min(s, os_[d] - lo[d]) - start
        loops.append((v, n))
        xi.append(Affine.var(v) + start)
        oi.append(Affine.var(v) + (start + lo[d]))
    c.emit(Kernel(c.name("pad"), tuple(loops), Load(c.out, tuple(oi)), "=", Load(x, tuple(xi))))


@lowers("aten.flip.default")
def _flip(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    dims = {d % len(xs) for d in a[1]}
    vs = B.ivars(len(xs))
    xi = tuple(Affine.var(v, -1) + (s - 1) if d in dims else Affine.var(v) for d, (v, s) in enumerate(zip(vs, xs)))
    c.emit(Kernel(c.name("flip"), tuple(zip(vs, xs)), Load(c.out, B.plain(vs)), "=", Load(x, xi)))


@lowers("aten.repeat.default")
def _repeat(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    reps = list(a[1])
    xs_full = (1,) * (len(reps) - len(xs)) + tuple(xs)
    off = len(reps) - len(xs)
    rv = B.ivars(len(reps), "r")
    vs = B.ivars(len(reps))
    loops = tuple(zip(rv, reps)) + tuple(zip(vs, xs_full))
    oi = tuple(Affine.var(r, s) + Affine.var(v) for r, v, s in zip(rv, vs, xs_full))
    xi = tuple(Affine.var(v) for v in vs[off:])
    c.emit(Kernel(c.name("rep"), loops, Load(c.out, oi), "=", Load(x, xi)))


@lowers("aten.slice_scatter.default", "aten.select_scatter.default")
def _slice_scatter(c: Ctx, a: tuple, kw: dict) -> None:
    base, src = c.t(a[0]), c.t(a[1])
    dim = a[2] if len(a) > 2 else 0
    bs, ss = c.shape(base), c.shape(src)
    dim %= len(bs)
    c.ew(lambda b: b, a[0])
    vs = B.ivars(len(bs))
    if "select" in str(c.node.target):
        index = a[3] % bs[dim]
        svs = [v for d, v in enumerate(vs) if d != dim]
        oi = tuple(Affine.of(index) if d == dim else Affine.var(v) for d, v in enumerate(vs))
        c.emit(Kernel(c.name("scat"), tuple(zip(svs, ss)), Load(c.out, oi), "=", Load(src, B.plain(svs))))
        return
    start = a[3] if len(a) > 3 and a[3] is not None else 0
    step = a[5] if len(a) > 5 else 1
    start = start + bs[dim] if start < 0 else min(start, bs[dim])
    oi = tuple(Affine.var(v, step) + start if d == dim else Affine.var(v) for d, v in enumerate(vs))
    c.emit(Kernel(c.name("scat"), tuple(zip(vs, ss)), Load(c.out, oi), "=", Load(src, B.plain(vs))))


# ---- gathers (data-dependent indices: the composition layer)

@lowers("aten.embedding.default")
def _embedding(c: Ctx, a: tuple, kw: dict) -> None:
    c.t(a[0])
    c.t(a[1])
    c.out  # noqa: B018
    c.kind, c.call = "gather", ("embedding",)


@lowers("aten.index_select.default")
def _index_select(c: Ctx, a: tuple, kw: dict) -> None:
    c.t(a[0])
    c.t(a[2])
    c.out  # noqa: B018
    c.kind, c.call = "gather", ("index_select", a[1])


@lowers("aten.gather.default")
def _gather(c: Ctx, a: tuple, kw: dict) -> None:
    c.t(a[0])
    c.t(a[2])
    c.out  # noqa: B018
    c.kind, c.call = "gather", ("gather", a[1])


# ---- views (no traffic)

def _view_lowering(kind: str) -> Callable[[Ctx, tuple, dict], None]:
    def fn(c: Ctx, a: tuple, kw: dict) -> None:
        x = c.t(a[0])
        xs = c.shape(x)
        os_ = c.out_shape
        if kind in ("reshape", "expand"):
            c.view(kind, tuple(os_))
        elif kind == "permute":
            c.view("permute", tuple(d % len(xs) for d in a[1]))
        elif kind == "transpose":
            d0, d1 = a[1] % len(xs), a[2] % len(xs)
            perm = list(range(len(xs)))
            perm[d0], perm[d1] = perm[d1], perm[d0]
            c.view("permute", tuple(perm))
        elif kind == "t":
            c.view("permute", tuple(reversed(range(len(xs)))))
        elif kind == "unsqueeze":
            c.view("unsqueeze", a[1] % (len(xs) + 1))
        elif kind == "squeeze":
            dims = a[1] if len(a) > 1 else [d for d, s in enumerate(xs) if s == 1]
            dims = [dims] if isinstance(dims, int) else list(dims)
            c.view("squeeze", tuple(d % len(xs) for d in dims if xs[d % len(xs)] == 1))
        elif kind == "slice":
            dim = (a[1] if len(a) > 1 else 0) % len(xs)
            start = a[2] if len(a) > 2 and a[2] is not None else 0
            end = a[3] if len(a) > 3 and a[3] is not None else xs[dim]
            step = a[4] if len(a) > 4 else 1
            start = max(0, start + xs[dim]) if start < 0 else min(start, xs[dim])
            end = max(0, end + xs[dim]) if end < 0 else min(end, xs[dim])
            c.view("slice", dim, start, end, step)
        elif kind == "select":
            dim = a[1] % len(xs)
            c.view("select", dim, a[2] % xs[dim])
        elif kind == "alias":
            c.view("alias")
        c.outputs.append(c.out) if c.out not in c.outputs else None
    return fn


for _n, _k in {
    "aten.view.default": "reshape", "aten._unsafe_view.default": "reshape", "aten.reshape.default": "reshape",
    "aten.expand.default": "expand", "aten.permute.default": "permute", "aten.transpose.int": "transpose",
    "aten.t.default": "t", "aten.unsqueeze.default": "unsqueeze", "aten.squeeze.dim": "squeeze",
    "aten.squeeze.dims": "squeeze", "aten.squeeze.default": "squeeze", "aten.slice.Tensor": "slice",
    "aten.select.int": "select", "aten.alias.default": "alias", "aten.detach.default": "alias",
    "aten.lift_fresh.default": "alias", "aten.dropout.default": "alias",
}.items():
    LOWERINGS[_n] = _view_lowering(_k)


# ------------------------------------------------------------------ driver

def lower(traced: Traced) -> Lowered:
    lw = LowerState(traced)
    prog = lw.program
    ep = traced.exported
    graph = ep.graph
    for node in graph.nodes:
        if node.op == "placeholder":
            lw.define_outputs(node)
            kind = traced.kinds.get(node.name, "input")
            if lw.env[node.name] is not None:  # a complex input has no IR tensor
                (prog.inputs if kind == "input" else prog.params).append(lw.env[node.name])
        elif node.op == "get_attr":
            lw.define_outputs(node)
            if lw.env[node.name] is not None:
                prog.params.append(lw.env[node.name])
        elif node.op == "output":
            for o in node.args[0]:
                if hasattr(o, "name") and isinstance(lw.env.get(o.name), str):
                    prog.outputs.append(lw.env[o.name])
        elif node.op == "call_function":
            _lower_node(lw, node)
    return Lowered(prog, lw.unsupported, lw.node_of_tensor)


def _lower_node(lw: LowerState, node: Any) -> None:
    target = node.target
    line = lw.traced.lines.get(node.name)
    if target is operator.getitem:
        src = lw.env.get(node.args[0].name)
        if isinstance(src, tuple) and src and src[0] == "__split__":
            _split_view(lw, node, line)
        elif isinstance(src, (list, tuple)) and node.args[1] < len(src):
            lw.env[node.name] = src[node.args[1]]
        else:
            lw.env[node.name] = None
        return
    name = str(target)
    if name.startswith("aten.sym_") or name.startswith("aten._assert"):
        lw.env[node.name] = None
        return
    cdt = complex_dtype(node)
    if cdt is not None:  # its real outputs (view_as_real, abs) stay typed for their consumers
        lw.define_outputs(node)
        lw.unsupported.append(UnsupportedOp(name, line, f"complex dtype {cdt} has no lowering"))
        return
    reason = lower_index.data_dependent(node)  # nonzero, boolean masks: no static shape
    if reason is not None:
        lw.env[node.name] = None
        if reason:
            lw.unsupported.append(UnsupportedOp(name, line, reason))
        return
    if name in ("aten.split_with_sizes.default", "aten.split.Tensor", "aten.unbind.int",
                "aten.chunk.default"):
        lw.env[node.name] = ("__split__", node)
        return
    lw.define_outputs(node)
    fn = LOWERINGS.get(name)
    if fn is None:
        why = NOT_LOWERED.get(name.split(".")[1]) if name.startswith("aten.") else None
        lw.unsupported.append(UnsupportedOp(name, line, f"not lowered: {why}" if why else "no lowering for this op yet"))
        return
    c = Ctx(lw, node)
    try:
        fn(c, tuple(node.args), dict(node.kwargs))
    except Unsupported as exc:
        lw.unsupported.append(UnsupportedOp(name, line, str(exc)))
        return
    except Exception as exc:  # a lowering bug must not lose the rest of the entry
        lw.unsupported.append(UnsupportedOp(name, line, f"lowering failed: {type(exc).__name__}: {exc}"))
        return
    for o in lw.out_names(node):
        if o is not None and o not in c.outputs and c.kind in ("view", "gather", "alloc"):
            c.outputs.append(o)
    try:
        for k in c.kernels:
            validate_kernel(k, lw.program.tensors)
    except IRValidationError as exc:  # a lowering bug: report it, keep the rest of the entry
        lw.unsupported.append(UnsupportedOp(name, line, f"lowering produced invalid IR: {exc}"))
        return
    op = Op(id=node.name, target=name, line=line, inputs=c.inputs, outputs=c.outputs,
            kernels=c.kernels, kind=c.kind, call=c.call)
    if c.kind == "view":
        lw.program.views[c.outputs[0]] = c.inputs[0]
        base = c.inputs[0]
        uniq = lw.program.unique_numel(base)
        if c.call and c.call[0] in ("slice", "select", "diagonal"):
            uniq = min(uniq, lw.program.tensors[c.outputs[0]].numel)
        lw.program.unique[c.outputs[0]] = uniq
    lw.program.ops.append(op)


def complex_dtype(node: Any) -> str | None:
    """The complex dtype an fx node produces or reads, if any (e.g. ``"complex64"``)."""
    def vals(x: Any):
        if isinstance(x, (list, tuple)):
            for y in x:
                yield from vals(y)
        elif isinstance(x, torch.Tensor):
            yield x
        elif hasattr(x, "meta"):
            yield from vals(x.meta.get("val"))
    for v in vals([node, list(node.args), list(node.kwargs.values())]):
        if v.is_complex():
            return dtype_name(v.dtype)
    return None


def _split_view(lw: LowerState, node: Any, line: int | None) -> None:
    """getitem on split/unbind/chunk: each piece is a slice or select view of the input."""
    src = lw.env.get(node.args[0].name)
    if not (isinstance(src, tuple) and src and src[0] == "__split__"):
        return
    parent = src[1]
    lw.define_outputs(node)
    i = node.args[1]
    x = lw.env[parent.args[0].name]
    xs = lw.program.tensors[x].shape
    pname = str(parent.target)
    a = parent.args
    if "unbind" in pname:
        dim = (a[1] if len(a) > 1 else 0) % len(xs)
        call_ = ("select", dim, i)
    else:
        dim = (a[2] if len(a) > 2 else parent.kwargs.get("dim", 0)) % len(xs)
        if "split_with_sizes" in pname:
            sizes = list(a[1])
        elif "chunk" in pname:
            n = a[1]
            step = -(-xs[dim] // n)
            sizes = [min(step, xs[dim] - k * step) for k in range(n) if k * step < xs[dim]]
        else:
            step = a[1]
            sizes = [min(step, xs[dim] - k) for k in range(0, xs[dim], step)]
        start = sum(sizes[:i])
        call_ = ("slice", dim, start, start + sizes[i], 1)
    out = lw.env[node.name]
    lw.program.ops.append(Op(id=node.name, target=pname, line=line, inputs=[x], outputs=[out],
                             kind="view", call=call_))
    lw.program.views[out] = x
    lw.program.unique[out] = lw.program.tensors[out].numel


# Family modules register more lowerings into LOWERINGS when imported.
from solar_lsp.frontend.torch import lower_index, lower_recurrent, lower_spatial  # noqa: E402,F401
