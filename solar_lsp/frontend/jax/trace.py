"""Trace a discovered JAX entry with ``jax.make_jaxpr`` on ShapeDtypeStructs (docs/architecture.md §2).

Entries: a pragma'd function, a Flax ``linen`` or ``nnx`` module class (parameters come from
``init`` under ``jax.eval_shape``, so nothing is allocated), or the ``Model`` convention.
The traced function takes the parameter leaves first, then the inputs, so the jaxpr's
invars are ``params + inputs``. Each equation maps to the innermost frame of its
``source_info`` that lies in the analyzed file; an equation inlined from a call-like
primitive without such a frame takes the line of the equation that called it.

:class:`Walker` is the one traversal both the lowering and the golden run use: it inlines
call-like primitives (``jit``/``pjit``, ``custom_jvp_call``, ``custom_vjp_call``, ``remat``),
hands ``scan``, ``while`` and ``cond`` to hooks, and gives every equation the same key in
both passes, so a tensor of the IR and its golden value meet by key.
"""

from __future__ import annotations

import inspect
import os
import re
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solar_lsp.frontend.errors import EntryError, user_line
from solar_lsp.source.discover import Entry, TensorSpec

# Call-like primitives whose body is inlined (their cost is their body's cost).
INLINE = frozenset({"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                    "custom_vjp_call_jaxpr", "remat", "remat2", "checkpoint", "named_call",
                    "custom_lin"})
_SUB_PARAMS = ("jaxpr", "call_jaxpr", "fun_jaxpr")
# `# solar: trips=N` on (or just above) the line of a while loop with a dynamic trip count.
_TRIPS_RE = re.compile(r"#\s*solar\s*:\s*trips\s*=\s*(\d+)")

Key = tuple


@dataclass(frozen=True)
class Lit:
    """A literal operand (jaxpr ``Literal``: always a scalar)."""

    value: Any
    dtype: str


@dataclass
class JaxTraced:
    """A traced entry: its closed jaxpr, how its invars split into params and inputs."""

    entry: Entry
    path: str
    closed: Any  # jax.core.ClosedJaxpr
    n_params: int
    param_names: list[str]
    input_names: list[str]
    input_specs: list[TensorSpec]
    trips: dict[int, int] = field(default_factory=dict)  # line -> trip-count pragma
    real_args: Callable[[int], list[Any]] | None = None  # seed -> param leaves + inputs


def dtype_name(dt: Any) -> str:
    """The numpy name of a dtype; an extended dtype numpy has no type for (a PRNG key's
    ``key<fry>``) keeps JAX's name, which the lowering maps to an opaque value."""
    try:
        return str(np.dtype(dt))
    except TypeError:
        return str(dt)


# ------------------------------------------------------------------ building the entry

def _spec_struct(spec: TensorSpec) -> Any:
    import jax
    import jax.numpy as jnp
    return jax.ShapeDtypeStruct(tuple(spec.shape), jnp.dtype(spec.dtype))


def _random_input(spec: TensorSpec, rng: np.random.Generator) -> Any:
    """Seeded inputs for the golden run (the torch path's rules: normal floats, ints in [0, 8))."""
    import jax.numpy as jnp
    dt = np.dtype(jnp.dtype(spec.dtype))
    if dt == np.bool_:
        return jnp.asarray(rng.random(spec.shape) > 0.5)
    if np.issubdtype(dt, np.integer):
        return jnp.asarray(rng.integers(0, 8, size=spec.shape), dtype=dt)
    return jnp.asarray(rng.standard_normal(spec.shape), dtype=dt)


def _flax_kind(obj: Any) -> str | None:
    if not isinstance(obj, type):
        return None
    try:
        import flax.linen as nn
        if issubclass(obj, nn.Module):
            return "linen"
    except ImportError:  # pragma: no cover - flax is optional at runtime
        pass
    try:
        from flax import nnx
        if issubclass(obj, nnx.Module):
            return "nnx"
    except ImportError:  # pragma: no cover
        pass
    return None


def _with_rngs(cls: type, kwargs: dict, seed: int) -> dict:
    """nnx constructors take ``rngs``: pass ``nnx.Rngs(seed)`` unless the user did."""
    from flax import nnx
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return kwargs
    if "rngs" in params and "rngs" not in kwargs:
        return {**kwargs, "rngs": nnx.Rngs(seed)}
    return kwargs


