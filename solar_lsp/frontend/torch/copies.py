"""Lowerings of copies with affine structure: concatenation, constant padding, flips,
repeats, and slice/select scatters; each is a plain copy kernel over shifted indices."""

from __future__ import annotations

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.torch.context import Ctx, lowers
from solar_lsp.ir.core import Affine, Const, Kernel, Load


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

