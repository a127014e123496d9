"""Lowerings for selection, sorting and indexing (registered into context.LOWERINGS).

Ops whose output positions depend on the data (sort, top-k, arg-extremes, advanced
indexing, scatters) are composition-layer steps (``c.kind = "gather"``) whose semantics,
work and reads live in ``ir/calls_index.py``; each call names its tensor arguments by their
position in the op's inputs, so a tensor passed twice is read once. Ops with affine
structure (full max/min, diagonal views) stay in the affine layer.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.torch.context import Ctx, lowers

_DATA_DEPENDENT = {
    "aten.nonzero.default": "nonzero: the number of nonzero elements decides the output shape",
    "aten.index.Tensor": "boolean-mask indexing: the number of True elements decides the output "
                         "shape (use torch.where(mask, x, 0) or a fixed-size index instead)",
    "aten.masked_select.default": "masked_select: the number of True elements decides the output "
                                  "shape",
}


def data_dependent(node: Any) -> str | None:
    """Why a node cannot be lowered with static shapes: a message for a tensor whose shape
    depends on the data (nonzero, boolean masks), "" for symbolic-size arithmetic that has
    no tensor work (``sym_size``, ``<built-in function ge>``), None for an ordinary node."""
    target = node.target
    if getattr(target, "__module__", None) == "_operator" and target is not operator.getitem:
        return ""  # python arithmetic on (symbolic) sizes
    vals = node.meta.get("val")
    vals = vals if isinstance(vals, (list, tuple)) else [vals]
    for v in vals:
        if isinstance(v, torch.Tensor) and not all(isinstance(s, int) for s in v.shape):
            name = str(node.target)
            return _DATA_DEPENDENT.get(name, f"{name}: its output shape {tuple(v.shape)} depends "
                                             "on the data, which static shapes cannot express")
    return None


def _pos(c: Ctx, arg: Any) -> int:
    """Position of a tensor argument among the op's (deduplicated) inputs."""
    name = c.t(arg)
    return c.inputs.index(name)


def _arg(a: tuple, kw: dict, i: int, name: str, default: Any) -> Any:
    return a[i] if len(a) > i else kw.get(name, default)


def _dim(d: int | None, rank: int) -> int | None:
    if d is None:
        return None
    return d % rank if rank else 0


def _select(c: Ctx, call: tuple, n_out: int) -> None:
    for i in range(n_out):
        c.out_n(i)
    c.kind, c.call = "gather", call


# ---- sorting and selection

