"""Verify a JAX entry's IR against jax's own outputs (docs/architecture.md §4), with the torch verifier's
per-op checks (``verify.check_op``: numba kernels at sampled points, dtype tolerances).

The golden run (verify/golden_jax.py) interprets the jaxpr equation by equation on real CPU
arrays and is streamed like torch's (verify/stream.py): each op is checked as soon as jax has
produced every tensor it reads and writes, and each tensor is let go after its last use, so
the budget judges the peak of what is live at once. When that is cheap, the run is repeated
with the entry's float inputs scaled (``SCALES``), as torch's is. Loop bodies are recorded at
their first iteration; a loop's outputs are checked by *replaying* the body's IR for every
iteration from jax's carry (numba kernels, numpy composition steps) and comparing with jax's
next carry and stacked output. ``cond`` follows the branch the lowering counted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar_lsp.frontend.errors import user_line
from solar_lsp.frontend.jax.lower import JaxLowered, LoopInfo
from solar_lsp.frontend.jax.trace import JaxTraced, Lit
from solar_lsp.ir.core import Op, Program
from solar_lsp.units import plural
from solar_lsp.verify.core import (
    DEFAULT_BUDGET,
    SAMPLES,
    OpCheck,
    Verification,
    as_float64,
    keep_worst,
    mismatch,
    over_budget,
)
from solar_lsp.verify.counts import CheckedVerification, with_counts
from solar_lsp.verify.counts_jax import check_jax_counts
from solar_lsp.verify.golden_jax import MANUAL_EVALS, Golden, golden_run, run_order, tensor_steps
from solar_lsp.verify.op_check import check_op
from solar_lsp.verify.propagate import compare_outputs, program_unit, run_ops
from solar_lsp.verify.stream import (
    SCALED_SHARE,
    peak_bytes,
    plan_passes,
    release_memory,
    scaled_passes,
    schedule,
)

REPLAY_POINTS = 5e7  # loop points a replay may execute (all iterations together)
REPLAY_STEPS = 50_000  # op executions a replay may take

# ------------------------------------------------------------------ loop replay

def _points(loop: LoopInfo, by_id: dict[str, Op]) -> tuple[float, int]:
    pts, steps = 0.0, 0
    for item in loop.body:
        if isinstance(item, LoopInfo):
            a, b = _points(item, by_id)
            pts, steps = pts + a, steps + b
        else:
            pts += sum(k.points for k in by_id[item].kernels)
            steps += 1
    return pts * loop.trips, steps * loop.trips


class _Replay:
    """Runs a loop body's IR (numba kernels, numpy composition steps)."""

    def __init__(self, p: Program, golden: dict[str, np.ndarray], unit: float):
        self.p = p
        self.golden = golden
        self.by_id = {op.id: op for op in p.ops}
        self.unit = unit  # the roundoff the error bounds are carried in (propagate.program_unit)

    def body(self, loop: LoopInfo, arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray]) -> None:
        """One iteration: the loop's slices and carries must already be in ``arrays`` (their
        error bounds in ``errors``, absent when exact)."""
        skip = {i for item in loop.body if isinstance(item, LoopInfo) for i in item.exit_ops}
        for item in loop.body:
            if isinstance(item, LoopInfo):
                vals, errs = self.run(item, arrays, errors)
                arrays.update(vals)
                errors.update(errs)
            elif item not in skip:
                op = self.by_id[item]
                for i in op.inputs:
                    self.get(i, arrays)
                run_ops(self.p, [op], arrays, errors, self.unit)

    def run(self, loop: LoopInfo, arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray]
            ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Every iteration from the loop's inputs (a nested loop inside a replayed body): the
        final carries and stacked outputs, and their error bounds."""
        T = loop.trips
        carry = [(self.value(h, arrays), self.error(h, errors)) for h in loop.carry_in]
        xs = {x: (self.get(x, arrays), errors.get(x)) for x, _ in loop.xs}
        stacks = [(np.zeros(self.p.tensors[ys].shape), np.zeros(self.p.tensors[ys].shape)) for _, ys in loop.ys]
        for t in (range(T - 1, -1, -1) if loop.reverse else range(T)):
            for x, xt in loop.xs:
                arrays[xt] = np.array(xs[x][0][t], dtype=np.float64)
                _set(errors, xt, None if xs[x][1] is None else np.array(xs[x][1][t]))
            for name, (v, e) in zip(loop.carry_in, carry):
                arrays[name] = v
                _set(errors, name, e)
            self.body(loop, arrays, errors)
            carry = [(self.value(h, arrays), self.error(h, errors)) for h in loop.carry_out]
            for j, (yt, _) in enumerate(loop.ys):
                stacks[j][0][t] = self.value(yt, arrays)
                e = self.error(yt, errors)
                stacks[j][1][t] = 0.0 if e is None else e
        out = {name: v for name, (v, _) in zip(loop.finals, carry) if name is not None}
        errs = {name: e for name, (_, e) in zip(loop.finals, carry) if name is not None and e is not None}
        out.update({ys: s for (_, ys), (s, _) in zip(loop.ys, stacks)})
        errs.update({ys: e for (_, ys), (_, e) in zip(loop.ys, stacks)})
        return out, errs

    def error(self, h: Any, errors: dict[str, np.ndarray]) -> np.ndarray | None:
        """The error bound of a handle's value (None: exact)."""
        if isinstance(h, Lit) or h not in errors:
            return None
        return np.array(errors[h], dtype=np.float64)

    def get(self, name: str, arrays: dict[str, np.ndarray]) -> np.ndarray:
        if name not in arrays:
            arrays[name] = as_float64(self.golden[name])
        return arrays[name]

    def value(self, h: Any, arrays: dict[str, np.ndarray]) -> np.ndarray:
        if isinstance(h, Lit):
            return np.asarray(float(h.value))
        return np.array(self.get(h, arrays), dtype=np.float64)


