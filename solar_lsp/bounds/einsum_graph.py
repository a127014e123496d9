"""Lift an Affine Loop IR program into an einsum graph and count each node (docs/architecture.md §5).

Nodes are extended einsums (one per IR kernel) plus the composition-layer steps (views,
gathers); edges are tensors with shape, dtype and bytes. Every later analysis (SOL,
fusion, the editor) reads counts from this graph, never from ATen.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from solar_lsp.ir import calls_index
from solar_lsp.ir.core import (
    FREE_FUNCS,
    SCALAR_FUNCS,
    Call,
    Const,
    Expr,
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


def count_kernel(k: Kernel) -> Counts:
    """Work over the full iteration space (padding points included, like FlopCounterMode)."""
    n = k.points
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
