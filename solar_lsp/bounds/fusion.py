"""Fusibility analysis: which adjacent framework ops can share an on-chip buffer.

Rules (docs/sol-model.md, "Fusion"), for a producer P and a consumer C of one of its tensors:

* the tile loops must line up: every read of P's output in C maps position by position, through
  the views between them, onto a plain loop of P (no merged reshape, no halo, no offset);
* and one of: P or C is elementwise (prologue / epilogue), P or C is a row reduction (softmax,
  norms: reductions over the same rows), or both are contractions and C contracts over a
  dimension of P's output that it reads once (a contraction chain such as QKᵀ→softmax→PV or
  up→down projections).

Ops that compute from nothing but constants and indices (``arange``, ``full``, causal masks)
are *generators*: a fused kernel recomputes them from indices, so they never cost traffic there
and never join two groups. In a training step no edge joins two phases (forward, backward,
optimizer; docs/training.md): what one phase hands to the next goes through DRAM. Groups are
the connected components of the fusible edges; the cache-aware model (cache_ilp.py) decides
where to cut each group.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from solar_lsp.bounds.segmodel import fold_scans
from solar_lsp.bounds.tiling import build_model
from solar_lsp.bounds.viewmap import ViewMap
from solar_lsp.ir.core import Call, Load, Op, Program, loads

MAX_SEGMENT_OPS = 8  # ops in one fused kernel
MAX_CONTRACTIONS = 2  # contractions in one fused kernel (a chain such as QKᵀ→softmax→PV)
MAX_SEGMENTS = 4000  # candidate segments per group before falling back to runs


@dataclass
class FusionGraph:
    """The ops of a program, the fusible edges between them and the groups they form."""

    p: Program
    vm: ViewMap
    ops: dict[str, Op]
    index: dict[str, int]  # program order
    kind: dict[str, str]  # contraction | reduction | elementwise | generator | data
    free: set[str]  # generators recomputed inside their consumers
    free_tensors: set[str]
    deps: dict[str, set[str]]  # op -> ops it reads from (through views)
    readers: dict[str, set[str]]  # base tensor -> ops reading it
    edges: dict[tuple[str, str], str] = field(default_factory=dict)  # fusible (P, C) -> rule
    groups: list[list[str]] = field(default_factory=list)
    _desc: dict[str, int] = field(default_factory=dict)
    _anc: dict[str, int] = field(default_factory=dict)

    @functools.cached_property
    def output_sources(self) -> set[str]:
        """Tensors the program returns, directly or through a view (a loop's stacked output is
        a view op over the tensor the body writes each trip)."""
        p = self.p
        outs = {p.base(t) for t in p.outputs}
        return outs | {p.base(op.inputs[0]) for op in p.ops if op.kind == "view" and op.inputs
                       and any(p.base(o) in outs for o in op.outputs)}

    def needed_outside(self, seg: set[str]) -> set[str]:
        """Tensors written by ``seg`` that something after it reads (or the program returns)."""
        outs = self.output_sources
        need = set()
        for o in seg:
            for k in self.ops[o].kernels:
                b = k.out.tensor
                if b in outs or any(r not in seg for r in self.readers.get(b, ())):
                    need.add(b)
        return need

    def convex(self, seg: set[str]) -> bool:
        """No path leaves ``seg`` and comes back (the segment is one kernel)."""
        mask = 0
        d = 0
        a = 0
        for o in seg:
            mask |= 1 << self.index[o]
            d |= self._desc[o]
            a |= self._anc[o]
        return (d & a & ~mask) == 0


def op_kind(op: Op) -> str:
    """The fusion role of an op: contraction, reduction, elementwise, generator or data."""
    if op.kind != "compute":
        return "data"
    if not op.kernels:
        return "data"
    for k in op.kernels:
        if k.unit == "matrix":
            return "contraction"
    for k in op.kernels:
        if k.op != "=" and k.reduce_vars:
            e = k.expr
            if (k.op == "+=" and isinstance(e, Call) and e.fn == "mul" and len(e.args) == 2
                    and all(isinstance(x, Load) for x in e.args)
                    and e.args[0].tensor != e.args[1].tensor):
                return "contraction"
            return "reduction"
    return "elementwise"


def analyze(p: Program) -> FusionGraph:
    """Kinds, dependencies, generators, fusible edges and groups of one program."""
    vm = ViewMap(p)
    ops = {o.id: o for o in p.ops}
    index = {o.id: i for i, o in enumerate(p.ops)}
    producer: dict[str, str] = {}
    for o in p.ops:
        if o.kind == "view":
            continue
        for t in o.outputs:
            producer[t] = o.id
        for k in o.kernels:
            producer[k.out.tensor] = o.id
    deps: dict[str, set[str]] = {o.id: set() for o in p.ops}
    readers: dict[str, set[str]] = {}
    for o in p.ops:
        if o.kind == "view":
            continue
        for t in _reads(o):
            b = p.base(t)
            readers.setdefault(b, set()).add(o.id)
            src = producer.get(b)
            if src is not None and src != o.id:
                deps[o.id].add(src)
    kind = {o.id: op_kind(o) for o in p.ops}
    leaves = set(p.inputs) | set(p.params)
    gen: set[str] = set()
    for o in p.ops:
        if kind[o.id] == "data" or o.kind != "compute":
            continue
        srcs = [p.base(t) for t in _reads(o)]
        if all(b not in leaves and producer.get(b) in gen for b in srcs):
            gen.add(o.id)
    outs = {p.base(t) for t in p.outputs}
    free = set()
    for g in gen:
        written = {k.out.tensor for k in ops[g].kernels} | set(ops[g].outputs)
        rd = {r for t in written for r in readers.get(t, ())}
        if not (written & outs) and all(kind[r] != "data" for r in rd):
            free.add(g)
    for g in gen:
        kind[g] = "generator"
    free_tensors = {k.out.tensor for g in free for k in ops[g].kernels} | \
        {t for g in free for t in ops[g].outputs}
    fg = FusionGraph(p, vm, ops, index, kind, free, free_tensors, deps, readers)
    _reach(fg)
    for c, srcs in deps.items():
        for pr in srcs:
            rule = _rule(fg, pr, c)
            if rule:
                fg.edges[(pr, c)] = rule
    fg.groups = _groups(fg)
    return fg


def _reads(o: Op) -> list[str]:
    """Tensors an op reads: its inputs and every load of its kernels (views not resolved)."""
    names = list(o.inputs)
    for k in o.kernels:
        for t in [ld.tensor for ld in loads(k.expr)] + ([k.out.tensor] if k.init == "keep" else []):
            if t not in names:
                names.append(t)
    return names


def _reach(fg: FusionGraph) -> None:
    order = sorted(fg.ops, key=fg.index.get)
    children: dict[str, set[str]] = {o: set() for o in order}
    for c, srcs in fg.deps.items():
        for s in srcs:
            children[s].add(c)
    for o in reversed(order):
        m = 0
        for c in children[o]:
            m |= (1 << fg.index[c]) | fg._desc[c]
        fg._desc[o] = m
    for o in order:
        m = 0
        for s in fg.deps[o]:
            m |= (1 << fg.index[s]) | fg._anc[s]
        fg._anc[o] = m


def _rule(fg: FusionGraph, pr: str, c: str) -> str | None:
    kp, kc = fg.kind[pr], fg.kind[c]
    if "data" in (kp, kc) or "generator" in (kp, kc):
        return None
    if getattr(fg.ops[pr], "repeat", 1) != getattr(fg.ops[c], "repeat", 1):
        return None  # a loop body and the code around it are different kernels
    if fg.ops[pr].phase != fg.ops[c].phase:
        return None  # a training step's phases are different kernels (docs/training.md)
    if build_model(fg.p, fg.vm, [fg.ops[pr], fg.ops[c]], fg.free_tensors, set()) is None:
        return None
    if kp == "elementwise" and kc == "elementwise":
        return "elementwise chain"
    if kc == "elementwise":
        return "epilogue"
    if kp == "elementwise":
        return "prologue"
    if kp == "reduction" or kc == "reduction":
        return "row reduction"
    return "contraction chain" if _chain(fg, pr, c) else None


def _chain(fg: FusionGraph, pr: str, c: str) -> bool:
    """C reads P's output in one operand and contracts over one of its dimensions."""
    written = {k.out.tensor for k in fg.ops[pr].kernels}
    hits = []
    for k in fg.ops[c].kernels:
        if k.unit != "matrix" and k.op != "+=":
            continue
        for ld in loads(k.expr):
            if fg.p.base(ld.tensor) in written:
                hits.append((k, ld))
    if len(hits) != 1:
        return False
    k, ld = hits[0]
    red = set(k.reduce_vars)
    return any(v in red for a in ld.index for v in a.vars())


