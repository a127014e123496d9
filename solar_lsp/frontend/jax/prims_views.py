"""Data-movement JAX primitives: reshapes, broadcasts, transposes, squeezes and static
slices are views (no traffic, as in the torch lowering); reversal, concatenation, stacking
and padding are copy kernels."""

from __future__ import annotations

import math

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.jax.context import JCtx, lowers
from solar_lsp.ir.core import Affine, Kernel, Load, Op


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
    dims = c.p.get("dimensions")
    if dims is not None and list(dims) != list(range(len(c.in_shape(0)))):
        # reshape(x, dimensions=p) is reshape(transpose(x, p)): a permute view, then reshape
        x = c.t(0)
        xs = c.shape(x)
        perm = tuple(int(d) for d in dims)
        mid = c.pre_view(x, tuple(xs[d] for d in perm), ("permute", perm))
        c.inputs = [mid]
        c.view("reshape", tuple(c.out_shape()))
        return
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


def slice_chain(c: JCtx, x: str, starts: list[int], limits: list[int], strides: list[int]) -> None:
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
    slice_chain(c, x, list(c.p["start_indices"]), list(c.p["limit_indices"]), strides)


@lowers("split")
def _split(c: JCtx) -> None:
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



@lowers("unstack")
def _unstack(c: JCtx) -> None:
    """``unstack`` (the transpose of ``stack``): output j is the ``select`` view at index j."""
    x = c.t(0)
    axis = int(c.p["axis"]) % len(c.shape(x))
    for j in range(len(c.outs)):
        op = Op(id=c.lw.new_op_id("unstack"), target="unstack", line=c.line, inputs=[x],
                outputs=[c.outs[j]], kind="view", call=("select", axis, j), repeat=c.repeat)
        c.pre_ops.append(op)
    c.kind = "none"


@lowers("empty2", "empty")
def _empty(c: JCtx) -> None:
    """An uninitialised buffer (a cond's or a scan's placeholder residual): no data moves."""
    c.kind = "alloc"
    for j in range(len(c.outs)):
        c.out(j)
