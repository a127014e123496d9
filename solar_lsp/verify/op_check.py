"""Check one IR op against the golden values of its inputs and outputs: kernels run by
numba (the last one at sampled points when it is large and each point's value is final),
composition steps (views, gathers) by numpy; every output element must be written. Each
value is judged within a bound on the framework's rounding error at that point
(docs/sol-model.md, Verification). Framework-neutral: the golden values are torch tensors or
arrays.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solar_lsp.ir import calls_index, execute, written
from solar_lsp.ir.core import Kernel, Op, Program, loads
from solar_lsp.ir.validate import recurrence_var
from solar_lsp.verify.core import (
    FULL_CHECK,
    FULL_RUN_LIMIT,
    MAX_FINITE,
    SAMPLE_BUDGET,
    UNIT,
    OpCheck,
    as_float64,
    compare_bounded,
    compare_whole,
    float64_at,
    keep_worst,
    kernel_input,
    mismatch,
    nonzero,
    out_dtype,
    unit_range,
    unit_roundoff,
)
from solar_lsp.verify.propagate import call_errors, compare_outputs

COVER_LIMIT = 5e7  # output points marked to prove every element is written
OVERFLOW_SCALE = 100.0  # largest input magnitude of the overflow check (exp(100) > float32 max)
OVERFLOW_POINTS = 1e7  # loop points the overflow check may execute
# ops whose constant weights come from coordinates (``_slack``)
COORDINATE_TARGETS = ("upsample", "grid_sampler", "affine_grid", "interpolate")
# random draws (frontend/torch/creation.RANDOM_TARGETS): no value to compare; their shape and
# dtype are checked, and the ops after them run on the framework's drawn values
RANDOM_TARGETS = frozenset({"aten.rand.default", "aten.randn.default", "aten.rand_like.default",
                            "aten.randn_like.default"})
RANDOM_DETAIL = "random values: shape and dtype checked, values taken from the framework"


def _arrays(p: Program, op: Op, golden: dict[str, Any]) -> dict[str, np.ndarray] | None:
    """The op's golden inputs as its kernels read them (a large float32 one as it is, never
    one the op also writes); a composition step's all float64."""
    arrays: dict[str, np.ndarray] = {}
    written = set(op.outputs) | {k.out.tensor for k in op.kernels}
    for t in op.inputs:
        if t not in golden:
            return None
        keep = op.kind == "compute" and t not in written
        arrays[t] = kernel_input(golden[t]) if keep else as_float64(golden[t])
    return arrays


def check_op(p: Program, op: Op, golden: dict[str, Any], rng: np.random.Generator,
             samples: int, narrow: bool = False, scaled: bool = False,
             full_check: float = FULL_CHECK) -> OpCheck:
    """Run ``op``'s IR on its golden inputs and compare with its golden outputs (``narrow``:
    the framework may round each step of an elementwise op to its dtype, ``unit_roundoff``;
    ``scaled``: the golden run's inputs were scaled, and a buffer of the op past its dtype's
    range where the framework's outputs are finite is a mismatch, ``_buffers_overflow``;
    ``full_check``: loop points under which the last kernel is compared in full, not at
    sampled points)."""
    if op.kind == "alloc":
        return OpCheck(op.id, op.line, "verified", "allocation")
    arrays = _arrays(p, op, golden)
    if arrays is None or any(o not in golden for o in op.outputs):
        return OpCheck(op.id, op.line, "unverified", "golden values missing for this op")
    if op.kind in ("view", "gather"):
        return _check_call(p, op, golden, arrays, rng, samples)
    if op.target in RANDOM_TARGETS:
        return _check_random(p, op, golden)
    unit = unit_roundoff(p, op, narrow)
    num = (unit, unit_range(unit), _slack(p, op))
    res = _check_kernels(p, op, golden, arrays, rng, samples, num, full_check)
    if res.status != "verified":
        return res
    return (scaled and _buffers_overflow(p, op, golden, arrays, num)) or _overflow(p, op, golden, num) or res