def _groups(fg: FusionGraph) -> list[list[str]]:
    parent = {o: o for o in fg.ops}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in fg.edges:
        parent[find(a)] = find(b)
    comps: dict[str, list[str]] = {}
    for o in fg.ops:
        if fg.kind[o] in ("data",) or o in fg.free:
            continue
        comps.setdefault(find(o), []).append(o)
    return [sorted(v, key=fg.index.get) for v in sorted(comps.values(), key=lambda v: fg.index[v[0]])]


def candidate_segments(fg: FusionGraph, group: list[str]) -> list[tuple[str, ...]]:
    """Connected (by fusible edges), convex subsets of a group, at most MAX_SEGMENT_OPS ops and
    MAX_CONTRACTIONS contractions; every single op is a candidate."""
    members = set(group)
    adj: dict[str, set[str]] = {o: set() for o in group}
    for a, b in fg.edges:
        if a in members and b in members:
            adj[a].add(b)
            adj[b].add(a)
    idx = {o: i for i, o in enumerate(group)}
    out: list[frozenset[str]] = []
    overflow = False

    def extend(sub: frozenset[str], ext: set[str], nbh: set[str], v: str) -> None:
        nonlocal overflow
        out.append(sub)
        if len(out) > MAX_SEGMENTS:
            overflow = True
            return
        if len(sub) >= MAX_SEGMENT_OPS:
            return
        ext = set(ext)
        while ext and not overflow:
            w = min(ext, key=idx.get)
            ext.discard(w)
            excl = {u for u in adj[w] if idx[u] > idx[v] and u not in sub and u not in nbh}
            extend(sub | {w}, ext | excl, nbh | adj[w], v)

    for v in group:
        if overflow:
            break
        extend(frozenset([v]), {u for u in adj[v] if idx[u] > idx[v]}, set(adj[v]) | {v}, v)
    if overflow:  # fall back to runs of consecutive ops
        out = [frozenset(group[i:j]) for i in range(len(group))
               for j in range(i + 1, min(len(group), i + MAX_SEGMENT_OPS) + 1)]
        out = [s for s in out if _connected(s, adj)]
    segs = []
    for s in out:
        if sum(fg.kind[o] == "contraction" for o in s) > MAX_CONTRACTIONS:
            continue
        if len(s) == 1 or fg.convex(set(s)):
            segs.append(tuple(sorted(s, key=fg.index.get)))
    return segs


