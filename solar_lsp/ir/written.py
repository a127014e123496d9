"""Which output points a kernel writes (the verifier's proof that every element of an
output is written, verify/op_check.py ``_unwritten``): from the kernel's loop box, its
guards and its affine output index alone, without running it."""

from __future__ import annotations

import math

import numpy as np

from solar_lsp.ir.core import Kernel


def mark_written(k: Kernel, mask: np.ndarray, chunk: int = 1 << 18) -> None:
    """Set ``mask`` where ``k`` writes its output: every point of its out-var box that the
    guards over out vars alone admit (a reduction's init writes those, whatever its terms).
    ``chunk`` points at a time: each takes about 10 int64 arrays of that length (at 2^22 a
    transposed 3-D conv's check peaked 0.8 GB above the golden run)."""
    ext = k.extents
    ov = k.out_vars
    dims = [ext[v] for v in ov]
    total = math.prod(dims)
    guards = [g for g in k.guards if g.expr.vars() <= set(ov)]
    if total > chunk and _mark_separable(k, ov, guards, mask):
        return
    for start in range(0, total, chunk):
        coords = np.unravel_index(np.arange(start, min(total, start + chunk)), dims) if ov else ()
        val = dict(zip(ov, coords))
        keep = _admitted(guards, val, min(total, start + chunk) - start)
        if not k.out.index:
            mask[()] = mask[()] or bool(keep.any())
            continue
        idx = [_affine_at(a, val, len(keep))[keep] for a in k.out.index]
        inside = np.ones(int(keep.sum()), dtype=bool)
        for d, i in enumerate(idx):
            inside &= (i >= 0) & (i < mask.shape[d])
        mask[tuple(i[inside] for i in idx)] = True


def _mark_separable(k: Kernel, ov: list[str], guards: list, mask: np.ndarray) -> bool:
    """``mark_written`` when each output dimension's index reads variables no other dimension
    reads and every guard reads one dimension's variables: the written points are then the
    product of each dimension's written indices, found from that dimension's variables alone
    (a transposed 3-D conv's ``o = i*s + k - p`` per axis: a few hundred points, not 10^8).
    False, having done nothing, when the index is not of that form."""
    ext = k.extents
    owner: dict[str, int] = {}
    for d, a in enumerate(k.out.index):
        for v in a.vars():
            if owner.setdefault(v, d) != d:
                return False
    by_dim: list[list] = [[] for _ in k.out.index]
    for g in guards:
        ds = {owner[v] for v in g.expr.vars()}
        if len(ds) > 1:
            return False
        if ds:
            by_dim[ds.pop()].append(g)
        elif (g.lo is not None and g.expr.const < g.lo) or (g.hi is not None and g.expr.const >= g.hi):
            return True  # a guard no point meets: nothing is written
    picks = []
    for d, a in enumerate(k.out.index):
        vs = [v for v in ov if owner.get(v) == d]
        dims = [ext[v] for v in vs]
        coords = np.unravel_index(np.arange(math.prod(dims)), dims) if vs else ()
        val = dict(zip(vs, coords))
        n = math.prod(dims)
        i = _affine_at(a, val, n)[_admitted(by_dim[d], val, n)]
        picks.append(np.unique(i[(i >= 0) & (i < mask.shape[d])]))
    mask[np.ix_(*picks)] = True
    return True


def _admitted(guards: list, val: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Which of ``n`` points (loop values ``val``) every guard admits."""
    keep = np.ones(n, dtype=bool)
    for g in guards:
        e = _affine_at(g.expr, val, n)
        if g.lo is not None:
            keep &= e >= g.lo
        if g.hi is not None:
            keep &= e < g.hi
    return keep


def _affine_at(a, val: dict[str, np.ndarray], n: int) -> np.ndarray:
    out = np.full(n, a.const, dtype=np.int64)
    for v, c in a.terms:
        if c:
            out += c * val[v]
    return out
