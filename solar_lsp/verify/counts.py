"""Counts checked at run time, beside the values (docs/sol-model.md, "Verification").

A value check cannot see a wrong count: a reduction whose combine is not counted, tensor
FLOPs counted as MACs, an ``exp`` counted free, a loop body counted once too few all compute
the right numbers. Three checks, framework-neutral (the torch and JAX verifiers bring the
framework's own figures):

- **tensor FLOPs** of each op against the framework's own counter (torch's
  ``FlopCounterMode`` during the golden run, XLA's ``cost_analysis()`` per JAX contraction);
- **reduction coverage**: a reduction kernel's reduced loops must run over the whole axis
  of every input they index (each output combines every element it reduces, once);
- **an audit of the counter**: each kernel's counts against a recount from its statement
  (matrix kernels 2 FLOPs a point, one transcendental per transcendental call and point, at
  least one vector FLOP per point for a reduction's combine and for each transcendental).

Nothing here imports torch or jax.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solar_lsp import units
from solar_lsp.bounds import einsum_graph
from solar_lsp.bounds.sol import parts_by_owner
from solar_lsp.ir.core import Call, Const, Kernel, Op, Program, loads, walk
from solar_lsp.verify.core import Verification

# The transcendental functions of the IR's vocabulary, listed here on their own (not read
# from ir.core) so that the audit is a second opinion on the counter, not a copy of it.
TRANSCENDENTAL = frozenset({
    "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "tanh", "erf", "sigmoid",
    "pow", "sin", "cos", "tan", "atan", "asin", "acos", "atan2", "sinh", "cosh", "asinh",
    "acosh", "atanh"})
INT_POW_MAX = 4  # pow(x, n) with a constant integer |n| <= 4 runs as multiplies
REDUCING = ("+=", "*=", "max=", "min=")
MAX_ISSUES = 20


@dataclass
class CountCheck:
    """The verdict on an entry's counts: checked, mismatch (with the issues) or unchecked."""

    status: str  # checked | mismatch | unchecked
    detail: str
    framework: str = ""  # "FlopCounterMode" | "XLA cost_analysis"
    tensor_flops_ir: int = 0
    tensor_flops_framework: int = 0
    ops_compared: int = 0
    reductions: int = 0
    kernels_audited: int = 0
    issues: list[dict] = field(default_factory=list)
    unchecked: list[dict] = field(default_factory=list)
    masked: list[str] = field(default_factory=list)  # ops whose report skips masked points

    def to_json(self) -> dict:
        return {"status": self.status, "detail": self.detail,
                "tensor_flops": {"ir": self.tensor_flops_ir, "framework": self.tensor_flops_framework,
                                 "counter": self.framework, "ops_compared": self.ops_compared},
                "reductions_checked": self.reductions, "kernels_audited": self.kernels_audited,
                "issues": self.issues[:MAX_ISSUES], "unchecked": self.unchecked[:MAX_ISSUES]}


def unchecked(detail: str) -> CountCheck:
    """No count could be checked (the golden run failed, or was skipped)."""
    return CountCheck("unchecked", detail)


def _issue(op: Op, check: str, detail: str) -> dict:
    return {"op": op.id, "line": op.line, "check": check, "detail": detail}


def kernel_counts(k: Kernel, masks: bool = False) -> einsum_graph.Counts:
    """The pipeline's counts of ``k``; ``masks=False``: with the points a mask guard skips
    (causal attention's upper triangle), which is what FlopCounterMode and XLA count."""
    # looked up on the module at call time: the counter the report used, whatever it is
    try:
        return einsum_graph.count_kernel(k, masks=masks)
    except TypeError:  # a counter without mask guards counts every point
        return einsum_graph.count_kernel(k)


def op_tensor_flops(op: Op, masks: bool = False) -> int:
    """The op's matrix-unit FLOPs as the pipeline counts them (per call of the entry)."""
    return sum(kernel_counts(k, masks).tensor_flops for k in op.kernels) * op.repeat


# ------------------------------------------------------------------ tensor FLOPs