def _buffers_overflow(p: Program, op: Op, golden: dict[str, Any], arrays: dict[str, np.ndarray],
                      num: tuple) -> OpCheck | None:
    """At scaled inputs: a mismatch when an op-internal buffer the IR computed holds a value
    past its dtype's range (the accumulator's, float32's) while the framework's own outputs are
    all finite: the IR overflows where the framework does not (softmax without its max
    subtraction at inputs x1e2, whatever the number of inputs)."""
    temps = [t for t in dict.fromkeys(k.out.tensor for k in op.kernels) if t not in op.outputs and t in arrays]
    if not temps or not all(np.all(np.isfinite(as_float64(golden[t]))) for t in op.outputs):
        return None
    for t in temps:
        lim = MAX_FINITE.get(p.tensors[t].dtype, num[1]) if t in p.tensors else num[1]
        with np.errstate(invalid="ignore"):  # an infinity the IR writes on purpose (a mask's -inf) is no overflow
            over = np.isfinite(arrays[t]) & (np.abs(arrays[t]) > lim)
        if over.any():
            idx = [int(i) for i in np.argwhere(over)[0]] if over.ndim else []
            v = float(arrays[t][tuple(idx)])
            return OpCheck(op.id, op.line, "mismatch",
                           f"{t}{idx} = {v:.3g} overflows {p.tensors[t].dtype if t in p.tensors else 'float32'} "
                           "while the framework's result is finite: the IR overflows where the framework does not")
    return None


def _check_random(p: Program, op: Op, golden: dict[str, Any]) -> OpCheck:
    """A random draw: its golden value must have the declared shape and dtype; the values
    are the framework's, and every op reading them is checked on them as usual."""
    for t in op.outputs:
        v, want = golden[t], p.tensors[t]
        dt = str(getattr(v, "dtype", "")).removeprefix("torch.")
        if tuple(np.shape(v)) != tuple(want.shape) or dt != want.dtype:
            return OpCheck(op.id, op.line, "mismatch", f"{t}: the framework drew {dt}{list(np.shape(v))}, "
                           f"the IR declares {want.dtype}{list(want.shape)}")
    return OpCheck(op.id, op.line, "verified", RANDOM_DETAIL)


def _slack(p: Program, op: Op) -> float:
    """Error of an interpolation's constant weights, in units of the roundoff: the framework
    computes them per position from coordinates in float32 (``(i + 0.5)·scale - 0.5``), an
    error of a few roundoffs of the largest coordinate, where the IR keeps one weight for every
    position of a period (docs/sol-model.md, Verification)."""
    if not any(s in op.target for s in COORDINATE_TARGETS):
        return 0.0
    return 2.0 * max([max(p.tensors[t].shape, default=1) for t in op.inputs if t in p.tensors] + [1])


def _overflow(p: Program, op: Op, golden: dict[str, Any], num: tuple) -> OpCheck | None:
    """A mismatch when, with the op's one float input scaled to OVERFLOW_SCALE at most, a
    buffer inside the op outgrows its dtype's range while every output stays finite and in
    range: the framework (softmax subtracting the row's max) computes that result, the IR
    would overflow (docs/sol-model.md, Verification). Golden inputs are too small to show it."""
    floats = [t for t in op.inputs if out_dtype(p, t) != "exact"]
    temps = [t for t in dict.fromkeys(k.out.tensor for k in op.kernels) if t not in op.outputs]
    if len(floats) != 1 or not temps or sum(k.points for k in op.kernels) > OVERFLOW_POINTS:
        return None
    x = as_float64(golden[floats[0]])
    top = float(np.max(np.abs(x[np.isfinite(x)]), initial=0.0))
    if top == 0.0:
        return None
    arrays = {t: as_float64(golden[t]) for t in op.inputs}
    arrays[floats[0]] = x * (OVERFLOW_SCALE / top)
    for t in set(k.out.tensor for k in op.kernels) | set(op.outputs):
        arrays.setdefault(t, np.zeros(p.tensors[t].shape, dtype=np.float64))
    try:
        with np.errstate(all="ignore"):
            for k in op.kernels:
                execute.run_kernel_err(k, arrays, {}, *num)
    except Exception:  # the check itself found nothing to say
        return None
    for t in op.outputs:
        top_out = MAX_FINITE.get(out_dtype(p, t), np.inf)
        if not np.all(np.isfinite(arrays[t])) or np.max(np.abs(arrays[t]), initial=0.0) > top_out:
            return None  # the result itself is out of range: the framework overflows too
    for t in temps:
        lim = MAX_FINITE.get(p.tensors[t].dtype, num[1])
        over = np.abs(arrays[t]) > lim
        if over.any():
            idx = [int(i) for i in np.argwhere(over)[0]] if over.ndim else []
            v = float(arrays[t][tuple(idx)])
            return OpCheck(op.id, op.line, "mismatch",
                           f"with {floats[0]} scaled to |x| <= {OVERFLOW_SCALE:g}, {t}{idx} = {v:.3g} "
                           f"overflows {p.tensors[t].dtype} while every output is finite: the IR "
                           f"overflows where the exact result does not")
    return None


