"""Reducing JAX primitives: axis reductions, ``argmax``/``argmin``, cumulative scans (as
recurrences) and windowed reductions (pooling)."""

from __future__ import annotations

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.jax.context import JCtx, Shape, lowers
from solar_lsp.ir.core import Affine, Expr, Guard, Index, Kernel, Load, call

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



@lowers("select_and_scatter_add")
def _select_and_scatter_add(c: JCtx) -> None:
    """The gradient of a max (min) pool: each window's ``source`` value goes to the first
    position of the window holding its max (min), as XLA's select with ``ge`` (``le``)
    picks it. Three passes over the windows: the window's extremum, the first offset
    reaching it (the offset as a value, ``Index``), then the scatter-add onto a zeroed
    output (the transposed convolution's scatter form)."""
    src, x = c.t(0), c.t(1)
    xs, ss = c.shape(x), c.shape(src)
    p = c.p
    sel = getattr(p["select_prim"], "name", str(p["select_prim"]))
    if sel not in ("ge", "le", "gt", "lt"):
        raise Unsupported(f"select_and_scatter_add selecting with {sel}")
    window = [int(w) for w in p["window_dimensions"]]
    loops, xi, guards = _window(c, x, xs, ss, window, [int(s) for s in p["window_strides"]],
                                [(int(a), int(b)) for a, b in p["padding"]], [1] * len(xs))
    si = tuple(Affine.var(f"s{d}") for d in range(len(ss)))
    offset = Affine.of(0)  # the window offset k as one integer, row-major over the window
    mult = 1
    for d in reversed(range(len(xs))):
        if window[d] > 1:
            offset = offset + Affine.var(f"k{d}", mult)
            mult *= window[d]
    best, first = c.tmp(ss, c.dtype(x)), c.tmp(ss, "int32")
    g = tuple(guards)
    red = "max=" if sel in ("ge", "gt") else "min="
    c.emit(Kernel(c.name("sel"), tuple(loops), Load(best, si), red, Load(x, tuple(xi)), guards=g))
    hit = call("eq", Load(x, tuple(xi)), Load(best, si))
    c.emit(Kernel(c.name("first"), tuple(loops), Load(first, si), "min=",
                  call("where", hit, Index(offset), float(mult)), guards=g))
    c.fill(0.0)
    c.emit(Kernel(c.name("scatter"), tuple(loops), Load(c.out(), tuple(xi)), "+=",
                  call("where", call("eq", Index(offset), Load(first, si)), Load(src, si), 0.0),
                  guards=g, init="keep"))
