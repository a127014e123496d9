"""Composition-layer calls for data-dependent selection, sorting and indexing (docs/architecture.md §3).

Sort, top-k, arg-extremes, advanced indexing and scatters have data-dependent positions, so
they are composition steps (``Op.kind == "gather"``) rather than affine kernels. This module
gives each call kind three things, all functions of the call and shapes alone:

- ``apply``: its numpy semantics (what ``ir/execute.py::apply_call`` runs, float64 arrays in,
  one array or a tuple of arrays out, in the op's output order);
- ``work``: the vector operations it counts, a *lower* bound on any implementation
  (comparisons for selection, combines for accumulating scatters; docs/sol-model.md);
- ``input_reads``: how many elements of each input it must read (None: all of them), so that
  a gather reads only the rows it gathers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Shape = tuple[int, ...]

SELECT_KINDS = frozenset({"sort", "topk", "argmax", "max_dim", "kthvalue", "median", "mode"})
INDEX_KINDS = frozenset({"index", "index_put", "scatter", "embedding_bag", "masked_scatter"})
KINDS = SELECT_KINDS | INDEX_KINDS


# ---------------------------------------------------------------- helpers


def _line(shape: Shape, dim: int | None) -> tuple[int, int]:
    """(number of lines, line length) of a selection along ``dim`` (None: the flattened tensor)."""
    numel = math.prod(shape)
    if dim is None or not shape:
        return (1 if numel else 0), numel
    n = shape[dim]
    return (numel // n if n else 0), n


def _log2_falling(n: int, k: int) -> int:
    """ceil(log2(n! / (n-k)!)): comparisons needed to tell every ordered k-subset apart."""
    if k <= 0 or n <= 1:
        return 0
    bits = (math.lgamma(n + 1) - math.lgamma(n - k + 1)) / math.log(2)
    return max(0, math.ceil(bits - 1e-9))


def _log2_choose(n: int, k: int) -> int:
    """ceil(log2(C(n, k))): comparisons needed to tell every k-subset apart."""
    if k <= 0 or k >= n:
        return 0
    bits = (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(2)
    return max(0, math.ceil(bits - 1e-9))


def _sort_idx(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort; NaN is the largest value (torch's order), ties keep input order."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = np.flip(x, axis=axis)
    idx = np.flip(np.argsort(rev, axis=axis, kind="stable"), axis=axis)
    return (n - 1) - idx


def _take(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    return np.take_along_axis(x, idx, axis=axis)


def _index_tuple(slots: Sequence, ins: Sequence[np.ndarray]) -> tuple:
    """numpy key of an advanced index: ``slots[d]`` is the input position of dim d's index
    tensor, None for a full slice (torch's None slots), ``("mask", p)`` for a boolean mask."""
    key = []
    for s in slots:
        if s is None:
            key.append(slice(None))
        elif isinstance(s, tuple):
            key.append(ins[s[1]] != 0)
        else:
            key.append(ins[s].astype(np.int64))
    return tuple(key)


def _has_mask(slots: Sequence) -> bool:
    return any(isinstance(s, tuple) for s in slots)


def _indexed_shape(x_shape: Shape, slots: Sequence,
                   in_shapes: Sequence[Shape]) -> Shape:
    probe = np.empty(x_shape, dtype=np.int8)
    return probe[_index_tuple(slots, [np.zeros(s, dtype=np.int64) for s in in_shapes])].shape


def _keep(v: np.ndarray, axis: int | None, keepdim: bool) -> np.ndarray:
    return v if keepdim or axis is None else np.squeeze(v, axis=axis)


# ---------------------------------------------------------------- semantics


def apply(call: tuple, ins: list[np.ndarray]) -> np.ndarray | tuple[np.ndarray, ...]:
    """Run one call on float64 arrays (integer tensors arrive as exact float64 values)."""
    kind = call[0]
    fn = _APPLY.get(kind)
    if fn is None:
        raise ValueError(f"unsupported composition call {call!r}")
    return fn(call, ins)


def _sort(call: tuple, ins: list[np.ndarray]):
    _, dim, descending, _stable = call
    x = ins[0]
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.float64)
    idx = _sort_idx(x, dim, descending)
    return _take(x, idx, dim), idx.astype(np.float64)


def _topk(call: tuple, ins: list[np.ndarray]):
    _, k, dim, largest, _sorted = call
    x = ins[0]
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.float64)
    idx = np.take(_sort_idx(x, dim, largest), np.arange(k), axis=dim)
    return _take(x, idx, dim), idx.astype(np.float64)