def _check_call(p: Program, op: Op, golden: dict[str, Any], arrays: dict[str, np.ndarray],
                rng: np.random.Generator, samples: int) -> OpCheck:
    """A composition step: its call must reproduce the golden outputs exactly (within the
    dtype's tolerance for an accumulating call)."""
    try:
        got = execute.apply_call(op.call, [arrays[t] for t in op.inputs])
    except Exception as exc:
        return OpCheck(op.id, op.line, "mismatch", f"composition step failed: {exc}")
    gots = got if isinstance(got, tuple) else (got,)  # a call fills outputs in order
    refs = tuple(as_float64(golden[t]) for t in op.outputs[:len(gots)])
    ins = [arrays[t] for t in op.inputs]
    gots = calls_index.canonical(op.call, tuple(np.asarray(g, dtype=np.float64) for g in gots), ins)
    refs = calls_index.canonical(op.call, refs, ins)
    errs = None
    for j, (t, g, ref) in enumerate(zip(op.outputs, gots, refs)):
        if g.shape == ref.shape and np.array_equal(g, ref, equal_nan=True):
            continue
        red = calls_index.accumulation_length(op.call, [p.tensors[i].shape for i in op.inputs],
                                              [p.tensors[o].shape for o in op.outputs])
        if g.shape == ref.shape and red and p.tensors[t].dtype in UNIT:
            # an accumulating call (scatter_add, embedding_bag) rounds differently in float64:
            # each point within its rounding-error bound, the sum rule of a kernel's +=
            if errs is None:
                raw = execute.apply_call(op.call, ins)
                errs = call_errors(p, op, ins, {}, raw if isinstance(raw, tuple) else (raw,))
            w = compare_outputs(p, [t], [g], [ref], [errs[j] if j < len(errs) else None], unit_roundoff(p, op))
            if w is not None and not w["bad"]:
                continue
        return OpCheck(op.id, op.line, "mismatch",
                       f"{op.call} does not reproduce torch's result for {t}")
    return OpCheck(op.id, op.line, "verified")


def _check_kernels(p: Program, op: Op, golden: dict[str, Any], arrays: dict[str, np.ndarray],
                   rng: np.random.Generator, samples: int, num: tuple,
                   full_check: float = FULL_CHECK) -> OpCheck:
    """A compute op: every output element must be written; every kernel but the last runs in
    full; the last in full too when cheap, else at sampled points when each point's value is
    final. Each value is judged within its own rounding-error bound (``core.bound``)."""
    for t in set(k.out.tensor for k in op.kernels) | set(op.outputs):
        if t not in arrays:
            arrays[t] = np.zeros(p.tensors[t].shape, dtype=np.float64)
    prefix, last = op.kernels[:-1], op.kernels[-1]
    cost = sum(k.points for k in prefix)
    if cost > FULL_RUN_LIMIT:
        return OpCheck(op.id, op.line, "unverified",
                       f"executing {cost:.2g} loop points on the CPU is over the verification limit")
    unwritten = _unwritten(p, op, golden)
    if unwritten is not None:
        return unwritten
    unit = num[0]
    errors: dict[str, np.ndarray] = {}
    pts = None
    try:
        if _sampled(last, full_check) and _fills_only(p, prefix, last):  # not the whole output: the points
            pts = sample_points(last, tuple(np.shape(golden[last.out.tensor])), samples, rng)
            _sample_prefix(prefix, last, pts, arrays, errors, num)
        for k in prefix if pts is None else ():
            execute.run_kernel_err(k, arrays, errors, *num)
            _round_temp(p, op, k.out.tensor, arrays, errors, unit)
        worst = None
        for t in op.outputs:
            if t != last.out.tensor:
                worst = keep_worst(worst, _compare_whole(p, t, arrays, errors, golden, unit))
        if last.out.tensor in op.outputs:
            res = _check_last(p, op, last, golden, arrays, errors, num, rng, samples, pts, full_check)
            if isinstance(res, OpCheck):
                return res
            worst = keep_worst(worst, res)
        else:
            execute.run_kernel(last, arrays)
    except Exception as exc:
        return OpCheck(op.id, op.line, "unverified", f"executing the IR failed: {type(exc).__name__}: {exc}")
    if worst is not None and worst["bad"]:
        return mismatch(op, worst)
    return OpCheck(op.id, op.line, "verified", ratio=worst["ratio"] if worst else None)


def _sampled(k: Kernel, full_check: float = FULL_CHECK) -> bool:
    """The last kernel is checked at sampled points (``_check_last``)."""
    return injective(k) and k.points > full_check