class _Built:
    """What tracing and the golden run need: a flat function and its argument values."""

    def __init__(self, fn: Callable, abstract: list[Any], real: Callable[[int], list[Any]],
                 n_params: int, param_names: list[str], input_names: list[str],
                 specs: list[TensorSpec], trainable: list[bool] | None = None):
        self.fn, self.abstract, self.real = fn, abstract, real
        self.n_params, self.param_names = n_params, param_names
        self.input_names, self.specs = input_names, specs
        # per parameter leaf: whether a training step updates it (Flax ``params`` /
        # ``nnx.Param``; batch statistics and other collections are not trained)
        self.trainable = trainable if trainable is not None else [True] * n_params


def build(module: types.ModuleType, entry: Entry, path: str) -> _Built:
    """Make the flat function ``f(*param_leaves, *inputs)`` of an entry and its abstract args."""
    import jax
    obj = getattr(module, entry.name, None)
    if obj is None:
        raise EntryError("build", f"{entry.name} is not defined after importing the file")
    try:
        if entry.kind == "model":
            init = list(getattr(module, "get_init_inputs", lambda: [])())
            given = list(module.get_inputs())
            specs = [TensorSpec(f"x{i}", dtype_name(a.dtype), tuple(a.shape)) for i, a in enumerate(given)]
            statics: dict[str, Any] = {}
            init_args, init_kwargs = tuple(init), {}
        else:
            specs = [s for s in entry.inputs or () if not s.is_scalar]
            statics = {s.name: s.scalar for s in entry.inputs or () if s not in specs}
            init_args, init_kwargs = tuple(entry.init_args), dict(entry.init_kwargs)
            given = None
        names = [s.name for s in specs]
        structs = [_spec_struct(s) for s in specs] if given is None else \
            [jax.ShapeDtypeStruct(tuple(a.shape), a.dtype) for a in given]  # keeps PRNG key dtypes

        def real_inputs(seed: int) -> list[Any]:
            if given is not None:
                return [jax.numpy.asarray(a) for a in given]
            rng = np.random.default_rng(seed)
            return [_random_input(s, rng) for s in specs]

        def call(target: Callable, xs: Sequence[Any]) -> Any:
            if entry.kind == "model":
                return target(*xs)
            return target(**dict(zip(names, xs)), **statics)

        flax = _flax_kind(obj)
        if flax == "linen":
            return _build_linen(obj, init_args, init_kwargs, structs, real_inputs, call, names, specs)
        if flax == "nnx":
            return _build_nnx(obj, init_args, init_kwargs, structs, real_inputs, call, names, specs)
        target = obj(*init_args, **init_kwargs) if isinstance(obj, type) else obj

        def fn(*xs: Any) -> list[Any]:
            return jax.tree_util.tree_leaves(call(target, xs))
        return _Built(fn, structs, real_inputs, 0, [], names, specs)
    except EntryError:
        raise
    except Exception as exc:
        raise EntryError("build", f"building the entry failed: {type(exc).__name__}: {exc}",
                         user_line(exc, path)) from exc


def _build_linen(cls, init_args, init_kwargs, structs, real_inputs, call, names, specs) -> _Built:
    import jax
    model = cls(*init_args, **init_kwargs)
    key = jax.random.PRNGKey(0)

    def init(k, *xs):
        return call(lambda *a, **kw: model.init(k, *a, **kw), xs)
    variables = jax.eval_shape(init, key, *structs)
    paths, treedef = jax.tree_util.tree_flatten_with_path(variables)
    leaves = [leaf for _, leaf in paths]
    n = len(leaves)

    def fn(*xs: Any) -> list[Any]:
        v = jax.tree_util.tree_unflatten(treedef, xs[:n])
        return jax.tree_util.tree_leaves(call(lambda *a, **kw: model.apply(v, *a, **kw), xs[n:]))

    def real(seed: int) -> list[Any]:
        ins = real_inputs(seed)
        v = init(jax.random.PRNGKey(0), *ins)
        return list(jax.tree_util.tree_leaves(v)) + ins
    names_p = [_keystr(p) for p, _ in paths]
    trainable = [bool(p) and getattr(p[0], "key", None) == "params" for p, _ in paths]
    return _Built(fn, leaves + structs, real, n, names_p, names, specs, trainable)