def check_loops(p: Program, lowered: JaxLowered, golden: Golden, rng: np.random.Generator,
                samples: int) -> dict[str, OpCheck]:
    """One check per loop exit op. Every iteration of the body's IR is run from the carry
    jax had entering that iteration, and its results are compared with jax's carry after
    it and with jax's stacked output at that step (so rounding never accumulates, however
    sensitive the recurrence)."""
    by_id = {op.id: op for op in p.ops}
    by_out = {op.outputs[0]: op for op in p.ops if op.outputs}
    checks: dict[str, OpCheck] = {}
    for loop in lowered.loops:
        exits = [by_id[i] for i in loop.exit_ops if by_id[i].kind == "view"]
        if exits:
            unit = program_unit(p, [by_id[i] for i in _body_ops(loop)], narrow=True)
            replay = _Replay(p, golden.values, unit)
            checks.update(_check_loop(p, loop, exits, golden, replay, by_out, rng, samples))
    return checks


def _set(errors: dict[str, np.ndarray], name: str, e: np.ndarray | None) -> None:
    if e is None:
        errors.pop(name, None)
    else:
        errors[name] = e


def _not_replayed(loop: LoopInfo, carries: list | None, by_id: dict[str, Op]) -> str:
    """Why the loop's iterations cannot be replayed ('' when they can)."""
    pts, steps = _points(loop, by_id)
    if loop.source == "pragma":
        return "the trip count comes from a `# solar: trips` pragma, not from the data"
    if carries is None:
        return f"recording {loop.trips} iterations is over {MANUAL_EVALS} equation evaluations"
    if pts > REPLAY_POINTS or steps > REPLAY_STEPS:
        return f"replaying {loop.trips} iterations ({pts:.2g} loop points) is over the limit"
    return ""


