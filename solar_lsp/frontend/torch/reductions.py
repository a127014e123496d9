"""Lowerings of reductions (sum, mean, extremes, products, any/all, logsumexp, vector norms,
variance and standard deviation) and of scans (cumsum and friends), which run as recurrences
along the scanned dim."""

from __future__ import annotations

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.torch.context import Ctx, Shape, lowers, node_for
from solar_lsp.ir.core import Affine, Const, Expr, Index, Kernel, Load, call


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


def _reduce_args(a: tuple, kw: dict, xs: Shape, t: str) -> tuple[list[int], bool, float | None]:
    """(reduced dims, keepdim, the norm's order or None) of a reduction call."""
    ordp = None
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
    return dims, keep, ordp


@lowers("aten.sum.dim_IntList", "aten.sum.default", "aten.mean.dim", "aten.mean.default",
        "aten.amax.default", "aten.amin.default", "aten.prod.dim_int", "aten.prod.default",
        "aten.any.dim", "aten.any.default", "aten.all.dim", "aten.all.default", "aten.any.dims",
        "aten.logsumexp.default", "aten.linalg_vector_norm.default")
def _reduce(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    t = str(c.node.target)
    dims, keep, ordp = _reduce_args(a, kw, xs, t)
    out = c.out
    name = c.name("red")
    t = t.split(".")[1]  # the op's base name: "sum", "logsumexp", ...
    if t == "sum":
        c.emit(B.reduce(name, x, xs, dims, keep, out, "+="))
    elif t == "mean":
        s = c.tmp(c.out_shape)
        c.emit(B.reduce(name, x, xs, dims, keep, s, "+="))
        c.ew(lambda v: call("div", v, float(_numel(xs, dims))), node_for(c, s))
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
        _logsumexp(c, name, x, xs, dims, keep, out)
    else:
        _vector_norm(c, name, x, xs, dims, keep, out, ordp)


def _logsumexp(c: Ctx, name: str, x: str, xs: Shape, dims: list[int], keep: bool, out: str) -> None:
    """max, then the sum of exp(x - max), then ``max + log(sum)``."""
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


def _vector_norm(c: Ctx, name: str, x: str, xs: Shape, dims: list[int], keep: bool, out: str,
                 ordp: float) -> None:
    """linalg.vector_norm of any order: 2, 1, +-inf, 0 (a count) and general p."""
    if ordp == 2:
        s = c.tmp(c.out_shape)
        c.emit(B.reduce(name, x, xs, dims, keep, s, "+=", pre=lambda v: call("mul", v, v)))
        c.ew(lambda v: call("sqrt", v), node_for(c, s))
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
        c.ew(lambda v: call("pow", v, 1.0 / p), node_for(c, s))


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