def _connected(s: frozenset[str], adj: dict[str, set[str]]) -> bool:
    start = next(iter(s))
    seen = {start}
    stack = [start]
    while stack:
        x = stack.pop()
        for y in adj[x]:
            if y in s and y not in seen:
                seen.add(y)
                stack.append(y)
    return len(seen) == len(s)


def pattern(fg: FusionGraph, seg: tuple[str, ...]) -> str:
    """A name for what a fused segment is, e.g. "contraction chain (matmul→…→matmul)"."""
    kinds = [fg.kind[o] for o in seg]
    names = [_short(fg.ops[o].target) for o in seg]
    mm = [o for o, k in zip(seg, kinds) if k == "contraction"]
    if len(mm) >= 2:
        mm_names = [_short(fg.ops[o].target) for o in mm]
        chained = any(fg._desc[a] >> fg.index[b] & 1 for a in mm for b in mm if a != b)
        if chained:
            return f"contraction chain ({'→…→'.join([mm_names[0], mm_names[-1]])})"
        return f"contractions sharing an epilogue ({' + '.join(mm_names)})"
    if len(mm) == 1:
        i = kinds.index("contraction")
        pre, post = names[:i], names[i + 1:]
        parts = []
        if pre:
            parts.append("prologue " + "+".join(dict.fromkeys(pre)))
        if post:
            parts.append("epilogue " + "+".join(dict.fromkeys(post)))
        return f"{names[i]} with {' and '.join(parts)}" if parts else names[i]
    if "reduction" in kinds:
        return "reductions over the same rows (" + "+".join(dict.fromkeys(names)) + ")"
    if any(len(fold_scans(fg.ops[o].kernels, fg.p)) < len(fg.ops[o].kernels) for o in seg):
        return "scan (" + "+".join(dict.fromkeys(names)) + ")"  # one pass along each line
    return "elementwise chain (" + "+".join(dict.fromkeys(names)) + ")"


def _short(target: str) -> str:
    """``aten._native_batch_norm_legit_no_training.default`` → ``batch_norm``."""
    name = target.replace("aten.", "").split(".")[0].lstrip("_")
    for junk in ("native_", "_legit_no_training", "_legit", "_with_indices"):
        name = name.replace(junk, "")
    return name


def lines_of(fg: FusionGraph, seg: tuple[str, ...]) -> list[int]:
    """Source lines of a segment's ops and of the generators it recomputes."""
    lines = {fg.ops[o].line for o in seg}
    for o in seg:
        lines |= {fg.ops[g].line for g in _gens_of(fg, o)}
    return sorted(x for x in lines if x is not None)


def _gens_of(fg: FusionGraph, o: str) -> set[str]:
    out: set[str] = set()
    stack = [s for s in fg.deps[o] if s in fg.free]
    while stack:
        g = stack.pop()
        if g in out:
            continue
        out.add(g)
        stack.extend(s for s in fg.deps[g] if s in fg.free)
    return out


__all__ = ["FusionGraph", "analyze", "candidate_segments", "lines_of", "op_kind", "pattern"]
