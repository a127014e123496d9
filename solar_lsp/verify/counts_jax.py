"""JAX's side of the count checks (docs/sol-model.md, "Verification"): XLA's own
``cost_analysis()`` of every contraction (``dot_general``, ``conv_general_dilated``), and
how many times each equation runs, from the jaxpr's loops, for every op's ``repeat``.

The jaxpr is walked again here, apart from the lowering: a scan's body runs ``length``
times, a static while's body its trip count, and a cond follows the branch the lowering
counted. XLA's figure for one equation is taken on abstract values (nothing is allocated)
and multiplied by the equation's runs: XLA counts a loop body once.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from solar_lsp.frontend.jax.lower import JaxLowered
from solar_lsp.frontend.jax.trace import JaxTraced, Key, Walker, WhileInfo
from solar_lsp.ir.core import Call, Kernel, Load, Op, Program
from solar_lsp.verify.counts import CountCheck, FrameworkFlops, check_counts, kernel_counts

NAME = "XLA cost_analysis"
CONTRACTIONS = ("dot_general", "conv_general_dilated")
ENUMERATE_LIMIT = 10_000_000  # guard points a padding count may enumerate
_XLA_CACHE: dict[tuple, float | None] = {}


class Runs(Walker):
    """How many times each leaf equation runs per call of the entry, by its key."""

    def __init__(self, traced: JaxTraced, choices: dict[Key, int]):
        super().__init__(traced)
        self.choices = choices
        self.leaves: dict[Key, tuple[Any, int]] = {}  # key -> (equation, runs)

    def const(self, value: Any, key: Key) -> Any:
        return None

    def leaf(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        self.leaves[key] = (eqn, repeat)
        return [None] * len(eqn.outvars)

    def scan(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        T = int(eqn.params["length"])
        body = eqn.params["jaxpr"]
        if T:
            self.closed_block(body, [None] * len(body.jaxpr.invars), key + ("body",), line, repeat * T)
        return [None] * len(eqn.outvars)

    def while_(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int,
               info: WhileInfo) -> list[Any]:
        if info.trips:
            p = eqn.params
            for part, name in (("cond", "cond_jaxpr"), ("body", "body_jaxpr")):
                sub = p[name]
                self.closed_block(sub, [None] * len(sub.jaxpr.invars), key + (part,), line,
                                  repeat * info.trips)
        return [None] * len(eqn.outvars)

    def cond(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        b = self.choices.get(key, 0)
        return self.closed_block(eqn.params["branches"][b], list(ins[1:]), key + ("br", b), line, repeat)


def check_jax_counts(traced: JaxTraced, lowered: JaxLowered) -> CountCheck:
    """Tensor FLOPs against XLA, each op's repeat against the jaxpr's loops, and the
    framework-neutral checks (reduction coverage, the counter's audit)."""
    runs = Runs(traced, lowered.choices)
    runs.run([None] * len(traced.closed.jaxpr.invars))
    p = lowered.program
    by_eqn: dict[Key, list[Op]] = {}
    for op in p.ops:
        key = _leaf_key(lowered, op, runs.leaves)
        if key is not None:
            by_eqn.setdefault(key, []).append(op)
    extra = _repeat_issues(by_eqn, runs.leaves)
    fw = FrameworkFlops(NAME)
    for key, ops in by_eqn.items():
        eqn, n = runs.leaves[key]
        if eqn.primitive.name in CONTRACTIONS:
            _compare_eqn(eqn, n, ops, p, fw)
    return check_counts(p, fw, extra)


def _leaf_key(lowered: JaxLowered, op: Op, leaves: dict[Key, Any]) -> Key | None:
    for t in op.outputs:
        k = lowered.tensor_key.get(t)
        if isinstance(k, tuple) and len(k) == 2 and isinstance(k[0], tuple) and k[0] in leaves:
            return k[0]
    return None


def _repeat_issues(by_eqn: dict[Key, list[Op]], leaves: dict[Key, tuple[Any, int]]) -> list[dict]:
    out = []
    for key, ops in by_eqn.items():
        n = leaves[key][1]
        for op in ops:
            if op.repeat != n:
                out.append({"op": op.id, "line": op.line, "check": "repeat",
                            "detail": f"counted {op.repeat} times per call; the jaxpr's loops run "
                                      f"its equation {n} times"})
    return out


def _compare_eqn(eqn: Any, runs: int, ops: list[Op], p: Program, fw: FrameworkFlops) -> None:
    """One contraction: XLA's FLOPs (times its runs) against the IR's contraction kernels at
    the points inside their padding guards (XLA does not count padding)."""
    kernels = [(op, k) for op in ops for k in op.kernels if _is_contraction(k)]
    if not kernels:  # an outer product: the IR multiplies on the vector units, XLA counts a dot
        return
    xla = xla_flops(eqn)
    op = kernels[0][0]
    if xla is None:
        fw.uncounted[op.id] = "XLA's cost analysis failed for this equation"
        return
    ir = 0
    for o, k in kernels:
        valid = valid_points(k)
        if valid is None:
            fw.uncounted[op.id] = "too many padding points to count the valid ones"
            return
        flops = kernel_counts(k).flops
        ir += flops * valid // max(k.points, 1) * o.repeat
    fw.by_op[op.id] = fw.by_op.get(op.id, 0) + int(round(xla)) * runs
    fw.ir_by_op[op.id] = fw.ir_by_op.get(op.id, 0) + ir


def _is_contraction(k: Kernel) -> bool:
    """A multiply-accumulate over at least one reduced loop (matrix units, or a GEMV)."""
    e = k.expr
    return (k.op == "+=" and bool(k.reduce_vars) and isinstance(e, Call) and e.fn == "mul"
            and all(isinstance(a, Load) for a in e.args))


def valid_points(k: Kernel) -> int | None:
    """Points of ``k`` inside every guard (all of them when it has none); None when the
    guarded loops are too many to enumerate."""
    if not k.guards:
        return k.points
    ext = k.extents
    gvars = sorted({v for g in k.guards for v in g.expr.vars()})
    size = math.prod(ext[v] for v in gvars)
    if size > ENUMERATE_LIMIT:
        return None
    grids = np.meshgrid(*[np.arange(ext[v]) for v in gvars], indexing="ij", sparse=True)
    val = dict(zip(gvars, grids))
    ok = np.ones([ext[v] for v in gvars], dtype=bool)
    for g in k.guards:
        x = g.expr.const + sum(c * val[v] for v, c in g.expr.terms)
        if g.lo is not None:
            ok &= x >= g.lo
        if g.hi is not None:
            ok &= x < g.hi
    rest = math.prod(ext[v] for v in ext if v not in gvars)
    return int(ok.sum()) * rest


def xla_flops(eqn: Any) -> float | None:
    """XLA's ``flops`` for one equation on abstract arguments (cached by signature)."""
    import jax
    sig = (eqn.primitive.name, tuple((tuple(v.aval.shape), str(v.aval.dtype)) for v in eqn.invars),
           repr(sorted(eqn.params.items(), key=lambda kv: kv[0])))
    if sig in _XLA_CACHE:
        return _XLA_CACHE[sig]
    try:
        dtypes = [v.aval.dtype for v in eqn.invars]
        if len(set(map(str, dtypes))) > 1 and eqn.primitive.name in CONTRACTIONS:
            # mixed operands (a backward dot of f32 by bf16): jax converts one in the HLO and
            # XLA counts a FLOP per converted element; a contraction's FLOPs do not depend on
            # the dtype, so XLA is asked on operands of one (promoted) dtype
            common = functools.reduce(jax.numpy.promote_types, dtypes)
            dtypes = [common] * len(dtypes)
        avals = [jax.ShapeDtypeStruct(v.aval.shape, dt) for v, dt in zip(eqn.invars, dtypes)]
        ca = jax.jit(lambda *a: eqn.primitive.bind(*a, **eqn.params)).lower(*avals).cost_analysis()
        ca = ca[0] if isinstance(ca, (list, tuple)) else ca
        got = float(ca["flops"]) if ca and "flops" in ca else None
    except Exception:  # an equation XLA will not lower alone: left unchecked, with the reason
        got = None
    _XLA_CACHE[sig] = got
    return got

