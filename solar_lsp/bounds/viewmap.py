"""Map an index on a view to the index it reads on the view's base tensor.

Fusion and tiling need to know which loop of a consumer walks which dimension of the
tensor a producer wrote, through the composition-layer views between them (permute,
reshape, slice, expand, ...). Every view is affine except a reshape that merges dimensions
(its base index is a div/mod of the view index); those map to ``None`` and end a fusion.
"""

from __future__ import annotations

from solar_lsp.ir.core import Affine, Op, Program

Index = tuple[Affine, ...]


class ViewMap:
    """The view steps of one program, walked from a view back to its base."""

    def __init__(self, p: Program):
        self.p = p
        self.step: dict[str, Op] = {}
        for op in p.ops:
            if op.kind == "view" and op.outputs and op.inputs:
                self.step[op.outputs[0]] = op

    def to_base(self, name: str, index: Index) -> tuple[str, Index] | None:
        """``(base, index on base)``, or None when some step is not affine."""
        seen = 0
        while name in self.p.views:
            op = self.step.get(name)
            parent = self.p.views[name]
            if op is None or seen > 64:
                return None
            idx = apply_view(op.call or ("alias",), index, self.p.tensors[name].shape,
                             self.p.tensors[parent].shape)
            if idx is None:
                return None
            name, index, seen = parent, idx, seen + 1
        return name, index


def apply_view(call: tuple, index: Index, view_shape: tuple[int, ...],
               parent_shape: tuple[int, ...]) -> Index | None:
    """Index on the parent of one view step (``call`` as in ``Op.call``)."""
    kind = call[0]
    if kind == "alias":
        return index
    if kind == "permute":
        out: list[Affine] = [Affine.of(0)] * len(parent_shape)
        for i, d in enumerate(call[1]):
            out[d] = index[i]
        return tuple(out)
    if kind == "unsqueeze":
        d = call[1]
        return index[:d] + index[d + 1:]
    if kind == "squeeze":
        out = list(index)
        for d in sorted(call[1]):
            out.insert(d, Affine.of(0))
        return tuple(out)
    if kind == "slice":
        _, dim, start, _end, step = call
        out = list(index)
        out[dim] = out[dim] * int(step) + int(start)
        return tuple(out)
    if kind == "select":
        _, dim, i = call
        out = list(index)
        out.insert(dim, Affine.of(int(i)))
        return tuple(out)
    if kind == "expand":
        lead = len(view_shape) - len(parent_shape)
        return tuple(Affine.of(0) if ps == 1 and view_shape[lead + d] != 1 else index[lead + d]
                     for d, ps in enumerate(parent_shape))
    if kind == "reshape":
        return _reshape(index, view_shape, parent_shape)
    return None


def _reshape(index: Index, vs: tuple[int, ...], ps: tuple[int, ...]) -> Index | None:
    """Group dims whose products match; a group that splits one parent dim is affine."""
    out: list[Affine] = []
    i = j = 0
    while i < len(vs) or j < len(ps):
        if j < len(ps) and ps[j] == 1 and (i >= len(vs) or vs[i] != 1):
            out.append(Affine.of(0))
            j += 1
            continue
        if i < len(vs) and vs[i] == 1 and (j >= len(ps) or ps[j] != 1):
            i += 1
            continue
        if i >= len(vs) or j >= len(ps):
            return None
        gi, gj = [i], [j]
        pv, pp = vs[i], ps[j]
        i, j = i + 1, j + 1
        while pv != pp:
            if pv < pp:
                if i >= len(vs):
                    return None
                pv *= vs[i]
                gi.append(i)
                i += 1
            else:
                if j >= len(ps):
                    return None
                pp *= ps[j]
                gj.append(j)
                j += 1
        if len(gj) == 1:  # view dims split one parent dim: row-major strides
            acc = Affine.of(0)
            stride = 1
            for d in reversed(gi):
                acc = acc + index[d] * stride
                stride *= vs[d]
            out.append(acc)
        elif all(not index[d].terms for d in gi):  # a constant point of a merged dim
            flat = 0
            for d in gi:
                flat = flat * vs[d] + index[d].const
            digits = []
            for d in reversed(gj):
                digits.append(Affine.of(flat % ps[d]))
                flat //= ps[d]
            out.extend(reversed(digits))
        else:
            return None
    return tuple(out)