@dataclass
class FrameworkFlops:
    """The framework's count per IR op id, and the ops it cannot count (id -> why)."""

    name: str
    by_op: dict[str, int] = field(default_factory=dict)
    ir_by_op: dict[str, int] = field(default_factory=dict)  # where the IR side is not op_tensor_flops
    uncounted: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def compare_tensor_flops(p: Program, fw: FrameworkFlops, cc: CountCheck) -> None:
    """Each op the framework counted (or should have) against the IR's tensor FLOPs."""
    cc.framework = fw.name
    by_id = {op.id: op for op in p.ops}
    parts = parts_by_owner(p)  # an op emitted as several: the framework counts it whole
    for op_id, why in fw.uncounted.items():
        op = by_id.get(op_id)
        if op is not None and sum(op_tensor_flops(o) for o in [op] + parts.get(op_id, [])):
            cc.unchecked.append({"op": op.id, "line": op.line, "check": "tensor_flops", "detail": why})
    for op in p.ops:
        if op.id in fw.uncounted or (op.id not in fw.by_op and op.id not in fw.ir_by_op):
            continue
        whole = [op] + parts.get(op.id, [])
        ir = fw.ir_by_op.get(op.id, sum(op_tensor_flops(o) for o in whole))
        theirs = int(fw.by_op.get(op.id, 0))
        cc.ops_compared += 1 if (ir or theirs) else 0
        cc.tensor_flops_ir += ir
        cc.tensor_flops_framework += theirs
        if ir != theirs:
            cc.issues.append(_issue(op, "tensor_flops", f"the IR counts {ir:,} tensor FLOPs, "
                                                        f"{fw.name} {theirs:,}"))
        elif op.id not in fw.ir_by_op and sum(op_tensor_flops(o, masks=True) for o in whole) != ir:
            cc.masked.append(op.id)


# ------------------------------------------------------------------ reductions


def reduction_coverage(p: Program, cc: CountCheck) -> None:
    """Every reduction must combine every element of the axes it reduces: an axis indexed by
    reduced loops alone (no output loop, no padding guard) is covered from 0 to its last element
    by the op's reducing kernels into the same output together (a reduction may be split into
    several ``+=`` kernels, e.g. over the two halves of a bidirectional layer's input)."""
    for op in p.ops:
        spans: dict[tuple[str, str, int, int], list[tuple[int, int]]] = {}
        where: dict[tuple[str, str, int, int], str] = {}
        # a recurrence reads its own op's state (an RNN's previous hidden state, one direction's
        # half of the layer output): a slice by design, not an input it must cover
        own = {k.out.tensor for k in op.kernels} | set(op.outputs)
        for k in op.kernels:
            reads = _reduced_reads(p, k)
            if reads is None:
                continue
            cc.reductions += 1
            for tensor, axis, size, lo, hi in reads:
                if tensor in own:
                    continue
                key = (k.out.tensor, tensor, axis, size)
                spans.setdefault(key, []).append((lo, hi))
                where.setdefault(key, k.name)
        for (_out, tensor, axis, size), got in spans.items():
            missing = _gaps(got, size)
            if missing:
                cc.issues.append(_issue(op, "reduction", (
                    f"kernel {where[(_out, tensor, axis, size)]}: reduces {tensor} axis {axis} "
                    f"(size {size}) over elements {_ranges(got)}, missing {_ranges(missing)}")))


def _reduced_reads(p: Program, k: Kernel) -> list[tuple[str, int, int, int, int]] | None:
    """None when ``k`` is no reduction; else (tensor, axis, size, lo, hi) of each input axis it
    indexes by reduced loops alone."""
    red = set(k.reduce_vars)
    if k.op not in REDUCING or not red:
        return None
    guarded = {v for g in k.guards for v in g.expr.vars()}
    ext = k.extents
    out = []
    for ld in loads(k.expr):
        if ld.tensor == k.out.tensor or ld.tensor not in p.tensors:
            continue
        shape = p.tensors[ld.tensor].shape
        for d, a in enumerate(ld.index):
            vs = a.vars()
            if not vs or not vs <= red or vs & guarded or d >= len(shape):
                continue
            lo, hi = a.bounds(ext)
            out.append((ld.tensor, d, shape[d], lo, hi))
    return out