def _build_nnx(cls, init_args, init_kwargs, structs, real_inputs, call, names, specs) -> _Built:
    import jax
    from flax import nnx
    abstract = nnx.eval_shape(lambda: cls(*init_args, **_with_rngs(cls, init_kwargs, 0)))
    graphdef, state = nnx.split(abstract)
    paths, treedef = jax.tree_util.tree_flatten_with_path(state)
    n = len(paths)

    def fn(*xs: Any) -> list[Any]:
        m = nnx.merge(graphdef, jax.tree_util.tree_unflatten(treedef, xs[:n]))
        return jax.tree_util.tree_leaves(call(m, xs[n:]))

    def real(seed: int) -> list[Any]:
        m = cls(*init_args, **_with_rngs(cls, init_kwargs, 0))
        _, st = nnx.split(m)
        return list(jax.tree_util.tree_leaves(st)) + real_inputs(seed)
    variables = jax.tree_util.tree_leaves(state, is_leaf=lambda x: isinstance(x, nnx.Variable))
    trainable = [isinstance(v, nnx.Param) for v in variables] if len(variables) == n else None
    return _Built(fn, [leaf for _, leaf in paths] + structs, real, n,
                  [_keystr(p) for p, _ in paths], names, specs, trainable)


def _keystr(path: Any) -> str:
    import jax
    s = jax.tree_util.keystr(path)
    return re.sub(r"\['([^']*)'\]", r"/\1", s).lstrip("/").replace(".value", "") or "param"


def trip_pragmas(path: str) -> dict[int, int]:
    """``# solar: trips=N`` comments of the file, by line."""
    out: dict[int, int] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for i, text in enumerate(f, 1):
                m = _TRIPS_RE.search(text)
                if m:
                    out[i] = int(m.group(1))
    except OSError:
        pass
    return out


def trace(module: types.ModuleType, entry: Entry, path: str) -> JaxTraced:
    """``make_jaxpr`` of the entry on ShapeDtypeStructs: no array is allocated."""
    import jax
    path = os.path.realpath(path)
    built = build(module, entry, path)
    try:
        closed = jax.make_jaxpr(built.fn)(*built.abstract)
    except Exception as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        hint = ""
        if "Tracer" in type(exc).__name__ or "concrete" in str(exc).lower():
            hint = (" (Python control flow depends on array values; use lax.cond / lax.while_loop, "
                    "or make it static)")
        raise EntryError("trace", f"jax.make_jaxpr could not trace {entry.name}: "
                         f"{type(exc).__name__}: {msg}{hint}", user_line(exc, path)) from exc
    return JaxTraced(entry=entry, path=path, closed=closed, n_params=built.n_params,
                     param_names=built.param_names, input_names=built.input_names,
                     input_specs=built.specs, trips=trip_pragmas(path), real_args=built.real)


# ------------------------------------------------------------------ lines

class LineMap:
    """Line of an equation in the analyzed file: the innermost frame there."""

    def __init__(self, path: str):
        self.path = os.path.realpath(path)
        self._same: dict[str, bool] = {}

    def _in_file(self, name: str) -> bool:
        hit = self._same.get(name)
        if hit is None:
            hit = name == self.path or os.path.realpath(name) == self.path
            self._same[name] = hit
        return hit

    def __call__(self, eqn: Any) -> int | None:
        tb = getattr(eqn.source_info, "traceback", None)
        if tb is None:
            return None
        for fr in tb.frames:
            if self._in_file(fr.file_name):
                return int(fr.line_num)
        return None


# ------------------------------------------------------------------ the shared traversal

def sub_jaxpr(eqn: Any) -> tuple[Any, list[Any]] | None:
    """(open jaxpr, consts) of a call-like equation."""
    for p in _SUB_PARAMS:
        j = eqn.params.get(p)
        if j is None:
            continue
        if hasattr(j, "jaxpr") and hasattr(j, "consts"):
            return j.jaxpr, list(j.consts)
        if hasattr(j, "eqns"):
            return j, []
    return None


@dataclass
class WhileInfo:
    """A while loop's trip count and where it came from (``static`` or ``pragma``)."""

    trips: int | None
    source: str
    reason: str = ""


def static_trips(eqn: Any, ins: Sequence[Any]) -> int | None:
    """Trip count of ``while i < N: i += 1`` loops whose start and bound are literals.

    The pattern is what ``fori_loop`` with static bounds but traced as a while, and
    hand-written counters, produce: cond ``lt c[k] N`` (N a literal, or a carry passed
    through unchanged whose initial value is a literal) and body ``c[k] + 1``."""
    p = eqn.params
    cj, bj = p["cond_jaxpr"].jaxpr, p["body_jaxpr"].jaxpr
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    init = list(ins[nc + nb:])
    if len(cj.eqns) != 1 or cj.eqns[0].primitive.name != "lt":
        return None
    cvars = list(cj.invars[nc:])
    a, b = cj.eqns[0].invars
    if a not in cvars:
        return None
    k = cvars.index(a)

    def literal_value(atom: Any) -> int | None:
        if is_literal(atom):
            return int(atom.val)
        if atom in cvars:
            j = cvars.index(atom)
            bvars = list(bj.invars[nb:])
            if j < len(bj.outvars) and bj.outvars[j] is bvars[j] and isinstance(init[j], Lit):
                return int(init[j].value)
        return None
    bound = literal_value(b)
    if bound is None or not isinstance(init[k], Lit):
        return None
    start = int(init[k].value)
    bvars = list(bj.invars[nb:])
    out = bj.outvars[k]
    step_ok = any(e.primitive.name == "add" and out in e.outvars and bvars[k] in e.invars
                  and any(is_literal(x) and int(x.val) == 1 for x in e.invars) for e in bj.eqns)
    if not step_ok:
        return None
    return max(0, bound - start)


