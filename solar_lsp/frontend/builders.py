"""Kernel builders shared by the lowerings: one pattern serves many ops.

Each builder returns Affine Loop IR kernels for a family (elementwise with broadcasting,
reductions, contractions, convolution, pooling, normalisation, softmax) so the op table in
``torch_lower`` stays a table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar_lsp.ir.core import Affine, Const, Expr, Guard, Kernel, Load, call

Shape = tuple[int, ...]


def ivars(rank: int, prefix: str = "i") -> list[str]:
    """Loop variable names for a rank-``rank`` nest: ``i0, i1, ...``."""
    return [f"{prefix}{d}" for d in range(rank)]


def plain(vs: Sequence[str]) -> tuple[Affine, ...]:
    """The identity index: each loop variable indexes its own axis."""
    return tuple(Affine.var(v) for v in vs)


def broadcast_index(in_shape: Shape, out_shape: Shape, out_vars: Sequence[str]) -> tuple[Affine, ...]:
    """Index of an input broadcast against the output (numpy rules)."""
    off = len(out_shape) - len(in_shape)
    idx = []
    for d, size in enumerate(in_shape):
        od = d + off
        if size == 1 and out_shape[od] != 1:
            idx.append(Affine.of(0))
        else:
            idx.append(Affine.var(out_vars[od]))
    return tuple(idx)


Operand = tuple[str, Shape] | float | int | bool


def elementwise(name: str, out: str, out_shape: Shape, operands: Sequence[Operand],
                fn: Callable[..., Expr]) -> Kernel:
    """``out[i] = fn(a[bcast(i)], b[bcast(i)], ...)``; python scalars become constants."""
    vs = ivars(len(out_shape))
    args: list[Expr] = []
    for o in operands:
        if isinstance(o, tuple):
            tname, shape = o
            args.append(Load(tname, broadcast_index(shape, out_shape, vs)))
        else:
            args.append(Const(float(o)))
    return Kernel(name, tuple(zip(vs, out_shape)), Load(out, plain(vs)), "=", fn(*args))


def reduce(name: str, x: str, x_shape: Shape, dims: Sequence[int], keepdim: bool, out: str,
           op: str, pre: Callable[[Expr, list[str]], Expr] | None = None,
           extra: Sequence[tuple[str, Shape]] = ()) -> Kernel:
    """``out[kept] op= pre(x[all])`` over ``dims``; ``extra`` tensors are indexed by kept dims
    (keepdim-shaped, e.g. a mean) and passed to ``pre`` after x."""
    rank = len(x_shape)
    dims = sorted(d % rank for d in dims) if rank else []
    vs = ivars(rank)
    loops = [(v, s) for d, (v, s) in enumerate(zip(vs, x_shape)) if d not in dims]
    loops += [(v, s) for d, (v, s) in enumerate(zip(vs, x_shape)) if d in dims]
    if keepdim:
        oidx = tuple(Affine.of(0) if d in dims else Affine.var(vs[d]) for d in range(rank))
    else:
        oidx = tuple(Affine.var(vs[d]) for d in range(rank) if d not in dims)
    xl: Expr = Load(x, plain(vs))
    kept_idx = tuple(Affine.of(0) if d in dims else Affine.var(vs[d]) for d in range(rank))
    extras = [Load(t, kept_idx[len(kept_idx) - len(s):]) for t, s in extra]
    expr = pre(xl, *extras) if pre else xl
    return Kernel(name, tuple(loops), Load(out, oidx), op, expr)


def contraction(name: str, out: str, out_vars: Sequence[str], a: str, a_idx: Sequence[Affine],
                b: str, b_idx: Sequence[Affine], extents: dict[str, int],
                init: str = "identity", guards: Sequence[Guard] = (),
                out_idx: Sequence[Affine] | None = None) -> Kernel:
    """A multiply-accumulate contraction on the matrix units."""
    used: list[str] = list(out_vars)
    for ix in list(a_idx) + list(b_idx) + list(out_idx or ()):
        for v in sorted(ix.vars()):
            if v not in used:
                used.append(v)
    oi = tuple(out_idx) if out_idx is not None else plain(out_vars)
    return Kernel(name, tuple((v, extents[v]) for v in used), Load(out, oi), "+=",
                  call("mul", Load(a, tuple(a_idx)), Load(b, tuple(b_idx))),
                  guards=tuple(guards), init=init, unit="matrix")


def window_index(out_var: str, k_var: str, stride: int, dilation: int, pad: int) -> Affine:
    """The input index of a sliding window: ``out*stride + k*dilation - pad``."""
    return Affine.var(out_var, stride) + Affine.var(k_var, dilation) + (-pad)


def conv(prefix: str, x: str, xs: Shape, w: str, ws: Shape, out: str, os_: Shape,
         stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int], groups: int,
         transposed: bool, bias: str | None) -> list[Kernel]:
    """N-d (transposed) convolution with groups; padding is an affine guard."""
    nd = len(xs) - 2
    kernels: list[Kernel] = []
    init = "identity"
    if bias is not None:
        vs = ivars(len(os_))
        kernels.append(Kernel(f"{prefix}_bias", tuple(zip(vs, os_)), Load(out, plain(vs)), "=",
                              Load(bias, (Affine.var(vs[1]),))))
        init = "keep"
    n, c_in = xs[0], xs[1]
    c_out = os_[1]
    cg_in = c_in // groups
    cg_out = c_out // groups
    ext = {"n": n, "g": groups, "o": cg_out, "c": cg_in}
    ks = [f"k{d}" for d in range(nd)]
    sp = [f"s{d}" for d in range(nd)]
    guards = []
    if not transposed:
        for d in range(nd):
            ext[ks[d]] = ws[2 + d]
            ext[sp[d]] = os_[2 + d]
        xi = [Affine.var("n"), Affine.var("g", cg_in) + Affine.var("c")]
        for d in range(nd):
            e = window_index(sp[d], ks[d], stride[d], dilation[d], padding[d])
            xi.append(e)
            lo, hi = e.bounds(ext)
            if lo < 0 or hi >= xs[2 + d]:
                guards.append(Guard(e, 0, xs[2 + d]))
        wi = [Affine.var("g", cg_out) + Affine.var("o"), Affine.var("c")] + [Affine.var(k) for k in ks]
        oi = [Affine.var("n"), Affine.var("g", cg_out) + Affine.var("o")] + [Affine.var(s) for s in sp]
        outv = ["n", "g", "o"] + sp
    else:
        # out[n, oc, i*s + k*d - p] += x[n, ic, i] * w[ic, oc_g, k]  (a scatter form)
        for d in range(nd):
            ext[ks[d]] = ws[2 + d]
            ext[sp[d]] = xs[2 + d]
        xi = [Affine.var("n"), Affine.var("g", cg_in) + Affine.var("c")] + [Affine.var(s) for s in sp]
        wi = [Affine.var("g", cg_in) + Affine.var("c"), Affine.var("o")] + [Affine.var(k) for k in ks]
        oi = [Affine.var("n"), Affine.var("g", cg_out) + Affine.var("o")]
        for d in range(nd):
            e = window_index(sp[d], ks[d], stride[d], dilation[d], padding[d])
            oi.append(e)
            lo, hi = e.bounds(ext)
            if lo < 0 or hi >= os_[2 + d]:
                guards.append(Guard(e, 0, os_[2 + d]))
        outv = ["n", "g", "o"] + sp + ks
    kernels.append(contraction(f"{prefix}_conv", out, outv, x, xi, w, wi, ext, init=init,
                               guards=guards, out_idx=oi))
    return kernels


def softmax(prefix: str, x: str, xs: Shape, dim: int, out: str, tmp: Callable[[Shape], str],
            log: bool = False) -> list[Kernel]:
    """Safe softmax: max, exp(x - max), sum, normalise (log: x - max - log(sum))."""
    rank = len(xs)
    dim %= rank
    ks = tuple(1 if d == dim else s for d, s in enumerate(xs))
    m = tmp(ks)
    s = tmp(ks)
    kernels = [reduce(f"{prefix}_max", x, xs, [dim], True, m, "max=")]
    if log:
        kernels.append(reduce(f"{prefix}_sum", x, xs, [dim], True, s, "+=",
                              pre=lambda xl, ml: call("exp", call("sub", xl, ml)), extra=[(m, ks)]))
        kernels.append(elementwise(f"{prefix}_out", out, xs, [(x, xs), (m, ks), (s, ks)],
                                   lambda a, mm, ss: call("sub", call("sub", a, mm), call("log", ss))))
        return kernels
    e = tmp(xs)
    kernels.append(elementwise(f"{prefix}_exp", e, xs, [(x, xs), (m, ks)],
                               lambda a, mm: call("exp", call("sub", a, mm))))
    kernels.append(reduce(f"{prefix}_sum", e, xs, [dim], True, s, "+="))
    kernels.append(elementwise(f"{prefix}_div", out, xs, [(e, xs), (s, ks)],
                               lambda a, ss: call("div", a, ss)))
    return kernels


#: IR cast function for each dtype name (torch and jax spell these the same way).
CAST = {"float64": "cast_f64", "float32": "cast_f32", "float16": "cast_f16", "bfloat16": "cast_bf16",
        "float8_e4m3fn": "cast_f8", "float8_e5m2": "cast_f8", "int64": "cast_i64", "int32": "cast_i32",
        "int16": "cast_i32", "int8": "cast_i8", "uint8": "cast_u8", "bool": "cast_bool"}