def _check_loop(p: Program, loop: LoopInfo, exits: list[Op], golden: Golden, replay: _Replay,
                by_out: dict[str, Op], rng: np.random.Generator, samples: int) -> dict[str, OpCheck]:
    """The checks of one loop's exit ops."""
    carries = golden.carries.get(loop.key)
    why = _not_replayed(loop, carries, replay.by_id)
    if why:
        return {op.id: OpCheck(op.id, op.line, "unverified", f"loop output not replayed: {why}")
                for op in exits}
    if not golden.trips_ok.get(loop.key, True):
        return {op.id: OpCheck(op.id, op.line, "mismatch",
                               f"the loop condition does not stop after {loop.trips} trips")
                for op in exits}
    try:
        worst = _replay_steps(p, loop, exits, golden, carries, replay, by_out)
    except Exception as exc:
        return {op.id: OpCheck(op.id, op.line, "unverified",
                               f"replaying the loop failed: {type(exc).__name__}: {exc}")
                for op in exits}
    checks: dict[str, OpCheck] = {}
    for op in exits:
        w = worst[op.id]
        if w is not None and w["bad"]:
            checks[op.id] = mismatch(op, w)
        else:
            checks[op.id] = OpCheck(op.id, op.line, "verified",
                                    f"all {loop.trips} iterations replayed from jax's carries")
    return checks


def _replay_steps(p: Program, loop: LoopInfo, exits: list[Op], golden: Golden, carries: list,
                  replay: _Replay, by_out: dict[str, Op]) -> dict[str, dict | None]:
    """Replay every iteration from jax's carry (exact: error bounds start at zero each step);
    the worst comparison per exit op, each point within its rounding-error bound."""
    worst: dict[str, dict | None] = {op.id: None for op in exits}
    arrays: dict[str, np.ndarray] = {}
    order = range(loop.trips - 1, -1, -1) if loop.reverse else range(loop.trips)
    for i, t in enumerate(order):
        errors: dict[str, np.ndarray] = {}
        for x, xt in loop.xs:
            arrays[xt] = np.array(replay.get(x, arrays)[t], dtype=np.float64)
        for name, v in zip(loop.carry_in, carries[i]):
            arrays[name] = np.array(v, dtype=np.float64)
        replay.body(loop, arrays, errors)
        outs = [(by_out.get(loop.finals[j]) if loop.finals[j] else None, h, carries[i + 1][j])
                for j, h in enumerate(loop.carry_out)]
        outs += [(by_out[ys], yt, as_float64(golden.values[ys])[t]) for yt, ys in loop.ys]
        for op, h, ref in outs:
            if op is not None and op.id in worst:
                got = replay.value(h, arrays)
                with np.errstate(invalid="ignore"):
                    w = compare_outputs(p, [op.outputs[0]], [got], [np.asarray(ref, dtype=np.float64)],
                                        [replay.error(h, errors)], replay.unit, f" at step {t} ")
                worst[op.id] = keep_worst(worst[op.id], w)
    return worst


def _body_ops(loop: LoopInfo) -> list[str]:
    out: list[str] = []
    for item in loop.body:
        out.extend(_body_ops(item) if isinstance(item, LoopInfo) else [item])
    return out



# ------------------------------------------------------------------ entry point

def verify(traced: JaxTraced, lowered: JaxLowered, budget_bytes: int = DEFAULT_BUDGET,
           samples: int = SAMPLES, seed: int = 0, scaled: bool = True) -> Verification:
    """Run the entry's jaxpr on real arrays and check every op (and loop) of its IR, each op
    as soon as its tensors exist, letting each tensor go after its last use
    (verify/stream.py); when ``scaled`` and cheap, again with the inputs scaled by each of
    ``SCALES``."""
    t0 = time.perf_counter()
    p = lowered.program
    ops = [op for op in p.ops if op.phase != "optimizer"]  # no jaxpr equation: its own check
    peak = peak_bytes(p, ops, loop_tensors(lowered))  # held for the loop replays at the end
    refused = over_budget(p, budget_bytes, t0, peak)
    if refused is not None:
        return refused
    scaled = scaled and peak * SCALED_SHARE <= budget_bytes  # the second pass fits
    plan_passes(ops, samples, scaled)
    args: list[Any] = []  # the entry's real arguments, built once for every pass
    checks = checked_run(traced, lowered, ops, seed, samples, args=args)
    if isinstance(checks, str):
        return Verification("unverified", f"golden run failed{checks}", seconds=time.perf_counter() - t0)
    status, detail = _summary(checks, lowered)
    extra: dict[str, Any] = {}
    if status == "verified" and scaled:
        status, detail, extra = _scaled(traced, lowered, ops, seed, samples, detail, args)
    counts = check_jax_counts(traced, lowered)  # counts beside values: docs/sol-model.md
    out = with_counts(Verification(status, detail, checks, time.perf_counter() - t0), counts)
    out.extra = extra
    return out