def sampled_last(p: Program, op: Op) -> bool:
    """``op``'s last kernel is checked at sampled points and nothing before it runs over its
    whole output: that output is touched at the sampled points only."""
    if op.kind != "compute" or not op.kernels or not _sampled(op.kernels[-1]):
        return False
    prefix, last = op.kernels[:-1], op.kernels[-1]
    return not prefix or _fills_only(p, prefix, last) or all(k.out.tensor != last.out.tensor for k in prefix)


def _fills_only(p: Program, prefix: list[Kernel], last: Kernel) -> bool:
    """Every kernel before ``last`` fills ``last``'s output on its own, each element from one
    point (a bias written before a convolution accumulates onto it), and ``last`` reads that
    output only where it writes: the prefix is needed at the sampled points alone."""
    t = last.out.tensor
    if not prefix or t not in p.tensors or any(ld.tensor == t for ld in loads(last.expr)):
        return False
    shape = p.tensors[t].shape
    return all(k.out.tensor == t and _covers(k, shape) and _plain(k) for k in prefix)


def _plain(k: Kernel) -> bool:
    """Each output index is one distinct loop variable, without offset."""
    return len({a.terms[0][0] for a in k.out.index if len(a.terms) == 1}) == len(k.out.index) and all(
        len(a.terms) == 1 and a.terms[0][1] == 1 and a.const == 0 for a in k.out.index)


def _sample_prefix(prefix: list[Kernel], last: Kernel, pts: np.ndarray, arrays: dict[str, np.ndarray],
                   errors: dict[str, np.ndarray], num: tuple) -> None:
    """Run the prefix kernels at the output positions of ``last``'s sampled points only,
    leaving their values and error bounds there (the rest of the output stays untouched, and
    so never resident: a convolution's bias fill costs no copy of the whole output)."""
    t = last.out.tensor
    pos = execute.out_positions(last, pts)
    errors.setdefault(t, np.zeros(np.shape(arrays[t])))
    for k in prefix:
        col = {a.terms[0][0]: d for d, a in enumerate(k.out.index)}
        kpts = pos[:, [col[v] for v in k.out_vars]] if len(pos) else np.zeros((0, len(k.out_vars)), np.int64)
        vals, _, errs = execute.sample_kernel_err(k, arrays, errors, kpts, *num)
        arrays[t][tuple(pos.T)] = vals
        errors[t][tuple(pos.T)] = errs


def _round_temp(p: Program, op: Op, t: str, arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray],
                unit: float) -> None:
    """An op-internal buffer declared narrower than the accumulator is rounded to its dtype
    (the probabilities of fp16 attention before P·V): one more rounding in its error bound."""
    u = UNIT.get(p.tensors[t].dtype, 0.0) if t in p.tensors else 0.0
    if t not in op.outputs and u > unit:
        errors[t] = errors[t] + (u / unit) * np.abs(arrays[t])


def _compare_whole(p: Program, t: str, arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray],
                   golden: dict[str, Any], unit: float) -> dict:
    got, ref = arrays[t], golden[t]
    if got.shape != tuple(np.shape(ref)):
        return {"tensor": t, "index": [], "expected": float("nan"), "got": float("nan"), "bad": True,
                "ratio": float("inf"), "detail": f"shape {got.shape} vs {tuple(np.shape(ref))}"}
    err = errors.get(t, np.zeros(got.shape))
    return compare_whole(t, got, ref, err, out_dtype(p, t), unit)


def _check_last(p: Program, op: Op, last: Kernel, golden: dict[str, Any], arrays: dict[str, np.ndarray],
                errors: dict[str, np.ndarray], num: tuple, rng: np.random.Generator,
                samples: int, pts: np.ndarray | None = None, full_check: float = FULL_CHECK) -> dict | OpCheck:
    """The comparison of the last kernel's output (in full when cheap or when its points are
    not final; at ``pts`` when given), or ``unverified`` when it is too large."""
    t = last.out.tensor
    if _sampled(last, full_check):
        pts = sample_points(last, tuple(np.shape(golden[t])), samples, rng) if pts is None else pts
        vals, _, errs = execute.sample_kernel_err(last, arrays, errors, pts, *num)
        pos = execute.out_positions(last, pts)
        return compare_bounded(t, pos, vals, float64_at(golden[t], pos), errs, out_dtype(p, t), num[0])
    if last.points > FULL_RUN_LIMIT:
        return OpCheck(op.id, op.line, "unverified",
                       f"scatter-form kernel of {last.points:.2g} points is over the limit")
    execute.run_kernel_err(last, arrays, errors, *num)
    return _compare_whole(p, t, arrays, errors, golden, num[0])


