"""Primitive table of the JAX frontend: each lax primitive -> Affine Loop IR kernels.

Families share the builders of ``builders.py`` with the torch lowering. Data movement
follows the torch conventions: reshapes, broadcasts, transposes, squeezes and static slices
are views (no traffic); data-dependent indexing, sorting and selection are composition steps
whose semantics and counts live in ``ir/calls_index.py`` (the same calls torch uses).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.builders import CAST
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.jax.lower import JCtx
from solar_lsp.ir.core import Affine, Const, Expr, Guard, Index, Kernel, Load, call

Shape = tuple[int, ...]
LOWERINGS: dict[str, Callable[[JCtx], None]] = {}


def lowers(*names: str):
    def deco(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


# ------------------------------------------------------------------ elementwise

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


# Primitives with a known reason for having no lowering: listed in the entry's
# `unsupported` with this reason (checked before the table and the dtype check, so a PRNG
# op on a key says what it is rather than that keys have no IR type).
_RANDOM = ("random_seed", "random_bits", "random_wrap", "random_unwrap", "random_split",
           "random_fold_in", "random_clone", "random_gamma", "random_gamma_grad",
           "threefry2x32", "threefry4x32", "rng_bit_generator", "rng_uniform")
UNLOWERED: dict[str, str] = {
    **{p: "random number generation has no lowering (its bits are not modelled); the rest "
          "of the entry is analyzed" for p in _RANDOM},
    **{p: f"{p} has no scalar function in the IR yet" for p in
       ("erf_inv", "lgamma", "digamma", "igamma", "igammac", "bessel_i0e", "bessel_i1e",
        "nextafter", "population_count", "clz")},
    "shift_right_logical": "shift_right_logical has no scalar function in the IR yet "
                           "(only the arithmetic shift, shr)",
    "bitcast_convert_type": "bitcast_convert_type reinterprets bits; the IR has no bit-level "
                            "reinterpretation",
}


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


# ------------------------------------------------------------------ views and copies

def _view_or_fill(c: JCtx) -> bool:
    """A literal operand materialises as a fill (what eager mode writes); True when done."""
    if c.is_lit(0):
        c.fill(float(c.lit(0)))
        return True
    return False


@lowers("broadcast_in_dim")
def _broadcast(c: JCtx) -> None:
    if _view_or_fill(c):
        return
    x = c.t(0)
    xs, os_ = c.shape(x), c.out_shape()
    dims = tuple(c.p["broadcast_dimensions"])
    if xs == os_:
        c.kind = "alias"
        return
    if dims == tuple(range(len(os_) - len(xs), len(os_))):  # numpy broadcasting from the left
        c.view("expand", tuple(os_))
    elif math.prod(xs) == math.prod(os_):  # only unit dims inserted
        c.view("reshape", tuple(os_))
    else:
        ones = [1] * len(os_)
        for i, d in enumerate(dims):
            ones[d] = xs[i]
        mid = c.pre_view(x, tuple(ones), ("reshape", tuple(ones)))
        c.inputs = [mid]
        c.view("expand", tuple(os_))


@lowers("reshape")
def _reshape(c: JCtx) -> None:
    if c.p.get("dimensions") is not None:
        raise Unsupported("reshape with a dimension permutation")
    if _view_or_fill(c):
        return
    c.t(0)
    c.view("reshape", tuple(c.out_shape()))


@lowers("squeeze")
def _squeeze(c: JCtx) -> None:
    x = c.t(0)
    xs = c.shape(x)
    c.view("squeeze", tuple(d % len(xs) for d in c.p["dimensions"]))


@lowers("expand_dims")
def _expand_dims(c: JCtx) -> None:
    c.t(0)
    c.view("reshape", tuple(c.out_shape()))


@lowers("transpose")
def _transpose(c: JCtx) -> None:
    c.t(0)
    c.view("permute", tuple(int(d) for d in c.p["permutation"]))


def _slice_chain(c: JCtx, x: str, starts: list[int], limits: list[int], strides: list[int]) -> None:
    """Static multi-dim slice as views: one ``slice`` view per sliced dim (derived
    intermediates between them)."""
    xs = list(c.shape(x))
    todo = [d for d in range(len(xs)) if (starts[d], limits[d], strides[d]) != (0, xs[d], 1)]
    if not todo:
        c.kind = "alias"
        c.inputs = [x]
        return
    cur = x
    for d in todo[:-1]:
        xs[d] = len(range(starts[d], limits[d], strides[d]))
        cur = c.pre_view(cur, tuple(xs), ("slice", d, starts[d], limits[d], strides[d]))
    d = todo[-1]
    c.inputs = [cur]
    c.view("slice", d, starts[d], limits[d], strides[d])


@lowers("slice")
def _slice(c: JCtx) -> None:
    x = c.t(0)
    n = len(c.shape(x))
    strides = list(c.p["strides"] or (1,) * n)
    _slice_chain(c, x, list(c.p["start_indices"]), list(c.p["limit_indices"]), strides)


@lowers("split")
def _split(c: JCtx) -> None:
    from solar_lsp.ir.core import Op
    x = c.t(0)
    axis = int(c.p["axis"])
    start = 0
    for j, size in enumerate(c.p["sizes"]):
        op = Op(id=c.lw.new_op_id("split"), target="split", line=c.line, inputs=[x],
                outputs=[c.outs[j]], kind="view", call=("slice", axis, start, start + int(size), 1),
                repeat=c.repeat)
        c.pre_ops.append(op)
        start += int(size)
    c.kind = "none"


@lowers("rev")
def _rev(c: JCtx) -> None:
    x = c.t(0)
    xs = c.shape(x)
    dims = {int(d) for d in c.p["dimensions"]}
    vs = B.ivars(len(xs))
    xi = tuple(Affine.var(v, -1) + (s - 1) if d in dims else Affine.var(v) for d, (v, s) in enumerate(zip(vs, xs)))
    c.emit(Kernel(c.name("rev"), tuple(zip(vs, xs)), Load(c.out(), B.plain(vs)), "=", Load(x, xi)))


@lowers("concatenate")
def _concat(c: JCtx) -> None:
    dim = int(c.p["dimension"])
    o = c.out()
    off = 0
    for i in range(len(c.ins)):
        if c.is_lit(i):
            raise Unsupported("concatenate of a literal")
        name = c.t(i)
        s = c.shape(name)
        if s[dim] == 0:
            continue
        vs = B.ivars(len(s))
        oi = tuple(Affine.var(v) + (off if d == dim else 0) for d, v in enumerate(vs))
        c.emit(Kernel(c.name("cat"), tuple(zip(vs, s)), Load(o, oi), "=", Load(name, B.plain(vs))))
        off += s[dim]


@lowers("stack")
def _stack(c: JCtx) -> None:
    axis = int(c.p["axis"])
    o = c.out()
    for i in range(len(c.ins)):
        name = c.t(i)
        s = c.shape(name)
        vs = B.ivars(len(s))
        oi = list(B.plain(vs))
        oi.insert(axis, Affine.of(i))
        c.emit(Kernel(c.name("stack"), tuple(zip(vs, s)), Load(o, tuple(oi)), "=", Load(name, B.plain(vs))))


@lowers("pad")
def _pad(c: JCtx) -> None:
    x = c.t(0)
    xs = c.shape(x)
    os_ = c.out_shape()
    pv: float | Load = float(c.lit(1)) if c.is_lit(1) else Load(c.t(1), ())
    c.fill(pv)
    vs = B.ivars(len(xs))
    loops, xi, oi = [], [], []
    for d, (v, (lo, _hi, interior)) in enumerate(zip(vs, c.p["padding_config"])):
        lo, step = int(lo), int(interior) + 1
        first = max(0, -(lo // step)) if lo < 0 else 0  # first element that lands inside
        while lo + first * step < 0:
            first += 1
        last = xs[d] - 1
        while last >= first and lo + last * step >= os_[d]:
            last -= 1
        if last < first:
            return  # everything is cropped: the fill is the result
        loops.append((v, last - first + 1))
        xi.append(Affine.var(v) + first)
        oi.append(Affine.var(v, step) + (lo + first * step))
    c.emit(Kernel(c.name("pad"), tuple(loops), Load(c.out(), tuple(oi)), "=", Load(x, tuple(xi))))


# ------------------------------------------------------------------ reductions and scans

_REDUCE_OPS = {"reduce_sum": "+=", "reduce_max": "max=", "reduce_min": "min=", "reduce_prod": "*=",
               "reduce_and": "min=", "reduce_or": "max="}


@lowers(*_REDUCE_OPS)
def _reduce(c: JCtx) -> None:
    x = c.t(0)
    xs = c.shape(x)
    axes = [int(a) for a in c.p["axes"]]
    if not axes:
        c.ew(lambda v: v, 0)
        return
    pre = (lambda v: call("ne", v, 0.0)) if c.prim in ("reduce_and", "reduce_or") else None
    c.emit(B.reduce(c.name("red"), x, xs, axes, False, c.out(), _REDUCE_OPS[c.prim], pre=pre))


@lowers("argmax", "argmin")
def _argmax(c: JCtx) -> None:
    x = c.t(0)
    (axis,) = c.p["axes"]
    c.gather(("argmax", int(axis), False, c.prim == "argmax"), [x])


@lowers("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
def _cum(c: JCtx) -> None:
    """A scan as a recurrence (the torch lowering's form): ``out[first] = x[first]`` then
    ``out[v+1] = out[v] (+) x[v+1]``: n-1 combines per line, run in order. A reverse scan
    runs forward over flipped copies inside the op (copies cost no arithmetic, and the op's
    buffer is shared, so neither adds traffic)."""
    x = c.t(0)
    xs = c.shape(x)
    o = c.out()
    if not xs:
        c.ew(lambda v: v, 0)
        return
    dim = int(c.p["axis"]) % len(xs)
    rev = bool(c.p.get("reverse", False))
    n = xs[dim]
    vs = B.ivars(len(xs))
    loops = tuple(zip(vs, xs))
    flip = tuple(Affine.var(v, -1) + (n - 1) if d == dim else Affine.var(v) for d, v in enumerate(vs))
    src, dst = x, o
    if rev:
        src, dst = c.tmp(xs, c.dtype(x)), c.tmp(xs, c.out_dtype())
        c.emit(Kernel(c.name("flip"), loops, Load(src, B.plain(vs)), "=", Load(x, flip)))
    first_loops = tuple((v, s) for d, (v, s) in enumerate(zip(vs, xs)) if d != dim)
    first_idx = tuple(Affine.of(0) if d == dim else Affine.var(v) for d, v in enumerate(vs))
    scan_loops = tuple((v, n - 1 if d == dim else s) for d, (v, s) in enumerate(zip(vs, xs)))
    prev = B.plain(vs)
    cur = tuple(Affine.var(v) + 1 if d == dim else Affine.var(v) for d, v in enumerate(vs))

    def combine(p: Expr, q: Expr) -> Expr:
        if c.prim == "cumsum":
            return call("add", p, q)
        if c.prim == "cumprod":
            return call("mul", p, q)
        if c.prim == "cummax":
            return call("max", p, q)
        if c.prim == "cummin":
            return call("min", p, q)
        return call("add", call("max", p, q),
                    call("log1p", call("exp", call("neg", call("abs", call("sub", p, q))))))
    c.emit(Kernel(c.name("scan0"), first_loops, Load(dst, first_idx), "=", Load(src, first_idx)))
    if n > 1:
        c.emit(Kernel(c.name("scan"), scan_loops, Load(dst, cur), "=", combine(Load(dst, prev), Load(src, cur))))
    if rev:
        c.emit(Kernel(c.name("unflip"), loops, Load(o, B.plain(vs)), "=", Load(dst, flip)))


def _window(c: JCtx, x: str, xs: Shape, os_: Shape, window: list[int], strides: list[int],
            pads: list[tuple[int, int]], wdil: list[int]) -> tuple[list, list, list]:
    loops, xi, guards = [], [], []
    for d in range(len(xs)):
        s, k = f"s{d}", f"k{d}"
        loops.append((s, os_[d]))
        e = Affine.var(s, strides[d]) + (-pads[d][0])
        if window[d] > 1:
            loops.append((k, window[d]))
            e = e + Affine.var(k, wdil[d])
        xi.append(e)
        ext = dict(loops)
        lo, hi = e.bounds(ext)
        if lo < 0 or hi >= xs[d]:
            guards.append(Guard(e, 0, xs[d]))
    outer = [lp for lp in loops if lp[0].startswith("s")]
    inner = [lp for lp in loops if lp[0].startswith("k")]
    return outer + inner, xi, guards


@lowers("reduce_window_sum", "reduce_window_max", "reduce_window_min")
def _reduce_window(c: JCtx) -> None:
    x = c.t(0)
    xs, os_ = c.shape(x), c.out_shape()
    p = c.p
    if any(int(b) != 1 for b in p["base_dilation"]):
        raise Unsupported("reduce_window with base dilation")
    loops, xi, guards = _window(c, x, xs, os_, [int(w) for w in p["window_dimensions"]],
                                [int(s) for s in p["window_strides"]],
                                [(int(a), int(b)) for a, b in p["padding"]],
                                [int(w) for w in p["window_dilation"]])
    op = {"reduce_window_sum": "+=", "reduce_window_max": "max=", "reduce_window_min": "min="}[c.prim]
    oi = tuple(Affine.var(f"s{d}") for d in range(len(os_)))
    c.emit(Kernel(c.name("win"), tuple(loops), Load(c.out(), oi), op, Load(x, tuple(xi)),
                  guards=tuple(guards)))


# ------------------------------------------------------------------ contractions

@lowers("dot_general")
def _dot_general(c: JCtx) -> None:
    (lc, rc), (lb, rb) = c.p["dimension_numbers"]
    x, y = c.t(0), c.t(1)
    xs, ys = c.shape(x), c.shape(y)
    xi: list[str | None] = [None] * len(xs)
    yi: list[str | None] = [None] * len(ys)
    ext: dict[str, int] = {}
    bvars, kvars, mvars, nvars = [], [], [], []
    for i, (a, b) in enumerate(zip(lb, rb)):
        v = f"b{i}"
        ext[v], xi[a], yi[b] = xs[a], v, v
        bvars.append(v)
    for i, (a, b) in enumerate(zip(lc, rc)):
        v = f"k{i}"
        ext[v], xi[a], yi[b] = xs[a], v, v
        kvars.append(v)
    for d in range(len(xs)):
        if xi[d] is None:
            v = f"m{len(mvars)}"
            ext[v], xi[d] = xs[d], v
            mvars.append(v)
    for d in range(len(ys)):
        if yi[d] is None:
            v = f"n{len(nvars)}"
            ext[v], yi[d] = ys[d], v
            nvars.append(v)
    out_vars = bvars + mvars + nvars
    xa = tuple(Affine.var(v) for v in xi)
    ya = tuple(Affine.var(v) for v in yi)
    o = c.out()
    if not kvars:  # an outer product: no reduction, elementwise multiplies
        c.emit(Kernel(c.name("outer"), tuple((v, ext[v]) for v in out_vars), Load(o, B.plain(out_vars)),
                      "=", call("mul", Load(x, xa), Load(y, ya))))
        return
    k = B.contraction(c.name("dot"), o, out_vars, x, xa, y, ya, ext)
    if not mvars or not nvars:  # matrix-vector: GEMV on the vector units (docs/sol-model.md)
        import dataclasses
        k = dataclasses.replace(k, unit="vector")
    c.emit(k)


@lowers("conv_general_dilated")
def _conv(c: JCtx) -> None:
    p = c.p
    if int(p["batch_group_count"]) != 1:
        raise Unsupported("convolution with batch_group_count > 1")
    dn = p["dimension_numbers"]
    ls, rs, os_spec = tuple(dn.lhs_spec), tuple(dn.rhs_spec), tuple(dn.out_spec)
    x, w = c.t(0), c.t(1)
    xs, ws = c.shape(x), c.shape(w)
    o = c.out()
    osh = c.shape(o)
    nd = len(xs) - 2
    G = int(p["feature_group_count"])
    strides = [int(s) for s in p["window_strides"]]
    pads = [(int(a), int(b)) for a, b in p["padding"]]
    ldil = [int(d) for d in (p["lhs_dilation"] or (1,) * nd)]
    rdil = [int(d) for d in (p["rhs_dilation"] or (1,) * nd)]
    transposed = any(d != 1 for d in ldil)
    if transposed and any(s != 1 for s in strides):
        raise Unsupported("convolution with both input dilation and window strides")
    cin, cout = xs[ls[1]], ws[rs[0]]
    cg_in, cg_out = cin // G, cout // G
    ext = {"n": xs[ls[0]], "g": G, "o": cg_out, "c": cg_in}
    xi: list[Affine] = [Affine.of(0)] * len(xs)
    wi: list[Affine] = [Affine.of(0)] * len(ws)
    oi: list[Affine] = [Affine.of(0)] * len(osh)
    xi[ls[0]], xi[ls[1]] = Affine.var("n"), Affine.var("g", cg_in) + Affine.var("c")
    wi[rs[0]], wi[rs[1]] = Affine.var("g", cg_out) + Affine.var("o"), Affine.var("c")
    oi[os_spec[0]], oi[os_spec[1]] = Affine.var("n"), Affine.var("g", cg_out) + Affine.var("o")
    guards = []
    sp = [f"s{d}" for d in range(nd)]
    ks = [f"k{d}" for d in range(nd)]
    for d in range(nd):
        ext[ks[d]] = ws[rs[2 + d]]
        wi[rs[2 + d]] = Affine.var(ks[d])
        if not transposed:
            ext[sp[d]] = osh[os_spec[2 + d]]
            e = Affine.var(sp[d], strides[d]) + Affine.var(ks[d], rdil[d]) + (-pads[d][0])
            xi[ls[2 + d]] = e
            oi[os_spec[2 + d]] = Affine.var(sp[d])
            lo, hi = e.bounds(ext)
            if lo < 0 or hi >= xs[ls[2 + d]]:
                guards.append(Guard(e, 0, xs[ls[2 + d]]))
        else:  # input dilation: scatter form over the real input points (no zero products)
            ext[sp[d]] = xs[ls[2 + d]]
            xi[ls[2 + d]] = Affine.var(sp[d])
            e = Affine.var(sp[d], ldil[d]) + Affine.var(ks[d], -rdil[d]) + pads[d][0]
            oi[os_spec[2 + d]] = e
            lo, hi = e.bounds(ext)
            if lo < 0 or hi >= osh[os_spec[2 + d]]:
                guards.append(Guard(e, 0, osh[os_spec[2 + d]]))
    outv = ["n", "g", "o"] + sp + (ks if transposed else [])
    init = "identity"
    if transposed:  # scatter form: zero the output first, then accumulate onto it
        c.fill(0.0)
        init = "keep"
    c.emit(B.contraction(c.name("conv"), o, outv, x, tuple(xi), w, tuple(wi), ext, init=init,
                         guards=guards, out_idx=tuple(oi)))


# ------------------------------------------------------------------ indexing, sorting

def _dynamic_index(c: JCtx, x_shape: Shape, starts: list, sizes: list[int],
                   only_dynamic: bool) -> tuple[dict[int, str], list[int]]:
    """Index tensors for the dims sliced at a traced start (clamped as XLA clamps), shaped
    as an open mesh over those dims (they must be adjacent). Returns dim -> index tensor,
    and the static starts (clamped) of the other dims."""
    dyn = [d for d in range(len(x_shape)) if sizes[d] < x_shape[d]
           and (not only_dynamic or not isinstance(starts[d], (int, float)))]
    if dyn and dyn != list(range(dyn[0], dyn[-1] + 1)):
        raise Unsupported("dynamic slicing of non-adjacent dims")
    static = [0 if isinstance(s, str) else max(0, min(int(s), n - k))
              for s, n, k in zip(starts, x_shape, sizes)]
    tensors: dict[int, str] = {}
    kernels, inputs = [], []
    for i, d in enumerate(dyn):
        shape = tuple(sizes[d] if j == i else 1 for j in range(len(dyn)))
        name = c.lw.new_tensor(f"{c.prim}_i", shape, "int32")
        vs = B.ivars(len(shape))
        hi = float(x_shape[d] - sizes[d])
        if isinstance(starts[d], str):
            c.use(starts[d])
            start: Expr = call("max", call("min", Load(starts[d], ()), hi), 0.0)
            inputs.append(starts[d])
        else:
            start = Const(float(static[d]))
        kernels.append(Kernel(c.name("idx"), tuple(zip(vs, shape)), Load(name, B.plain(vs)), "=",
                              call("add", start, Index(Affine.var(vs[i])))))
        tensors[d] = name
    if kernels:
        c.pre_compute(kernels, list(dict.fromkeys(inputs)), list(tensors.values()))
    return tensors, static


def _starts(c: JCtx, first: int) -> list:
    return [int(c.lit(i)) if c.is_lit(i) else c.ins[i] for i in range(first, len(c.ins))]


@lowers("dynamic_slice")
def _dynamic_slice(c: JCtx) -> None:
    x = c.t(0)
    xs = c.shape(x)
    sizes = [int(s) for s in c.p["slice_sizes"]]
    starts = _starts(c, 1)
    dyn_dims = [d for d in range(len(xs)) if isinstance(starts[d], str) and sizes[d] < xs[d]]
    static = [max(0, min(s, n - k)) if isinstance(s, int) else 0 for s, n, k in zip(starts, xs, sizes)]
    if not dyn_dims:  # every start is known: a view
        _slice_chain(c, x, static, [s + k for s, k in zip(static, sizes)], [1] * len(xs))
        return
    # static partial dims first as views, then the dynamic block as an index
    cur = x
    shape = list(xs)
    for d in range(len(xs)):
        if d not in dyn_dims and sizes[d] < xs[d]:
            shape[d] = sizes[d]
            cur = c.pre_view(cur, tuple(shape), ("slice", d, static[d], static[d] + sizes[d], 1))
    idx, _ = _dynamic_index(c, tuple(shape), starts, sizes, only_dynamic=True)
    ins, slots = _with_index_slots([cur], idx, len(xs))
    c.inputs = []
    c.gather(("index", 0, slots), ins)


@lowers("dynamic_update_slice")
def _dynamic_update_slice(c: JCtx) -> None:
    x, u = c.t(0), c.t(1)
    xs, us = c.shape(x), c.shape(u)
    starts = _starts(c, 2)
    if all(isinstance(s, int) or us[d] == xs[d] for d, s in enumerate(starts)):
        st = [max(0, min(s, n - k)) if isinstance(s, int) else 0 for s, n, k in zip(starts, xs, us)]
        c.ew(lambda v: v, 0)
        vs = B.ivars(len(xs))
        oi = tuple(Affine.var(v) + s for v, s in zip(vs, st))
        c.emit(Kernel(c.name("upd"), tuple(zip(vs, us)), Load(c.out(), oi), "=", Load(u, B.plain(vs))))
        return
    idx, _ = _dynamic_index(c, xs, starts, list(us), only_dynamic=False)
    ins, slots = _with_index_slots([x, u], idx, len(xs))
    c.inputs = []
    c.gather(("index_put", 0, slots, 1, False), ins)


def _with_index_slots(ins: list, idx: dict, rank: int) -> tuple[list, tuple]:
    """``ins`` followed by the index tensor of each indexed dim, and per dim the position of
    its index among them (None: the dim is not indexed), as the gather call expects."""
    ins = list(ins)
    slots = []
    for d in range(rank):
        if d in idx:
            ins.append(idx[d])
            slots.append(len(ins) - 1)
        else:
            slots.append(None)
    return ins, tuple(slots)


def _squeezed_index(c: JCtx, i: int) -> str:
    idx = c.t(i)
    s = c.shape(idx)
    if not s or s[-1] != 1:
        raise Unsupported(f"gather/scatter indices of shape {s} (expected a trailing dim of 1)")
    return c.pre_view(idx, tuple(s[:-1]), ("reshape", tuple(s[:-1])))


@lowers("gather")
def _gather(c: JCtx) -> None:
    dn = c.p["dimension_numbers"]
    x = c.t(0)
    xs, is_ = c.shape(x), c.shape(c.t(1))
    os_ = c.out_shape()
    sizes = tuple(int(s) for s in c.p["slice_sizes"])
    smap, coll = tuple(dn.start_index_map), tuple(dn.collapsed_slice_dims)
    obd = tuple(getattr(dn, "operand_batching_dims", ()))
    ibd = tuple(getattr(dn, "start_indices_batching_dims", ()))
    offs = tuple(dn.offset_dims)
    if len(smap) != 1 or coll != smap or not is_ or is_[-1] != 1:
        raise Unsupported(f"gather form not recognised ({dn})")
    a = smap[0]
    nb = len(is_) - 1
    if not obd and sizes == xs[:a] + (1,) + xs[a + 1:] \
            and os_ == xs[:a] + is_[:-1] + xs[a + 1:] \
            and offs == tuple(range(a)) + tuple(range(a + nb, len(os_))):
        idx = _squeezed_index(c, 1)  # jnp.take / x[idx]: rows along axis a
        c.inputs = []
        slots = tuple(1 if d == a else None for d in range(len(xs)))
        c.gather(("index", 0, slots), [x, idx])
        return
    others = tuple(d for d in range(len(xs)) if d != a)
    if obd == others and ibd == others and not offs and sizes == (1,) * len(xs) \
            and len(is_) == len(xs) + 1 and os_ == is_[:-1]:
        idx = _squeezed_index(c, 1)  # take_along_axis
        c.inputs = []
        c.gather(("gather", a), [x, idx])
        return
    raise Unsupported(f"gather form not recognised ({dn}, slice_sizes={sizes})")


@lowers("scatter-add", "scatter_add", "scatter")
def _scatter(c: JCtx) -> None:
    dn = c.p["dimension_numbers"]
    x, u = c.t(0), c.t(2)
    xs, is_, us = c.shape(x), c.shape(c.t(1)), c.shape(u)
    sd, ins_ = tuple(dn.scatter_dims_to_operand_dims), tuple(dn.inserted_window_dims)
    if getattr(dn, "operand_batching_dims", ()) or len(sd) != 1 or ins_ != sd or not is_ or is_[-1] != 1:
        raise Unsupported(f"scatter form not recognised ({dn})")
    a = sd[0]
    if us != xs[:a] + is_[:-1] + xs[a + 1:]:
        raise Unsupported(f"scatter updates of shape {us} for operand {xs} and indices {is_}")
    idx = _squeezed_index(c, 1)
    c.inputs = []
    slots = tuple(2 if d == a else None for d in range(len(xs)))
    c.gather(("index_put", 0, slots, 1, c.prim != "scatter"), [x, u, idx])


@lowers("sort")
def _sort(c: JCtx) -> None:
    dim = int(c.p["dimension"])
    n = len(c.ins)
    x = c.t(0)
    if n == 1:
        c.gather(("sort", dim, False, True), [x])
        return
    if n == 2 and int(c.p["num_keys"]) == 1 and c.lw.iota_dim.get(c.ins[1]) == dim:
        c.gather(("sort", dim, False, True), [x, c.t(1)], n_out=2)  # argsort: values, order
        return
    raise Unsupported("sort of several operands other than (keys, iota)")


@lowers("top_k")
def _top_k(c: JCtx) -> None:
    x = c.t(0)
    axis = int(c.p.get("axis", len(c.shape(x)) - 1))
    c.gather(("topk", int(c.p["k"]), axis % len(c.shape(x)), True, True), [x], n_out=2)
