"""Lift an Affine Loop IR program into an einsum graph and count each node (docs/architecture.md §5).

Nodes are extended einsums (one per IR kernel) plus the composition-layer steps (views,
gathers); edges are tensors with shape, dtype and bytes. Every later analysis (SOL,
fusion, the editor) reads counts from this graph, never from ATen.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from solar_lsp.ir import calls_index
from solar_lsp.ir.core import (
    FREE_FUNCS,
    SCALAR_FUNCS,
    Affine,
    Call,
    Const,
    Expr,
    Guard,
    Index,
    Kernel,
    Load,
    Op,
    Program,
    walk,
)
from solar_lsp.source.pragma import dtype_size

# Transcendentals that need the special-function unit even in CUDA's accurate libdevice
# implementations (one MUFU instruction each); tanh, erf, atan, asin, acos and atan2 are
# FMA polynomials. sinh/cosh need one exp, atanh one log1p, asinh/acosh a log and a sqrt.
SFU_COST = {"exp": 1, "exp2": 1, "expm1": 1, "log": 1, "log2": 1, "log1p": 1, "sqrt": 1,
            "rsqrt": 1, "sin": 1, "cos": 1, "tan": 2, "sigmoid": 1, "pow": 2,
            "sinh": 1, "cosh": 1, "atanh": 1, "asinh": 2, "acosh": 2}
# ``pow(x, n)`` with a constant integer |n| <= this runs as multiplies (nvcc and the
# libdevice fast path expand it), not as exp2(n * log2(x)).
POW_INT_MAX = 4


def pow_multiplies(e: Call) -> int | None:
    """Vector ops of ``pow(x, n)`` for a small constant integer ``n``, else None.

    The fewest multiplies (square-and-multiply: n=2 one, n=3 and n=4 two), plus one
    reciprocal for a negative ``n``: a lower bound, like every count here."""
    if e.fn != "pow" or not isinstance(e.args[1], Const):
        return None
    v = float(e.args[1].value)
    if not v.is_integer() or abs(v) > POW_INT_MAX:
        return None
    n = abs(int(v))
    muls = 0 if n <= 1 else n.bit_length() - 1 + bin(n).count("1") - 1
    return muls + (1 if v < 0 else 0)


@dataclass(frozen=True)
class Counts:
    """Arithmetic of a kernel or op by kind: MACs, matrix and vector FLOPs, transcendentals."""

    macs: int = 0
    tensor_flops: int = 0
    vector_flops: int = 0
    transcendentals: int = 0
    sfu_ops: int = 0

    @property
    def flops(self) -> int:
        return self.tensor_flops + self.vector_flops

    def __add__(self, o: Counts) -> Counts:
        return Counts(self.macs + o.macs, self.tensor_flops + o.tensor_flops,
                      self.vector_flops + o.vector_flops, self.transcendentals + o.transcendentals,
                      self.sfu_ops + o.sfu_ops)

    def times(self, n: int) -> Counts:
        """The counts of ``n`` runs (an op inside a loop body runs ``Op.repeat`` times)."""
        if n == 1:
            return self
        return Counts(self.macs * n, self.tensor_flops * n, self.vector_flops * n,
                      self.transcendentals * n, self.sfu_ops * n)


def count_kernel(k: Kernel, masks: bool = True) -> Counts:
    """Work over the iteration space: padding points included (like FlopCounterMode), the
    points a mask guard excludes left out (``mask_points``; ``masks=False`` counts them too,
    as FlopCounterMode does for causal attention)."""
    n = mask_points(k) if masks else k.points
    if k.unit == "matrix":
        return Counts(macs=n, tensor_flops=2 * n)
    per = 0
    trans = 0
    sfu = 0
    for e in walk(k.expr):
        if isinstance(e, Call):
            muls = pow_multiplies(e)
            if muls is not None:
                per += muls
                continue
            if e.fn not in FREE_FUNCS:
                per += 1
            if SCALAR_FUNCS[e.fn][1]:
                trans += 1
            sfu += SFU_COST.get(e.fn, 0)
    if k.op != "=":
        per += 1  # the combine of the reduction
    return Counts(vector_flops=per * n, transcendentals=trans * n, sfu_ops=sfu * n)


# Masks over more loop points than this (outer variables enumerated) are not counted exactly.
MASK_ENUM_LIMIT = 1 << 24


def mask_points(k: Kernel) -> int:
    """Points of ``k``'s loop nest that its mask guards admit.

    A guard on a tensor index (padding: the read or write would fall outside the tensor)
    keeps its points: the framework's kernels compute them and FlopCounterMode counts them.
    Any other guard is a mask on the loop variables (causal attention's ``j <= i``): the points
    it excludes are never computed. Counted exactly: the mask variable with the largest extent
    in closed form per value of the others; beyond MASK_ENUM_LIMIT values of the others, 0
    (still a lower bound)."""
    idx = {_akey(a) for ld in [k.out, *_loads(k.expr)] for a in ld.index}
    masks = [g for g in k.guards if _akey(g.expr) not in idx and g.expr.vars()]
    if not masks:
        return k.points
    ext = k.extents
    mvars = sorted({v for g in masks for v in g.expr.vars()}, key=lambda v: -ext[v])
    inner, outer = mvars[0], mvars[1:]
    n_outer = int(np.prod([ext[v] for v in outer], dtype=np.int64))
    if n_outer > MASK_ENUM_LIMIT:
        return 0
    grid = dict(zip(outer, (g.ravel() for g in np.meshgrid(
        *[np.arange(ext[v], dtype=np.int64) for v in outer], indexing="ij"))))
    lo = np.zeros(n_outer, dtype=np.int64)
    hi = np.full(n_outer, ext[inner] - 1, dtype=np.int64)
    for g in masks:
        lo, hi = _clip_by_guard(g, inner, grid, lo, hi)
    rest = k.points // (ext[inner] * n_outer)
    return int(np.clip(hi - lo + 1, 0, None).sum()) * rest


def _clip_by_guard(g: Guard, x: str, grid: dict, lo: np.ndarray,
                   hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The range [lo, hi] of ``x`` per outer point narrowed to ``g.lo <= c·x + r < g.hi``."""
    c = dict(g.expr.terms).get(x, 0)
    r = np.full(lo.shape, g.expr.const, dtype=np.int64)
    for v, cv in g.expr.terms:
        if v != x:
            r = r + cv * grid[v]
    if c == 0:
        ok = np.ones(lo.shape, dtype=bool)
        if g.lo is not None:
            ok &= r >= g.lo
        if g.hi is not None:
            ok &= r < g.hi
        return lo, np.where(ok, hi, lo - 1)
    if c > 0:  # x >= ceil((lo - r) / c), x <= ceil((hi - r) / c) - 1
        if g.lo is not None:
            lo = np.maximum(lo, -((r - g.lo) // c))
        if g.hi is not None:
            hi = np.minimum(hi, -((r - g.hi) // c) - 1)
        return lo, hi
    c = -c  # -c·x + r: x <= floor((r - lo) / c), x >= floor((r - hi) / c) + 1
    if g.lo is not None:
        hi = np.minimum(hi, (r - g.lo) // c)
    if g.hi is not None:
        lo = np.maximum(lo, (r - g.hi) // c + 1)
    return lo, hi


def _akey(a: Affine) -> tuple:
    return frozenset((v, c) for v, c in a.terms if c), a.const


def call_counts(p: Program, op: Op) -> Counts:
    """Work of a composition step: comparisons of a selection, combines of an accumulating
    scatter (ir/calls_index); views and plain gathers count none."""
    if op.kind != "gather" or not op.call:
        return Counts()
    n = calls_index.work(op.call, [p.tensors[t].shape for t in op.inputs],
                         [p.tensors[t].shape for t in op.outputs])
    return Counts(vector_flops=n)


def _fmt_index(idx) -> str:
    parts = []
    for a in idx:
        s = str(a)
        parts.append(s if a.is_var() or not a.terms else f"({s})")
    return ",".join(parts)


def _fmt_expr(e: Expr) -> str:
    if isinstance(e, Load):
        return f"{e.tensor}[{_fmt_index(e.index)}]"
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Index):
        return f"idx({e.expr})"
    return f"{e.fn}({', '.join(_fmt_expr(a) for a in e.args)})"


def einsum_of(k: Kernel) -> str:
    """The extended-einsum form, e.g. ``out[m,n] += mul(x[m,k], w[n,k])``."""
    return f"{k.out.tensor}[{_fmt_index(k.out.index)}] {k.op} {_fmt_expr(k.expr)}"


def subscripts_of(k: Kernel) -> str:
    """Plain einsum subscripts when every index is a loop variable: ``mk,nk->mn``."""
    letters = {v: chr(ord("a") + i) if i < 26 else chr(ord("A") + i - 26)
               for i, (v, _) in enumerate(k.loops)}

    def sub(idx) -> str:
        out = ""
        for a in idx:
            v = a.is_var()
            out += letters[v] if v else ("(" + str(a) + ")" if a.terms else "1")
        return out
    ins = ",".join(sub(ld.index) for ld in _loads(k.expr))
    return f"{ins}->{sub(k.out.index)}"


def _loads(e: Expr) -> list[Load]:
    return [x for x in walk(e) if isinstance(x, Load)]


def tensor_bytes(p: Program, name: str) -> int:
    """Bytes behind a tensor: distinct elements (expand views add nothing) x dtype size."""
    t = p.tensors[name]
    return p.unique_numel(name) * dtype_size(t.dtype)


def build_graph(p: Program) -> nx.MultiDiGraph:
    """One node per kernel / composition step, one edge per tensor use."""
    g = nx.MultiDiGraph(name=p.name)
    producer: dict[str, str] = {}
    for t in p.inputs + p.params:
        node = f"input:{t}"
        g.add_node(node, kind="input", tensor=t, role="input" if t in p.inputs else "param")
        producer[t] = node
    for op in p.ops:
        if op.kind != "compute":
            nid = f"{op.id}"
            g.add_node(nid, kind=op.kind, op=op.id, target=op.target, line=op.line, call=op.call,
                       counts=call_counts(p, op).times(op.repeat), unit=None, einsum=None)
            for t in op.inputs:
                if t in producer:
                    g.add_edge(producer[t], nid, tensor=t, **_edge(p, t))
            for t in op.outputs:
                producer[t] = nid
            continue
        for k in op.kernels:
            nid = f"{op.id}/{k.name}"
            g.add_node(nid, kind="einsum", op=op.id, target=op.target, line=op.line, kernel=k,
                       einsum=einsum_of(k), subscripts=subscripts_of(k), combine=_combine(k),
                       reduce={"+=": "sum", "max=": "max", "min=": "min", "*=": "prod"}.get(k.op),
                       unit=k.unit, counts=count_kernel(k).times(op.repeat))
            reads = k.inputs() + ([k.out.tensor] if k.init == "keep" else [])
            for t in reads:
                if t in producer:
                    g.add_edge(producer[t], nid, tensor=t, **_edge(p, t))
            producer[k.out.tensor] = nid
    for t in p.outputs:
        if t in producer:
            g.add_node(f"output:{t}", kind="output", tensor=t)
            g.add_edge(producer[t], f"output:{t}", tensor=t, **_edge(p, t))
    return g


def _combine(k: Kernel) -> str:
    e = k.expr
    return e.fn if isinstance(e, Call) else ("load" if isinstance(e, Load) else "const")


def _edge(p: Program, t: str) -> dict:
    tt = p.tensors[t]
    return {"shape": tt.shape, "dtype": tt.dtype, "bytes": tensor_bytes(p, t)}


def to_dot(g: nx.MultiDiGraph) -> str:
    """Graphviz text of the einsum graph (no pydot dependency)."""
    lines = [f'digraph "{g.graph.get("name", "solar")}" {{', "  rankdir=TB; node [shape=box, fontsize=10];"]
    ids = {n: f"n{i}" for i, n in enumerate(g.nodes)}
    for n, d in g.nodes(data=True):
        if d["kind"] == "einsum":
            c: Counts = d["counts"]
            label = f"{d['einsum']}\\n{d['target']} line {d['line']}\\n{c.flops:,} FLOP ({d['unit']})"
            shape = "box"
        elif d["kind"] in ("input", "output"):
            label = f"{d['kind']}: {d['tensor']}"
            shape = "ellipse"
        else:
            label = f"{d['kind']}: {d['call']}\\nline {d['line']}"
            shape = "note"
        label = label.replace('"', "'")
        lines.append(f'  {ids[n]} [label="{label}", shape={shape}];')
    for a, b, d in g.edges(data=True):
        lines.append(f'  {ids[a]} -> {ids[b]} [label="{d["tensor"]} {list(d["shape"])} {d["dtype"]}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"
