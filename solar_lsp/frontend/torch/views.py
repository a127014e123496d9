"""Lowerings of views, which move no data: reshape, expand, permute, squeeze, slice, select,
aliases, and the pieces of split/unbind/chunk (handled by the driver at their getitem)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.torch.context import LOWERINGS, Ctx, LowerState
from solar_lsp.ir.core import Op


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


def _contiguous_strides(shape: tuple) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def as_strided_view(c: Ctx, a: tuple, kw: dict) -> None:
    """``as_strided`` that re-reads a contiguous input in row-major order (same element count,
    offset 0, the row-major strides of the new shape on every dim longer than 1) is a reshape;
    decompositions emit it (adaptive pooling of a transposed input). Any other striding reads
    the storage in a way no logical view describes, and stays unlowered."""
    x = c.t(a[0])
    size = tuple(a[1])
    stride = tuple(a[2])
    offset = a[3] if len(a) > 3 and a[3] is not None else kw.get("storage_offset", 0) or 0
    val = getattr(a[0], "meta", {}).get("val")
    numel = 1
    for n in size:
        numel *= n
    want = _contiguous_strides(size)
    if val is None or not val.is_contiguous() or offset != 0 or numel != val.numel() or any(
            n > 1 and s != w for n, s, w in zip(size, stride, want)):
        raise Unsupported("not lowered: arbitrary strides over the storage, not a view of the "
                          "logical tensor")
    c.view("reshape", size) if size != tuple(c.shape(x)) else c.view("alias")
    c.outputs.append(c.out) if c.out not in c.outputs else None


LOWERINGS["aten.as_strided.default"] = as_strided_view


def split_view(lw: LowerState, node: Any, line: int | None) -> None:
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