def _gaps(spans: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The parts of 0..size-1 no span covers."""
    gaps, at = [], 0
    for lo, hi in sorted(spans):
        if lo > at:
            gaps.append((at, min(lo, size) - 1))
        at = max(at, hi + 1)
    if at < size:
        gaps.append((at, size - 1))
    return [g for g in gaps if g[0] <= g[1]]


def _ranges(spans: list[tuple[int, int]]) -> str:
    return ", ".join(f"{lo}..{hi}" for lo, hi in sorted(set(spans)))


# ------------------------------------------------------------------ audit of the counter


def _recount(k: Kernel) -> tuple[int, int, int]:
    """(exact tensor FLOPs, exact transcendentals, least vector FLOPs) of ``k`` per point."""
    if k.unit == "matrix":
        return 2, 0, 0
    trans = 0
    for e in walk(k.expr):
        if isinstance(e, Call) and e.fn in TRANSCENDENTAL and not _int_pow(e):
            trans += 1
    least = trans + (1 if k.op in REDUCING else 0)
    return 0, trans, least


def _int_pow(e: Call) -> bool:
    if e.fn != "pow" or len(e.args) < 2 or not isinstance(e.args[1], Const):
        return False
    v = float(e.args[1].value)
    return v.is_integer() and abs(v) <= INT_POW_MAX


def audit_counter(p: Program, cc: CountCheck) -> None:
    """Each kernel's counts (the pipeline's counter) against a recount from its statement."""
    for op in p.ops:
        for k in op.kernels:
            got = kernel_counts(k)
            tf, trans, least = _recount(k)
            n = k.points
            cc.kernels_audited += 1
            why = []
            if got.tensor_flops != tf * n:
                why.append(f"{got.tensor_flops:,} tensor FLOPs for {n:,} matrix points (expected {tf * n:,})")
            if got.transcendentals != trans * n:
                why.append(f"{got.transcendentals:,} transcendentals (expected {trans * n:,})")
            if got.vector_flops < least * n:
                why.append(f"{got.vector_flops:,} vector FLOPs, fewer than its combines and "
                           f"transcendental calls ({least * n:,})")
            if why:
                cc.issues.append(_issue(op, "counter", f"kernel {k.name}: " + "; ".join(why)))


# ------------------------------------------------------------------ the verdict


def check_counts(p: Program, fw: FrameworkFlops | None, extra: list[dict] = ()) -> CountCheck:
    """All three checks on ``p``; ``fw`` is the framework's tensor-FLOP count (None: none),
    ``extra`` issues found by the frontend's own checks (JAX loop trip counts)."""
    cc = CountCheck("checked", "")
    if fw is not None:
        compare_tensor_flops(p, fw, cc)
    reduction_coverage(p, cc)
    audit_counter(p, cc)
    cc.issues.extend(extra)
    cc.status, cc.detail = _verdict(cc, fw)
    return cc


def _verdict(cc: CountCheck, fw: FrameworkFlops | None) -> tuple[str, str]:
    if cc.issues:
        first = cc.issues[0]
        more = f" (+{len(cc.issues) - 1} more)" if len(cc.issues) > 1 else ""
        return "mismatch", f"{first['op']} (line {first['line']}): {first['detail']}{more}"
    parts = []
    if fw is None:
        parts.append("no framework count of tensor FLOPs")
    elif not cc.tensor_flops_framework and not cc.tensor_flops_ir and cc.unchecked:
        parts.append("no tensor FLOPs outside the ops the counter cannot see")
    elif not cc.tensor_flops_framework and not cc.tensor_flops_ir:
        parts.append(f"{fw.name} counts no tensor FLOPs, nor does the IR")
    else:
        parts.append(f"tensor FLOPs match {fw.name} ({_n(cc.ops_compared, 'op')}, "
                     f"{units.flops(cc.tensor_flops_ir)})")
    if cc.unchecked:
        parts.append(f"{_n(len(cc.unchecked), 'op')} not counted by {cc.framework}: "
                     f"{cc.unchecked[0]['op']} ({cc.unchecked[0]['detail']})")
    if fw is not None:
        parts.extend(fw.notes)
    if cc.masked:
        parts.append(f"{_n(len(cc.masked), 'masked op')} compared with the masked-out points "
                     f"counted, as {fw.name if fw else 'the framework'} counts them (the report leaves them out)")
    if cc.reductions:
        parts.append(f"{_n(cc.reductions, 'reduction')} cover{'s its' if cc.reductions == 1 else ' their'} inputs")
    status = "checked" if (fw is not None or cc.reductions) else "unchecked"
    return status, "; ".join(parts)


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass
class CheckedVerification(Verification):
    """A verification with its counts verdict (``verification["counts"]`` in the report)."""

    counts: dict[str, Any] | None = None

    def to_json(self) -> dict:
        d = super().to_json()
        if self.counts is not None:
            d["counts"] = self.counts
        return d


def with_counts(v: Verification, cc: CountCheck) -> CheckedVerification:
    """``v`` with the counts attached. Counts that mismatch make the entry a ``mismatch``
    (detail ``counts: ...``) unless its values already mismatched: a wrong count is never
    reported as verified."""
    status, detail = v.status, v.detail
    if cc.status == "mismatch" and status != "mismatch":
        status, detail = "mismatch", f"counts: {cc.detail}"
    return CheckedVerification(status, detail, v.ops, v.seconds, counts=cc.to_json())