@lowers("aten.sort.default", "aten.sort.stable")
def _sort(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    rank = len(c.shape(x))
    stable = False
    if "stable" in str(c.node.target):  # sort.stable(self, *, stable, dim, descending)
        dim, desc, stable = kw.get("dim", -1), kw.get("descending", False), kw.get("stable")
    else:
        dim, desc = _arg(a, kw, 1, "dim", -1), _arg(a, kw, 2, "descending", False)
    _select(c, ("sort", _dim(dim, rank), bool(desc), bool(stable)), 2)


@lowers("aten.topk.default")
def _topk(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    rank = len(c.shape(x))
    k = int(a[1])
    dim = _dim(_arg(a, kw, 2, "dim", -1), rank)
    largest = bool(_arg(a, kw, 3, "largest", True))
    ordered = bool(_arg(a, kw, 4, "sorted", True))
    _select(c, ("topk", k, dim, largest, ordered), 2)


@lowers("aten.argmax.default", "aten.argmin.default")
def _argmax(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    rank = len(c.shape(x))
    dim = _dim(_arg(a, kw, 1, "dim", None), rank)
    keep = bool(_arg(a, kw, 2, "keepdim", False))
    _select(c, ("argmax", dim, keep, "argmax" in str(c.node.target)), 1)


@lowers("aten.max.dim", "aten.min.dim")
def _max_dim(c: Ctx, a: tuple, kw: dict) -> None:
    """Values and indices in one pass (a selection); when the indices are never used, the
    values alone are an affine max/min reduction (fusible, like amax)."""
    x = c.t(a[0])
    xs = c.shape(x)
    dim = _dim(a[1], len(xs))
    keep = bool(_arg(a, kw, 2, "keepdim", False))
    is_max = "max" in str(c.node.target)
    index_used = any(u.target is operator.getitem and u.args[1] == 1 and u.users
                     for u in c.node.users)
    if not index_used and xs:
        op = "max=" if is_max else "min="
        c.emit(B.reduce(c.name("ext"), x, xs, [dim], keep, c.out_n(0), op))
        return
    _select(c, ("max_dim", dim, keep, is_max), 2)


@lowers("aten.max.default", "aten.min.default")
def _max_all(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    op = "max=" if "max" in str(c.node.target) else "min="
    c.emit(B.reduce(c.name("ext"), x, xs, list(range(len(xs))), False, c.out, op))


@lowers("aten.kthvalue.default")
def _kthvalue(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    rank = len(c.shape(x))
    dim = _dim(_arg(a, kw, 2, "dim", -1), rank)
    _select(c, ("kthvalue", int(a[1]), dim, bool(_arg(a, kw, 3, "keepdim", False))), 2)


@lowers("aten.median.dim", "aten.median.default", "aten.nanmedian.dim", "aten.nanmedian.default")
def _median(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    rank = len(c.shape(x))
    t = str(c.node.target)
    ignore_nan = "nanmedian" in t
    if t.endswith(".default"):
        _select(c, ("median", None, False, ignore_nan), 1)
        return
    dim = _dim(a[1], rank)
    _select(c, ("median", dim, bool(_arg(a, kw, 2, "keepdim", False)), ignore_nan), 2)


@lowers("aten.mode.default")
def _mode(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    rank = len(c.shape(x))
    dim = _dim(_arg(a, kw, 1, "dim", -1), rank)
    _select(c, ("mode", dim, bool(_arg(a, kw, 2, "keepdim", False))), 2)


# ---- indexing (embedding, index_select and gather: the composition layer)

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


@lowers("aten.index.Tensor")
def _index(c: Ctx, a: tuple, kw: dict) -> None:
    xp = _pos(c, a[0])
    slots = tuple(None if i is None else _pos(c, i) for i in a[1])
    if any(s is not None and c.dtype(c.inputs[s]) == "bool" for s in slots):
        raise Unsupported(_DATA_DEPENDENT["aten.index.Tensor"])
    c.out  # noqa: B018
    c.kind, c.call = "gather", ("index", xp, slots)


@lowers("aten.index_put.default", "aten.index_put_.default", "aten._unsafe_index_put.default")
def _index_put(c: Ctx, a: tuple, kw: dict) -> None:
    xp = _pos(c, a[0])
    slots = tuple(None if i is None else _pos(c, i) for i in a[1])
    masks = [s for s in slots if s is not None and c.dtype(c.inputs[s]) in ("bool", "uint8")]
    vp = _pos(c, a[2])
    if masks:  # x[mask] = v: static only when v is one value broadcast (a masked fill)
        if c.lw.program.tensors[c.inputs[vp]].numel != 1:
            raise Unsupported("index_put with a boolean mask and several values: the number of "
                              "True elements decides how many values are read (use "
                              "torch.where(mask, values, x) instead)")
        slots = tuple(("mask", s) if s in masks else s for s in slots)
    acc = bool(_arg(a, kw, 3, "accumulate", False))
    c.out  # noqa: B018
    c.kind, c.call = "gather", ("index_put", xp, slots, vp, acc)


_REDUCE = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin",
           "add": "sum", "multiply": "prod"}


@lowers("aten.scatter.src", "aten.scatter.value", "aten.scatter_add.default",
        "aten.scatter_reduce.two", "aten.scatter.reduce", "aten.scatter.value_reduce")
def _scatter(c: Ctx, a: tuple, kw: dict) -> None:
    t = str(c.node.target)
    xp = _pos(c, a[0])
    rank = len(c.shape(c.inputs[xp]))
    dim = _dim(a[1], rank)
    ip = _pos(c, a[2])
    src = a[3]
    sp = _pos(c, src) if hasattr(src, "name") else None
    value = None if sp is not None else float(src)
    reduce, include_self = None, True
    if "scatter_add" in t:
        reduce = "sum"
    elif "scatter_reduce" in t:
        reduce = _REDUCE[a[4]]
        include_self = bool(_arg(a, kw, 5, "include_self", True))
    elif t.endswith("reduce"):
        reduce = _REDUCE[_arg(a, kw, 4, "reduce", "add")]
    c.out  # noqa: B018
    c.kind, c.call = "gather", ("scatter", xp, ip, sp, dim, reduce, include_self, value)


@lowers("aten._embedding_bag_forward_only.default", "aten._embedding_bag.default")
def _embedding_bag(c: Ctx, a: tuple, kw: dict) -> None:
    wp, ip, op = _pos(c, a[0]), _pos(c, a[1]), _pos(c, a[2])
    mode = int(_arg(a, kw, 4, "mode", 0))
    psw = _arg(a, kw, 6, "per_sample_weights", None)
    pp = _pos(c, psw) if psw is not None else None
    last = bool(_arg(a, kw, 7, "include_last_offset", False))
    pad = _arg(a, kw, 8, "padding_idx", -1)
    # output 0 is the bags; offset2bag, bag_size and max_indices are bookkeeping torch
    # writes too (counted as outputs, checked through the bags they index)
    c.out_n(0)
    c.kind, c.call = "gather", ("embedding_bag", wp, ip, op, pp, mode, last,
                                None if pad is None or pad < 0 else int(pad))


@lowers("aten.masked_scatter.default")
def _masked_scatter(c: Ctx, a: tuple, kw: dict) -> None:
    xp, mp, sp = _pos(c, a[0]), _pos(c, a[1]), _pos(c, a[2])
    c.out  # noqa: B018
    c.kind, c.call = "gather", ("masked_scatter", xp, mp, sp)


@lowers("aten.nonzero.default", "aten.masked_select.default", "aten.unique_dim.default",
        "aten._unique2.default", "aten.unique_consecutive.default")
def _data_dependent(c: Ctx, a: tuple, kw: dict) -> None:
    raise Unsupported(_DATA_DEPENDENT.get(str(c.node.target),
                                          f"{c.node.target}: the output shape depends on the data"))


# ---- views and allocation

@lowers("aten.diagonal.default")
def _diagonal(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    rank = len(c.shape(x))
    offset = int(_arg(a, kw, 1, "offset", 0))
    d1 = _arg(a, kw, 2, "dim1", 0) % rank
    d2 = _arg(a, kw, 3, "dim2", 1) % rank
    c.view("diagonal", offset, d1, d2)
    c.outputs.append(c.out) if c.out not in c.outputs else None


@lowers("aten.empty_permuted.default")
def _empty_permuted(c: Ctx, a: tuple, kw: dict) -> None:
    c.out  # noqa: B018 - allocates without writing
    c.kind = "alloc"