def _argmax(call: tuple, ins: list[np.ndarray]):
    _, dim, keepdim, largest = call
    x = ins[0]
    f = np.argmax if largest else np.argmin  # both return the first NaN, as torch does
    if dim is None or x.ndim == 0:
        r = np.asarray(f(x.reshape(-1)), dtype=np.float64)
        return r.reshape((1,) * x.ndim) if keepdim else r
    r = np.expand_dims(f(x, axis=dim), dim).astype(np.float64)
    return _keep(r, dim, keepdim)


def _max_dim(call: tuple, ins: list[np.ndarray]):
    _, dim, keepdim, largest = call
    x = ins[0]
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.float64)
    idx = np.expand_dims((np.argmax if largest else np.argmin)(x, axis=dim), dim)
    vals = _take(x, idx, dim)
    return _keep(vals, dim, keepdim), _keep(idx.astype(np.float64), dim, keepdim)


def _kth(x: np.ndarray, dim: int, k: np.ndarray | int, keepdim: bool):
    order = _sort_idx(x, dim, False)
    if isinstance(k, np.ndarray):
        pos = np.expand_dims(k, dim)
    else:
        pos = np.full(order.shape[:dim] + (1,) + order.shape[dim + 1:], k, dtype=np.int64)
    idx = _take(order, pos, dim)
    return _keep(_take(x, idx, dim), dim, keepdim), _keep(idx.astype(np.float64), dim, keepdim)


def _kthvalue(call: tuple, ins: list[np.ndarray]):
    _, k, dim, keepdim = call
    x = ins[0]
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.float64)
    return _kth(x, dim, k - 1, keepdim)


