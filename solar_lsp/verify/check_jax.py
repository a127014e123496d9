"""Verify a JAX entry's IR against jax's own outputs (docs/architecture.md §4), with the torch verifier's
per-op checks (``verify.check_op``: numba kernels at sampled points, dtype tolerances).

The golden run interprets the jaxpr equation by equation on real CPU arrays (seed-0
inputs, parameters from the module's real ``init``) with the same :class:`Walker` the
lowering used, so every tensor of the IR meets jax's value for it by key. Loop bodies are
recorded at their first iteration (the last for a reversed scan), which is what the body's
ops are checked against. The golden run iterates each loop itself and keeps the carry
entering every iteration; a loop's outputs are checked by *replaying* the body's IR for
every iteration from jax's carry (numba kernels, numpy composition steps) and comparing
with jax's next carry and stacked output. ``cond`` follows the branch the lowering
counted, whatever the predicate says.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar_lsp.frontend.errors import user_line
from solar_lsp.frontend.jax.lower import JaxLowered, LoopInfo
from solar_lsp.frontend.jax.trace import JaxTraced, Key, Lit, Walker, WhileInfo, sub_jaxpr
from solar_lsp.ir import execute
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
from solar_lsp.verify.op_check import check_op
from solar_lsp.verify.propagate import compare_outputs, program_unit, run_ops

REPLAY_POINTS = 5e7  # loop points a replay may execute (all iterations together)
REPLAY_STEPS = 50_000  # op executions a replay may take


class GoldenRunner(Walker):
    """Evaluates each equation with ``primitive.bind`` and records its outputs by key."""

    def __init__(self, traced: JaxTraced, choices: dict[Key, int]):
        super().__init__(traced)
        self.choices = choices
        self.values: dict[Key, Any] = {}
        self.carries: dict[Key, list[list[np.ndarray]]] = {}  # loop -> carry entering each iteration
        self.trips_ok: dict[Key, bool] = {}  # static while -> its condition gave that trip count
        self.record = True

    def _val(self, h: Any) -> Any:
        import jax.numpy as jnp
        if isinstance(h, Lit):
            return jnp.asarray(np.asarray(h.value, dtype=h.dtype))
        return h

    def run(self, args: Any) -> list[Any]:
        for i, a in enumerate(args):
            self._keep(("in", i), a)
        return super().run(args)

    def _keep(self, key: Key, v: Any) -> None:
        if self.record:
            self.values[key] = v

    def const(self, value: Any, key: Key) -> Any:
        self._keep(key, value)
        return value

    def _bind(self, eqn: Any, ins: list[Any]) -> list[Any]:
        vals = [self._val(h) for h in ins]
        got = eqn.primitive.get_bind_params(eqn.params)
        subfuns, params = got if isinstance(got, tuple) else ([], got)  # jax < 0.7: (subfuns, params)
        ctx = getattr(getattr(eqn, "ctx", None), "manager", None)
        if ctx is not None:
            with ctx:
                out = eqn.primitive.bind(*subfuns, *vals, **params)
        else:
            out = eqn.primitive.bind(*subfuns, *vals, **params)
        return list(out) if eqn.primitive.multiple_results else [out]

    def leaf(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        outs = self._bind(eqn, ins)
        for j, v in enumerate(outs):
            self._keep((key, j), v)
        return outs

    def scan(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        p = eqn.params
        T, nc, ncar, rev = int(p["length"]), p["num_consts"], p["num_carry"], bool(p["reverse"])
        consts, init, xs = ins[:nc], ins[nc:nc + ncar], ins[nc + ncar:]
        body = p["jaxpr"]
        if T and self.record:  # the body's values at its first iteration, by key
            at = T - 1 if rev else 0
            xts = [self._val(x)[at] for x in xs]
            for j, x in enumerate(xts):
                self._keep(key + ("x", j), x)
            cins = [self._val(v) for v in init]
            for j, v in enumerate(cins):
                self._keep(key + ("cin", j), v)
            self.closed_block(body, list(consts) + cins + xts, key + ("body",), line, repeat)
        manual = _has_cond(body.jaxpr) or (self.record and T * _eqn_count(body.jaxpr) <= MANUAL_EVALS)
        if manual:
            outs, carries = self._iterate_scan(eqn, consts, init, xs, key, line, repeat)
            if self.record:
                self.carries[key] = carries
        else:
            outs = self._bind(eqn, ins)
        for j, v in enumerate(outs):
            self._keep((key, j), v)
        return outs

    def _iterate_scan(self, eqn, consts, init, xs, key, line, repeat) -> tuple[list[Any], list]:
        """Run the scan one body evaluation at a time (equation by equation): inner conds
        follow the counted branch, and the carry entering every iteration is kept."""
        import jax.numpy as jnp
        p = eqn.params
        T, ncar, rev = int(p["length"]), p["num_carry"], bool(p["reverse"])
        carry = [self._val(v) for v in init]
        carries = [[np.asarray(c) for c in carry]]
        ys: list[list[Any]] = []
        saved, self.record = self.record, False
        try:
            for t in (reversed(range(T)) if rev else range(T)):
                outs = self.closed_block(p["jaxpr"], list(consts) + carry + [self._val(x)[t] for x in xs],
                                         key + ("body",), line, repeat)
                carry = [self._val(v) for v in outs[:ncar]]
                carries.append([np.asarray(c) for c in carry])
                ys.append([self._val(v) for v in outs[ncar:]])
        finally:
            self.record = saved
        if rev:
            ys.reverse()
        avals = [v.aval for v in eqn.outvars[ncar:]]
        stacked = [jnp.stack([y[j] for y in ys]) if ys else jnp.zeros(a.shape, a.dtype)
                   for j, a in enumerate(avals)]
        return carry + stacked, carries

    def while_(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int,
               info: WhileInfo) -> list[Any]:
        p = eqn.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, init = list(ins[:cn]), list(ins[cn:cn + bn]), ins[cn + bn:]
        if info.trips is not None and self.record:
            cins = [self._val(v) for v in init]
            for j, v in enumerate(cins):
                self._keep(key + ("cin", j), v)
            if info.trips:
                self.closed_block(p["cond_jaxpr"], cconsts + cins, key + ("cond",), line, repeat)
            self.closed_block(p["body_jaxpr"], bconsts + cins, key + ("body",), line, repeat)
        evals = info.trips * (_eqn_count(p["body_jaxpr"].jaxpr) + 1) if info.trips is not None else 0
        if info.source == "static" and self.record and evals <= MANUAL_EVALS:
            carry = [self._val(v) for v in init]
            carries = [[np.asarray(c) for c in carry]]
            ok = True
            saved, self.record = self.record, False
            try:
                for _ in range(info.trips):
                    ok &= bool(np.asarray(self.closed_block(p["cond_jaxpr"], cconsts + carry, key + ("cond",),
                                                            line, repeat)[0]))
                    carry = [self._val(v) for v in self.closed_block(p["body_jaxpr"], bconsts + carry,
                                                                     key + ("body",), line, repeat)]
                    carries.append([np.asarray(c) for c in carry])
                ok &= not bool(np.asarray(self.closed_block(p["cond_jaxpr"], cconsts + carry, key + ("cond",),
                                                            line, repeat)[0]))
            finally:
                self.record = saved
            self.carries[key] = carries
            self.trips_ok[key] = ok
            outs = carry
        else:
            outs = self._bind(eqn, ins)
        for j, v in enumerate(outs):
            self._keep((key, j), v)
        return outs

    def cond(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        b = self.choices.get(key, 0)
        return self.closed_block(eqn.params["branches"][b], list(ins[1:]), key + ("br", b), line, repeat)


MANUAL_EVALS = 200_000  # equation evaluations a loop may take to record every iteration


def _eqn_count(jaxpr: Any) -> int:
    return len(jaxpr.eqns)


def _has_cond(jaxpr: Any) -> bool:
    for e in jaxpr.eqns:
        if e.primitive.name == "cond":
            return True
        subs = [sub_jaxpr(e)] if sub_jaxpr(e) else []
        for name in ("body_jaxpr", "cond_jaxpr"):
            if name in e.params:
                subs.append((e.params[name].jaxpr, []))
        if any(_has_cond(j) for j, _ in subs if j is not None):
            return True
    return False


def enable_compile_cache() -> None:
    """Eager evaluation compiles one tiny XLA program per distinct equation (~40 ms each on
    this machine); jax's persistent cache makes a later run load them (~8 ms). Kept under
    ``$SOLAR_CACHE_DIR/jax`` (default ``~/.cache/solar-lsp/jax``) unless the user set a dir."""
    import os

    import jax
    if jax.config.jax_compilation_cache_dir:
        return
    root = os.environ.get("SOLAR_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "solar-lsp")
    try:
        os.makedirs(os.path.join(root, "jax"), exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", os.path.join(root, "jax"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        from jax._src import compilation_cache
        compilation_cache.reset_cache()  # pick the directory up even after earlier compiles
    except Exception:  # a cache is an optimisation only
        pass


@dataclass
class Golden:
    """What the golden run recorded: every IR tensor's value and every loop's carries."""

    values: dict[str, np.ndarray]  # tensor -> jax's value (float64)
    carries: dict[Key, list[list[np.ndarray]]]  # loop -> the carry entering each iteration
    trips_ok: dict[Key, bool]  # static while -> its condition gave that many trips


def golden_run(traced: JaxTraced, lowered: JaxLowered, seed: int = 0) -> Golden:
    """jax's value for every tensor of the IR (helper tensors included), and the carries of
    every loop iteration."""
    enable_compile_cache()
    if traced.real_args is None:
        raise ValueError("the entry has no way to build real arguments")
    args = traced.real_args(seed)
    runner = GoldenRunner(traced, lowered.choices)
    runner.run(args)
    golden: dict[str, np.ndarray] = {}
    for t, key in lowered.tensor_key.items():
        v = runner.values.get(key)
        if v is None:
            continue
        a = np.asarray(v)
        if a.dtype.kind in "biuf" or "float" in a.dtype.name:  # not PRNG keys
            golden[t] = np.asarray(a, dtype=np.float64, order="C")  # converted once
    _derive(lowered.program, lowered, golden)
    return Golden(golden, runner.carries, runner.trips_ok)


def _derive(p: Program, lowered: JaxLowered, golden: dict[str, np.ndarray]) -> None:
    """Values of helper tensors no jaxpr variable names (a squeezed index, index arithmetic):
    computed from their inputs, in program order."""
    by_id = {op.id: op for op in p.ops}
    for op_id in dict.fromkeys(lowered.derived.values()):
        op = by_id.get(op_id)
        if op is None or any(t not in golden for t in op.inputs):
            continue
        arrays = {t: as_float64(golden[t]) for t in op.inputs}
        _run_op(p, op, arrays)
        for t in op.outputs:
            if t in arrays:
                golden[t] = arrays[t]


def _run_op(p: Program, op: Op, arrays: dict[str, np.ndarray]) -> None:
    """Execute one op on float64 arrays (kernels in full, composition steps with numpy)."""
    if op.kind == "compute":
        for k in op.kernels:
            if k.out.tensor not in arrays:
                arrays[k.out.tensor] = np.zeros(p.tensors[k.out.tensor].shape, dtype=np.float64)
            execute.run_kernel(k, arrays)
        return
    if op.kind == "alloc" or op.call is None:
        for t in op.outputs:
            arrays.setdefault(t, np.zeros(p.tensors[t].shape, dtype=np.float64))
        return
    res = execute.apply_call(op.call, [arrays[t] for t in op.inputs])
    res = res if isinstance(res, tuple) else (res,)
    for t, r in zip(op.outputs, res):
        arrays[t] = np.array(np.reshape(r, p.tensors[t].shape), dtype=np.float64)


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
           samples: int = SAMPLES, seed: int = 0) -> Verification:
    """Run the entry's jaxpr on real arrays and check every op (and loop) of its IR."""
    t0 = time.perf_counter()
    p = lowered.program
    refused = over_budget(p, budget_bytes, t0)
    if refused is not None:
        return refused
    try:
        golden = golden_run(traced, lowered, seed)
    except Exception as exc:  # user code raising on real arrays
        line = user_line(exc, traced.path)
        where = f" (line {line})" if line else ""
        return Verification("unverified", f"golden run failed{where}: {type(exc).__name__}: {exc}",
                            seconds=time.perf_counter() - t0)
    rng = np.random.default_rng(seed)
    loop_checks = check_loops(p, lowered, golden, rng, samples)
    derived_ops = set(lowered.derived.values())
    checks: list[OpCheck] = []
    for op in p.ops:
        if op.phase == "optimizer":  # no jaxpr equation: the optimizer has its own check
            continue
        if op.id in loop_checks:
            checks.append(loop_checks[op.id])
        elif op.id in derived_ops and all(t in lowered.derived for t in op.outputs):
            checks.append(OpCheck(op.id, op.line, "verified",
                                  "helper (an index or a view made for the next op); checked "
                                  "through the op that uses it"))
        else:
            with np.errstate(invalid="ignore"):  # inf - inf where a mask wrote -inf
                checks.append(check_op(p, op, golden.values, rng, samples, narrow=True))
    counts = check_jax_counts(traced, lowered)  # counts beside values: docs/sol-model.md
    return with_counts(_summary(checks, lowered, time.perf_counter() - t0), counts)


def _summary(checks: list[OpCheck], lowered: JaxLowered, seconds: float) -> Verification:
    status = "verified"
    n_ok = sum(c.status == 'verified' for c in checks)
    detail = f"{plural(n_ok, 'op')} checked against jax"
    for bad_status in ("mismatch", "unverified"):
        bad = next((c for c in checks if c.status == bad_status), None)
        if bad is not None:
            status = bad_status
            detail = f"{bad.op} (line {bad.line}): {bad.detail}"
            break
    if lowered.unsupported and status == "verified":
        status = "unverified"
        detail = (f"{plural(len(lowered.unsupported), 'equation')} without a lowering; "
                  + (f"{plural(n_ok, 'other op')} verified" if n_ok else "nothing else to verify"))
    return Verification(status, detail, checks, seconds)


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
    v = verify(traced, lowered, budget_bytes, samples, seed)
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
