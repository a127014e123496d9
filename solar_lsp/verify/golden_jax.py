"""The JAX golden run (docs/architecture.md §4), streamed like torch's (verify/stream.py): the
jaxpr is interpreted equation by equation on real CPU arrays (seed-0 inputs, parameters from
the module's real ``init``) with the same :class:`Walker` the lowering used, so every tensor
of the IR meets jax's value for it by key. Each value is handed to a consumer as soon as it
exists (the verifier checks the ops it completes and lets go of the tensors no later op
needs), and each jaxpr variable is dropped after the last equation of its block reading it.

Loop bodies are recorded at their first iteration (the last for a reversed scan), which is
what the body's ops are checked against. The golden run iterates each loop itself and keeps
the carry entering every iteration (verify/check_jax.py replays the body from them). ``cond``
follows the branch the lowering counted, whatever the predicate says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from solar_lsp.frontend.jax.lower import JaxLowered
from solar_lsp.frontend.jax.trace import (
    JaxTraced,
    Key,
    Lit,
    Walker,
    WhileInfo,
    is_literal,
    read,
    sub_jaxpr,
)
from solar_lsp.ir import execute
from solar_lsp.ir.core import Op, Program
from solar_lsp.verify.core import as_float64

MANUAL_EVALS = 200_000  # equation evaluations a loop may take to record every iteration

# (key, value) of every value the golden run records, in its order
Keep = Callable[[Key, Any], None]


class GoldenRunner(Walker):
    """Evaluates each equation with ``primitive.bind`` and hands each recorded output, by
    key, to ``keep``; a block's variables are dropped after their last use."""

    def __init__(self, traced: JaxTraced, choices: dict[Key, int], keep: Keep):
        super().__init__(traced)
        self.choices = choices
        self.keep = keep
        self.carries: dict[Key, list[list[np.ndarray]]] = {}  # loop -> carry entering each iteration
        self.trips_ok: dict[Key, bool] = {}  # static while -> its condition gave that trip count
        self.record = True
        self._drops: dict[int, tuple[Any, dict[int, list[Any]]]] = {}

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
            self.keep(key, v)

    def const(self, value: Any, key: Key) -> Any:
        self._keep(key, value)
        return value

    def block(self, jaxpr: Any, consts: Any, args: Any, key: Key, line: int | None,
              repeat: int) -> list[Any]:
        """``Walker.block``, letting each variable go after the last equation reading it."""
        env: dict[Any, Any] = dict(zip(jaxpr.constvars, consts))
        env.update(zip(jaxpr.invars, args))
        drops = self._drops_of(jaxpr)
        for i, eqn in enumerate(jaxpr.eqns):
            ln = self.line_of(eqn) or line
            outs = self.dispatch(eqn, [read(env, a) for a in eqn.invars], key + (i,), ln, repeat)
            for v, h in zip(eqn.outvars, outs):
                if type(v).__name__ != "DropVar":
                    env[v] = h
            for v in drops.get(i, ()):
                env.pop(v, None)
        return [read(env, a) for a in jaxpr.outvars]

    def _drops_of(self, jaxpr: Any) -> dict[int, list[Any]]:
        got = self._drops.get(id(jaxpr))
        if got is None or got[0] is not jaxpr:
            got = (jaxpr, last_uses(jaxpr))
            self._drops[id(jaxpr)] = got
        return got[1]

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
            del xts, cins
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
            outs = self._iterate_while(eqn, cconsts, bconsts, init, key, line, repeat, info.trips)
        else:
            outs = self._bind(eqn, ins)
        for j, v in enumerate(outs):
            self._keep((key, j), v)
        return outs

    def _iterate_while(self, eqn, cconsts, bconsts, init, key, line, repeat, trips) -> list[Any]:
        """Run a static while one body evaluation at a time, keeping the carry entering every
        iteration and whether the condition stops after ``trips``."""
        p = eqn.params
        carry = [self._val(v) for v in init]
        carries = [[np.asarray(c) for c in carry]]
        ok = True
        saved, self.record = self.record, False
        try:
            for _ in range(trips):
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
        return carry

    def cond(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        b = self.choices.get(key, 0)
        return self.closed_block(eqn.params["branches"][b], list(ins[1:]), key + ("br", b), line, repeat)


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


def last_uses(jaxpr: Any) -> dict[int, list[Any]]:
    """Per equation index, the variables of ``jaxpr`` no later equation (nor the block's
    result) reads: a variable is dropped after its last reader, or right after it is
    written when nothing reads it."""
    last: dict[Any, int] = {}
    for v in list(jaxpr.constvars) + list(jaxpr.invars):
        last[v] = -1
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.invars:
            if not is_literal(a):
                last[a] = i
        for v in eqn.outvars:
            if type(v).__name__ != "DropVar":
                last.setdefault(v, i)
    keep = {a for a in jaxpr.outvars if not is_literal(a)}
    out: dict[int, list[Any]] = {}
    for v, i in last.items():
        if v not in keep and i >= 0:
            out.setdefault(i, []).append(v)
    return out


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


class KeyOrder(Walker):
    """The keys :class:`GoldenRunner` records, in its order, found without computing
    anything (the golden run's steps, for the stream's schedule)."""

    def __init__(self, traced: JaxTraced, choices: dict[Key, int]):
        super().__init__(traced)
        self.choices = choices
        self.keys: list[Key] = []

    def run(self, args: Any) -> list[Any]:
        self.keys += [("in", i) for i in range(len(args))]
        return super().run(args)

    def const(self, value: Any, key: Key) -> Any:
        self.keys.append(key)
        return None

    def leaf(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        self.keys += [(key, j) for j in range(len(eqn.outvars))]
        return [None] * len(eqn.outvars)

    def scan(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        p = eqn.params
        nc, ncar = p["num_consts"], p["num_carry"]
        if int(p["length"]):
            nx = len(ins) - nc - ncar
            self.keys += [key + ("x", j) for j in range(nx)] + [key + ("cin", j) for j in range(ncar)]
            self.closed_block(p["jaxpr"], list(ins[:nc]) + [None] * (ncar + nx), key + ("body",), line, repeat)
        return self.leaf(eqn, ins, key, line, repeat)

    def while_(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int,
               info: WhileInfo) -> list[Any]:
        p = eqn.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cins = [None] * (len(ins) - cn - bn)
        if info.trips is not None:
            self.keys += [key + ("cin", j) for j in range(len(cins))]
            if info.trips:
                self.closed_block(p["cond_jaxpr"], list(ins[:cn]) + cins, key + ("cond",), line, repeat)
            self.closed_block(p["body_jaxpr"], list(ins[cn:cn + bn]) + cins, key + ("body",), line, repeat)
        return self.leaf(eqn, ins, key, line, repeat)

    def cond(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        b = self.choices.get(key, 0)
        return self.closed_block(eqn.params["branches"][b], list(ins[1:]), key + ("br", b), line, repeat)


def run_order(traced: JaxTraced, lowered: JaxLowered) -> list[str]:
    """The golden run's steps in order: each recorded key, as ``str(key)``."""
    walk = KeyOrder(traced, lowered.choices)
    walk.run([None] * len(traced.closed.jaxpr.invars))
    return [str(k) for k in walk.keys]


def tensor_steps(lowered: JaxLowered, order: list[str]) -> dict[str, str]:
    """The step producing each IR tensor: its key's; a helper tensor no key names (computed
    from other tensors, ``lowered.derived``) the latest of its inputs' steps."""
    pos = {s: i for i, s in enumerate(order)}
    step = {t: str(k) for t, k in lowered.tensor_key.items()}
    by_id = {op.id: op for op in lowered.program.ops}
    for op_id in dict.fromkeys(lowered.derived.values()):
        op = by_id.get(op_id)
        if op is None:
            continue
        at = max((pos.get(step.get(t, ""), len(order)) for t in op.inputs), default=0)
        for t in op.outputs:
            if t in lowered.derived and at < len(order):
                step[t] = order[at]
    return step


@dataclass
class Golden:
    """What the golden run recorded: the IR tensors' values still held at its end (all of
    them when nothing was let go) and every loop's carries."""

    values: dict[str, np.ndarray]  # tensor -> jax's value (as a numpy array, its own dtype)
    carries: dict[Key, list[list[np.ndarray]]]  # loop -> the carry entering each iteration
    trips_ok: dict[Key, bool]  # static while -> its condition gave that many trips


def scaled_args(args: list[Any], n_params: int, scale: float) -> list[Any]:
    """The entry's arguments with every float input (not the parameters) times ``scale``."""
    import jax.numpy as jnp
    return list(args[:n_params]) + [a * jnp.asarray(scale, dtype=a.dtype)
                                    if jnp.issubdtype(jnp.asarray(a).dtype, jnp.floating) else a
                                    for a in args[n_params:]]


def golden_run(traced: JaxTraced, lowered: JaxLowered, seed: int = 0,
               consume: Callable[[str, dict[str, np.ndarray]], None] | None = None,
               scale: float = 1.0, args: list[Any] | None = None) -> Golden:
    """jax's value for every tensor of the IR (helper tensors included), and the carries of
    every loop iteration. ``consume``, when given, is called with each step (``str(key)``)
    and the values so far as soon as that step's value exists, and may drop some;
    ``scale`` multiplies the entry's float inputs; ``args``: the entry's real arguments when
    already built (``traced.real_args(seed)``)."""
    enable_compile_cache()
    if args is None:
        if traced.real_args is None:
            raise ValueError("the entry has no way to build real arguments")
        args = traced.real_args(seed)
    if scale != 1.0:
        args = scaled_args(args, traced.n_params, scale)
    tensors_of: dict[Key, list[str]] = {}
    for t, key in lowered.tensor_key.items():
        tensors_of.setdefault(key, []).append(t)
    golden: dict[str, np.ndarray] = {}
    derive = _Deriver(lowered, golden)

    def keep(key: Key, v: Any) -> None:
        names = tensors_of.get(key)
        if names:
            a = np.asarray(v)
            if a.dtype.kind in "biuf" or "float" in a.dtype.name:  # not PRNG keys
                for t in names:
                    golden[t] = a
                derive.arrived(names)
        if consume is not None:
            consume(str(key), golden)

    runner = GoldenRunner(traced, lowered.choices, keep)
    runner.run(args)
    return Golden(golden, runner.carries, runner.trips_ok)


class _Deriver:
    """Values of helper tensors no jaxpr variable names (a squeezed index, index arithmetic),
    each computed from its inputs as soon as they all exist."""

    def __init__(self, lowered: JaxLowered, golden: dict[str, np.ndarray]):
        self.p = lowered.program
        self.golden = golden
        by_id = {op.id: op for op in self.p.ops}
        self.missing: dict[str, set[str]] = {}
        self.waiting: dict[str, list[Op]] = {}
        for op_id in dict.fromkeys(lowered.derived.values()):
            op = by_id.get(op_id)
            if op is None:
                continue
            self.missing[op.id] = set(op.inputs)
            for t in set(op.inputs):
                self.waiting.setdefault(t, []).append(op)
            if not op.inputs:
                self._run(op)

    def arrived(self, names: list[str]) -> None:
        """Tensors ``names`` now have values: compute every helper they complete."""
        for t in names:
            for op in self.waiting.pop(t, ()):
                left = self.missing[op.id]
                left.discard(t)
                if not left:
                    self._run(op)

    def _run(self, op: Op) -> None:
        if any(t not in self.golden for t in op.inputs):
            return
        arrays = {t: as_float64(self.golden[t]) for t in op.inputs}
        run_op(self.p, op, arrays)
        done = [t for t in op.outputs if t in arrays]
        for t in done:
            self.golden[t] = arrays[t]
        self.arrived(done)


def run_op(p: Program, op: Op, arrays: dict[str, np.ndarray]) -> None:
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