def _scaled(traced: JaxTraced, lowered: JaxLowered, ops: list[Op], seed: int, samples: int,
            detail: str, args: list[Any]) -> tuple[str, str, dict]:
    """The second pass at each scale of the inputs (check_torch's rule): the entry's status,
    detail and the ``scaled_inputs`` JSON."""
    def run(scale: float) -> list | str:
        checks = checked_run(traced, lowered, ops, seed, samples, scale, args)
        return checks.lstrip(" :") if isinstance(checks, str) else checks
    return scaled_passes(run, detail)


def loop_tensors(lowered: JaxLowered) -> set[str]:
    """Every tensor a loop's replay reads from the golden run (its stacked inputs and
    outputs, and whatever its body's ops read): held until the replays at the run's end."""
    by_id = {op.id: op for op in lowered.program.ops}
    out: set[str] = set()
    for loop in lowered.loops:
        out.update(x for pair in loop.xs for x in pair)
        out.update(y for pair in loop.ys for y in pair if isinstance(y, str))
        out.update(t for t in loop.finals + loop.carry_in + loop.carry_out if isinstance(t, str))
        for item in loop.body:
            if isinstance(item, str) and item in by_id:
                out.update(by_id[item].inputs + by_id[item].outputs)
    return out


def checked_run(traced: JaxTraced, lowered: JaxLowered, ops: list[Op], seed: int, samples: int,
                scale: float = 1.0, args: list[Any] | None = None) -> list[OpCheck] | str:
    """One streamed golden run (the float inputs times ``scale``) with every op of ``ops``
    checked on it, in ``ops``' order; or why the golden run failed (the user's code raising),
    as a suffix of "golden run failed". ``args``: the entry's real arguments, or an empty
    list that gets them (built once for several runs)."""
    p = lowered.program
    rng = np.random.default_rng(seed)
    steps = run_order(traced, lowered)
    plan = schedule(ops, tensor_steps(lowered, steps), steps)
    exits = {i for loop in lowered.loops for i in loop.exit_ops}
    held = loop_tensors(lowered)
    derived = set(lowered.derived.values())
    found: dict[int, OpCheck] = {}
    late: list[int] = []
    failed: list[BaseException] = []

    def check(i: int, golden: dict[str, Any]) -> OpCheck:
        op = ops[i]
        if op.id in derived and all(t in lowered.derived for t in op.outputs):
            return OpCheck(op.id, op.line, "verified", "helper (an index or a view made for the next "
                           "op); checked through the op that uses it")
        with np.errstate(invalid="ignore"):  # inf - inf where a mask wrote -inf
            return check_op(p, op, golden, rng, samples, narrow=True, scaled=scale != 1.0)

    def consume(step: str, golden: dict[str, Any]) -> None:
        try:
            for i in plan.ready.get(step, ()):
                names = ops[i].inputs + ops[i].outputs
                if ops[i].id in exits or any(t not in golden for t in names):
                    late.append(i)  # a loop's output, or a value not there yet: at the end
                    held.update(names)
                else:
                    found[i] = check(i, golden)
        except Exception as exc:  # a bug of ours, not the user's code: raised after the run
            failed.append(exc)
            raise
        for t in plan.free.get(step, ()):
            if t not in held:
                golden.pop(t, None)
        if step in plan.ready:
            release_memory(p, [ops[i] for i in plan.ready[step]])

    try:
        if args is not None and not args and traced.real_args is not None:
            args.extend(traced.real_args(seed))
        golden = golden_run(traced, lowered, seed, consume, scale, args or None)
    except Exception as exc:  # user code raising on real arrays
        if failed:
            raise failed[0] from exc
        line = user_line(exc, traced.path)
        return f"{f' (line {line})' if line else ''}: {type(exc).__name__}: {exc}"
    loop_checks = check_loops(p, lowered, golden, rng, samples)
    for i in plan.at_end + late:
        found[i] = loop_checks.get(ops[i].id) or check(i, golden.values)
    return [found[i] for i in range(len(ops))]