def check_work(ops: list[Op], samples: int) -> float:
    """About how many kernel loop iterations checking ``ops`` once executes, as
    ``_check_kernels`` runs them (every kernel but a sampled last one in full; a sampled last
    one at ``sample_points``' count times its reduction): what the executor's tiers are chosen
    by (ir/execute.py)."""
    work = 0.0
    for op in ops:
        for k in op.kernels[:-1]:
            work += k.points
        if not op.kernels:
            continue
        last = op.kernels[-1]
        if not _sampled(last):
            work += last.points
            continue
        outs = max(1, math.prod(last.extents[v] for v in last.out_vars))
        per_point = max(1, last.points // outs)
        work += per_point * max(samples, min(math.isqrt(outs) + 1, int(SAMPLE_BUDGET // per_point)))
    return work


def sample_points(k: Kernel, shape: tuple[int, ...], samples: int, rng: np.random.Generator) -> np.ndarray:
    """Where to check a kernel too large to run in full: the first and last two indices of
    every output dimension (and the corners), and at random max(samples, sqrt(outputs))
    points, fewer when each costs a long reduction (SAMPLE_BUDGET loop points in all)."""
    outs = max(1, math.prod(k.extents[v] for v in k.out_vars))
    per_point = max(1, k.points // outs)
    n = max(samples, min(math.isqrt(outs) + 1, int(SAMPLE_BUDGET // per_point)))
    pts = np.concatenate([execute.edge_points(k, tuple(shape), rng), execute.random_points(k, n, rng)])
    return np.unique(pts, axis=0) if len(pts) else pts


def _unwritten(p: Program, op: Op, golden: dict[str, Any]) -> OpCheck | None:
    """A mismatch naming the first output element no kernel of ``op`` writes (exact: from
    the out index maps, loop ranges and guards), or None when every element is written."""
    for t in op.outputs:
        ks = [k for k in op.kernels if k.out.tensor == t]
        shape = p.tensors[t].shape
        if not ks or tuple(np.shape(golden[t])) != tuple(shape) or any(_covers(k, shape) for k in ks):
            continue  # (a golden value of another shape is a mismatch of its own)
        if sum(math.prod(k.extents[v] for v in k.out_vars) for k in ks) > COVER_LIMIT:
            continue  # too large to mark; the sampled points include every dimension's edges
        mask = np.zeros(shape, dtype=bool)
        for k in ks:
            written.mark_written(k, mask)
        # a fresh output starts zeroed: elements no kernel writes are right where the framework
        # left them zero too (the gaps of a transposed conv whose stride exceeds its taps)
        bad = ~mask & nonzero(golden[t])
        if not bad.any():
            continue
        missing = int(np.count_nonzero(bad))
        idx = [int(i) for i in np.argwhere(bad)[0]] if mask.ndim else []
        at = np.array([idx], dtype=np.int64).reshape(1, len(idx))
        w = {"tensor": t, "index": idx, "expected": float(float64_at(golden[t], at)[0]), "got": float("nan")}
        return OpCheck(op.id, op.line, "mismatch",
                       f"{t}{idx}: never written ({missing} of {mask.size} elements of {t} are nonzero "
                       "in the framework's output and not written)", w)
    return None


def _covers(k: Kernel, shape: tuple[int, ...]) -> bool:
    """``k`` alone writes every element of an output of ``shape``: its out index is
    one-to-one, unguarded, inside the tensor, and has as many points as the tensor."""
    ov = set(k.out_vars)
    if any(g.expr.vars() <= ov for g in k.guards) or not injective(k):
        return False
    ext = k.extents
    if math.prod(ext[v] for v in ov) != math.prod(shape):
        return False
    return all(0 <= a.bounds(ext)[0] and a.bounds(ext)[1] < n for a, n in zip(k.out.index, shape))


def injective(k: Kernel) -> bool:
    """Each output position comes from exactly one point of the out vars (mixed radix), so
    a sampled point's value is final. A recurrence never is: it reads its own earlier output."""
    if recurrence_var(k) is not None:
        return False
    ext = k.extents
    seen: set[str] = set()
    for a in k.out.index:
        terms = sorted(((c, v) for v, c in a.terms if c), key=lambda t: abs(t[0]))
        reach = 0
        for c, v in terms:
            if v in seen or abs(c) <= reach:
                return False
            seen.add(v)
            reach += abs(c) * (ext[v] - 1)
    return seen == set(k.out_vars)