def _median(call: tuple, ins: list[np.ndarray]):
    _, dim, keepdim, ignore_nan = call
    x = ins[0]
    if dim is None:  # median of all elements: the value only
        flat = x.reshape(-1)
        vals, _ = _median(("median", 0, False, ignore_nan), [flat])
        return np.asarray(vals, dtype=np.float64)
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.float64)
    n = x.shape[dim]
    if ignore_nan:  # lower median of the non-NaN values (NaN sorts last)
        m = np.sum(~np.isnan(x), axis=dim)
        k = np.where(m > 0, (m - 1) // 2, 0).astype(np.int64)
        return _kth(x, dim, k, keepdim)
    vals, idx = _kth(x, dim, (n - 1) // 2, keepdim)
    # a NaN in the line makes the median NaN, at the first NaN's index
    nan_any = np.any(np.isnan(x), axis=dim, keepdims=True)
    first_nan = np.expand_dims(np.argmax(np.isnan(x), axis=dim), dim).astype(np.float64)
    vals = np.where(_keep(nan_any, dim, keepdim), np.nan, vals)
    idx = np.where(_keep(nan_any, dim, keepdim), _keep(first_nan, dim, keepdim), idx)
    return vals, idx


def _mode(call: tuple, ins: list[np.ndarray]):
    """Most frequent value per line; ties go to the smallest value, the index to its last
    occurrence (torch's CPU convention)."""
    _, dim, keepdim = call
    x = ins[0]
    if x.ndim == 0:
        return x.copy(), np.zeros((), dtype=np.float64)
    moved = np.moveaxis(x, dim, -1)
    lines = moved.reshape(-1, moved.shape[-1])
    vals = np.empty(len(lines))
    idx = np.empty(len(lines))
    for r, line in enumerate(lines):
        u, counts = np.unique(line, return_counts=True)
        v = u[int(np.argmax(counts))]  # np.unique sorts, argmax takes the first: the smallest
        vals[r] = v
        idx[r] = np.flatnonzero(line == v)[-1]
    shape = moved.shape[:-1]
    vals, idx = vals.reshape(shape), idx.reshape(shape)
    if keepdim:
        vals, idx = np.expand_dims(vals, dim), np.expand_dims(idx, dim)
    return vals, idx


def _index(call: tuple, ins: list[np.ndarray]):
    _, xp, slots = call
    return np.array(ins[xp][_index_tuple(slots, ins)], dtype=np.float64)


def _index_put(call: tuple, ins: list[np.ndarray]):
    _, xp, slots, vp, accumulate = call
    values = ins[vp]
    out = np.array(ins[xp], dtype=np.float64)
    key = _index_tuple(slots, ins)
    target = out[key].shape
    vals = np.broadcast_to(values, target)
    if accumulate and _has_mask(slots):  # a mask selects each element at most once
        out[key] += vals
    elif accumulate:
        np.add.at(out, key, vals)
    else:
        out[key] = vals
    return out


_UFUNC = {"sum": np.add, "add": np.add, "prod": np.multiply, "amax": np.maximum,
          "amin": np.minimum, "mean": np.add}
_IDENT = {"sum": 0.0, "add": 0.0, "prod": 1.0, "amax": -np.inf, "amin": np.inf, "mean": 0.0}


def _scatter(call: tuple, ins: list[np.ndarray]):
    """torch.scatter / scatter_add / scatter_reduce along ``dim``: index may be smaller than
    src; only src's index-shaped corner is used."""
    _, xp, ip, sp, dim, reduce, include_self, value = call
    x, index = ins[xp], ins[ip].astype(np.int64)
    if sp is not None:
        src = ins[sp][tuple(slice(0, s) for s in index.shape)]
    else:
        src = np.full(index.shape, float(value))
    out = np.array(x, dtype=np.float64)
    if index.size == 0:
        return out
    coords = list(np.indices(index.shape))
    coords[dim] = np.where(index < 0, index + x.shape[dim], index)
    key = tuple(coords)
    if reduce is None:
        out[key] = src
        return out
    if not include_self:
        out[key] = _IDENT[reduce]
    _UFUNC[reduce].at(out, key, src)
    if reduce == "mean":
        count = np.zeros_like(out)
        np.add.at(count, key, 1.0)
        if include_self:
            count += 1.0
        touched = count > 0
        out = np.where(touched, out / np.where(touched, count, 1.0), x)
    return out


def _embedding_bag(call: tuple, ins: list[np.ndarray]):
    """torch's _embedding_bag forward: bags of rows (sum, mean or max), output 0 only."""
    _, wp, ip, op, pp, mode, include_last_offset, padding_idx = call
    weight, indices, offsets = ins[wp], ins[ip].astype(np.int64), ins[op].astype(np.int64)
    psw = ins[pp] if pp is not None else None
    nb = len(offsets) - 1 if include_last_offset else len(offsets)
    ends = list(offsets[1:nb + 1]) if include_last_offset else list(offsets[1:]) + [len(indices)]
    d = weight.shape[1]
    out = np.zeros((nb, d))
    for b in range(nb):
        sel = np.arange(offsets[b], ends[b])
        if padding_idx is not None and padding_idx >= 0:
            sel = sel[indices[sel] != padding_idx]
        if len(sel) == 0:
            continue
        rows = weight[indices[sel]]
        if mode == 0:
            out[b] = (rows * psw[sel, None]).sum(0) if psw is not None else rows.sum(0)
        elif mode == 1:
            out[b] = rows.sum(0) / len(sel)
        else:
            out[b] = rows.max(0)
    return out


def _masked_scatter(call: tuple, ins: list[np.ndarray]):
    x, mask, source = ins[call[1]], ins[call[2]] != 0, ins[call[3]]
    out = np.array(x, dtype=np.float64)
    m = np.broadcast_to(mask, x.shape)
    out[m] = source.reshape(-1)[: int(m.sum())]
    return out


_APPLY = {"sort": _sort, "topk": _topk, "argmax": _argmax, "max_dim": _max_dim,
          "kthvalue": _kthvalue, "median": _median, "mode": _mode, "index": _index,
          "index_put": _index_put, "scatter": _scatter, "embedding_bag": _embedding_bag,
          "masked_scatter": _masked_scatter}


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b) | (np.isnan(a) & np.isnan(b))


def canonical(call: tuple, outs: tuple[np.ndarray, ...],
              ins: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Outputs in a form two correct implementations agree on where torch leaves a choice
    open: which index among equal values (unstable sort, topk, kthvalue, median, mode) and
    the order of ``topk(sorted=False)``. The values stay as they are (unsorted top-k lines are
    ordered by value); each index becomes 0 when it points at its value (and, for sort and
    topk, no index repeats in its line), else -1, so a wrong index still fails the comparison
    and, where values are distinct, a right one is the only one that passes."""
    kind = call[0]
    if kind not in ("sort", "topk", "kthvalue", "median", "mode") or len(outs) != 2:
        return outs
    if kind == "sort" and call[3]:
        return outs  # a stable sort fixes the order of ties: compare exactly
    vals, idx = outs
    x = ins[0]
    if x.ndim == 0:
        return outs
    dim = call[2] if kind in ("topk", "kthvalue") else call[1]
    keep = idx.ndim == x.ndim
    vv = vals if keep else np.expand_dims(vals, dim)
    ii = (idx if keep else np.expand_dims(idx, dim)).astype(np.int64)
    n = x.shape[dim]
    ok = _same(_take(x, ii.clip(0, n - 1), dim), vv) & (ii >= 0) & (ii < n)
    if kind in ("sort", "topk") and ii.shape[dim] > 1:
        repeated = np.any(np.diff(np.sort(ii, axis=dim), axis=dim) == 0, axis=dim, keepdims=True)
        ok &= ~repeated
    canon = np.where(ok, 0.0, -1.0)
    if kind == "topk" and not call[4]:  # unordered: order each line by value
        order = np.argsort(vv, axis=dim, kind="stable")
        vv, canon = _take(vv, order, dim), _take(canon, order, dim)
    if not keep:
        vv, canon = np.squeeze(vv, dim), np.squeeze(canon, dim)
    return vv, canon


# ---------------------------------------------------------------- counting


def work(call: tuple, in_shapes: list[Shape], out_shapes: list[Shape]) -> int:
    """Vector operations a call counts: a lower bound on any implementation.

    Selection counts comparisons (information-theoretic or adversary bounds per line);
    accumulating scatters count one combine per element accumulated; pure data movement
    (index, scatter without reduction, masked_scatter) counts none."""
    kind = call[0]
    x = in_shapes[0] if in_shapes else ()
    if kind == "sort":
        lines, n = _line(x, call[1] if x else None)
        return lines * _log2_falling(n, n)
    if kind == "topk":
        k, dim, _, ordered = call[1:5]
        lines, n = _line(x, dim if x else None)
        bits = _log2_falling(n, k) if ordered else _log2_choose(n, k)
        return lines * max(n - 1, bits)
    if kind in ("argmax", "max_dim", "kthvalue", "median", "mode"):
        dim = call[2] if kind == "kthvalue" else call[1]
        lines, n = _line(x, dim if x else None)
        return lines * max(n - 1, 0)
    if kind == "index_put":
        _, xp, slots, _, accumulate = call
        if not accumulate or _has_mask(slots):  # a mask's count of True is data-dependent: 0
            return 0
        return math.prod(_indexed_shape(in_shapes[xp], slots, in_shapes))
    if kind == "scatter":
        return math.prod(in_shapes[call[2]]) if call[5] is not None else 0
    if kind == "embedding_bag":
        _, wp, ip, _, pp, mode = call[:6]
        d = in_shapes[wp][1] if len(in_shapes[wp]) > 1 else 1
        n = math.prod(in_shapes[ip]) * d
        extra = n if pp is not None else 0
        if mode == 1:
            extra += math.prod(out_shapes[0]) if out_shapes else 0
        return n + extra
    return 0


def input_reads(call: tuple, in_shapes: list[Shape], out_shapes: list[Shape]) -> list[int | None]:
    """Elements each input must be read at (None: the whole input).

    Gathers read the table only where they gather (the output's elements, or for
    embedding_bag every bagged row); masked_scatter reads a data-dependent prefix of its
    source, counted as zero so the bound stays a lower bound."""
    kind = call[0]
    reads: list[int | None] = [None] * len(in_shapes)
    if not in_shapes:
        return reads
    if kind in ("embedding", "index_select", "gather") and out_shapes:
        reads[0] = math.prod(out_shapes[0])
    elif kind == "index" and out_shapes and call[1] not in call[2]:
        reads[call[1]] = math.prod(out_shapes[0])
    elif kind == "embedding_bag" and call[1] not in call[2:5]:
        wp, ip = call[1], call[2]
        d = in_shapes[wp][1] if len(in_shapes[wp]) > 1 else 1
        reads[wp] = math.prod(in_shapes[ip]) * d
    elif kind == "masked_scatter" and call[3] not in call[1:3]:
        reads[call[3]] = 0
    return [r if r is None else min(r, math.prod(s)) for r, s in zip(reads, in_shapes)]


def accumulation_length(call: tuple, in_shapes: list[Shape], out_shapes: list[Shape]) -> int:
    """Terms combined into one output element by an accumulating call (0: the call only moves
    data and must reproduce torch exactly)."""
    kind = call[0]
    accumulating = ((kind == "index_put" and call[4]) or kind == "embedding_bag"
                    or (kind == "scatter" and call[5] is not None))
    if not accumulating or not out_shapes:
        return 0
    per = work(call, in_shapes, out_shapes) / max(1, math.prod(out_shapes[0]))
    return int(math.ceil(per)) + 1