def _summary(checks: list[OpCheck], lowered: JaxLowered) -> tuple[str, str]:
    """The entry's status and detail from its ops' checks."""
    n_ok = sum(c.status == 'verified' for c in checks)
    for bad_status in ("mismatch", "unverified"):
        bad = next((c for c in checks if c.status == bad_status), None)
        if bad is not None:
            return bad_status, f"{bad.op} (line {bad.line}): {bad.detail}"
    if lowered.unsupported:
        return "unverified", (f"{plural(len(lowered.unsupported), 'equation')} without a lowering; "
                              + (f"{plural(n_ok, 'other op')} verified" if n_ok else "nothing else to verify"))
    return "verified", f"{plural(n_ok, 'op')} checked against jax"


# ------------------------------------------------------------------ training steps

@dataclass
class TrainVerification(CheckedVerification):
    """A training step's verification: the per-op verdicts plus each gradient's
    (``verification["gradients"]`` in the report)."""

    gradients: dict[str, Any] | None = None

    def to_json(self) -> dict:
        d = super().to_json()
        if self.gradients is not None:
            d["gradients"] = self.gradients
        return d


def verify_train(traced: JaxTraced, lowered: JaxLowered, budget_bytes: int = DEFAULT_BUDGET,
                 samples: int = SAMPLES, seed: int = 0) -> Verification:
    """:func:`verify` of a training step (``frontend/jax/train.py``): its jaxpr is jax's own
    ``value_and_grad`` of the loss, so every backward op is checked against jax's gradient
    computation on the golden inputs, with the forward's rules; the verdict of the op that
    writes each parameter's gradient is reported per parameter."""
    v = verify(traced, lowered, budget_bytes, samples, seed, scaled=False)  # a loss's targets would scale too
    if not isinstance(v, CheckedVerification):  # refused (budget) or the golden run failed
        return v
    return TrainVerification(v.status, v.detail, v.ops, v.seconds, counts=v.counts,
                             gradients=gradient_checks(lowered, v.ops))


def gradient_checks(lowered: JaxLowered, checks: list[OpCheck]) -> dict[str, Any]:
    """Per trainable parameter: its gradient tensor, the op writing it and the verdict of
    every op the gradient depends on (forward and backward): a gradient is verified only
    when each op of its computation is."""
    grads: dict[str, str] = getattr(lowered, "grads", {})
    p = lowered.program
    writer = {t: op for op in p.ops for t in op.outputs}
    by_op = {c.op: c for c in checks}
    rank = {"verified": 0, "unverified": 1, "mismatch": 2}
    params: dict[str, Any] = {}
    for param, g in grads.items():
        worst, seen, todo = None, set(), [g]
        while todo:
            op = writer.get(todo.pop())
            if op is None or op.id in seen:
                continue
            seen.add(op.id)
            c = by_op.get(op.id)
            c_rank = rank.get(c.status, 1) if c else 1
            if worst is None or c_rank > worst[0]:
                worst = (c_rank, c, op.id)
            todo.extend(op.inputs)
        status = "unverified" if worst is None else \
            (worst[1].status if worst[1] else "unverified")
        entry = {"grad": g, "op": writer[g].id if g in writer else None, "status": status,
                 "ops": len(seen)}
        if worst is not None and status != "verified":
            entry["detail"] = f"{worst[2]}: {worst[1].detail if worst[1] else 'not checked'}"
        params[param] = entry
    bad = [k for k, d in params.items() if d["status"] != "verified"]
    status = "verified" if not bad else (
        "mismatch" if any(params[k]["status"] == "mismatch" for k in bad) else "unverified")
    detail = (f"{plural(len(params), 'gradient')} checked against jax.value_and_grad, every op "
              "of each" if not bad else f"gradient of {bad[0]}: {params[bad[0]]['detail']}")
    return {"status": status, "detail": detail, "params": params}