class Walker:
    """Walk a closed jaxpr: inline calls, hand loops/conds/leaves to the subclass.

    Handles are whatever the subclass binds jaxpr variables to (tensor names when
    lowering, arrays in the golden run); literals arrive as :class:`Lit`."""

    def __init__(self, traced: JaxTraced):
        self.traced = traced
        self.line_of = LineMap(traced.path)

    # -- hooks
    def const(self, value: Any, key: Key) -> Any:
        raise NotImplementedError

    def leaf(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        raise NotImplementedError

    def scan(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        raise NotImplementedError

    def while_(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int,
               info: WhileInfo) -> list[Any]:
        raise NotImplementedError

    def cond(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        raise NotImplementedError

    # -- traversal
    def run(self, args: Sequence[Any]) -> list[Any]:
        closed = self.traced.closed
        consts = [self.const(c, ("const", i)) for i, c in enumerate(closed.consts)]
        return self.block(closed.jaxpr, consts, list(args), (), None, 1)

    def closed_block(self, closed: Any, args: Sequence[Any], key: Key, line: int | None,
                     repeat: int) -> list[Any]:
        consts = [self.const(c, key + ("c", i)) for i, c in enumerate(closed.consts)]
        return self.block(closed.jaxpr, consts, list(args), key, line, repeat)

    def block(self, jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], key: Key,
              line: int | None, repeat: int) -> list[Any]:
        env: dict[Any, Any] = {}
        for v, h in zip(jaxpr.constvars, consts):
            env[v] = h
        for v, h in zip(jaxpr.invars, args):
            env[v] = h
        for i, eqn in enumerate(jaxpr.eqns):
            ln = self.line_of(eqn) or line
            ins = [read(env, a) for a in eqn.invars]
            outs = self.dispatch(eqn, ins, key + (i,), ln, repeat)
            for v, h in zip(eqn.outvars, outs):
                if type(v).__name__ != "DropVar":
                    env[v] = h
        return [read(env, a) for a in jaxpr.outvars]

    def dispatch(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        name = eqn.primitive.name
        if name in INLINE:
            sub = sub_jaxpr(eqn)
            if sub is not None:
                jaxpr, consts = sub
                cs = [self.const(c, key + ("c", i)) for i, c in enumerate(consts)]
                return self.block(jaxpr, cs, ins, key, line, repeat)
        if name == "scan":
            return self.scan(eqn, ins, key, line, repeat)
        if name == "while":
            return self.while_(eqn, ins, key, line, repeat, self.while_info(eqn, ins, line))
        if name == "cond":
            return self.cond(eqn, ins, key, line, repeat)
        return self.leaf(eqn, ins, key, line, repeat)

    def while_info(self, eqn: Any, ins: Sequence[Any], line: int | None) -> WhileInfo:
        n = static_trips(eqn, ins)
        if n is not None:
            return WhileInfo(n, "static")
        if line is not None:
            for ln in (line, line - 1):
                if ln in self.traced.trips:
                    return WhileInfo(self.traced.trips[ln], "pragma")
        where = f"line {line}" if line is not None else "the loop's line"
        return WhileInfo(None, "dynamic",
                         f"while loop with a data-dependent trip count: add `# solar: trips=N` "
                         f"on {where} (N = the smallest count you care about, so the bound stays "
                         f"a lower bound)")


def is_literal(atom: Any) -> bool:
    """Whether a jaxpr atom is a ``Literal`` (an inline constant) rather than a variable."""
    return type(atom).__name__ == "Literal"


def read(env: dict, atom: Any) -> Any:
    """The handle of a jaxpr atom: its bound value, or a :class:`Lit` for a literal."""
    if is_literal(atom):
        return Lit(_py(atom.val), dtype_name(atom.aval.dtype))
    return env[atom]


def _py(v: Any) -> Any:
    a = np.asarray(v)
    return a.item() if a.shape == () else a
