"""Execute IR kernels with numba (docs/architecture.md §4), and programs op by op.

The source of each kernel comes from :mod:`solar_lsp.ir.codegen` (shape-independent: one
compiled function serves every shape of the same structure).

Compiled functions are cached in-process (``_MODULES``, keyed by the generated source)
and on disk: the source is written to ``$SOLAR_CACHE_DIR`` (default
``~/.cache/solar-lsp/numba``) under a hash of itself and imported as a module whose
functions use ``@numba.njit(cache=True)``, so numba's own cache serves later processes.

If numba cannot compile a module, the same source is executed as plain Python with
numpy float64 scalars (IEEE semantics, slow but identical); the reason is logged and
recorded in ``FALLBACKS``.

Tiered execution: numba's first use in a process costs 0.7-1.2 s (its import, the CPU
target's set-up, loading a cached kernel), while the same source interpreted costs about
1-3 us per loop iteration. So a process that has not used numba yet interprets kernels
until ``INTERPRET_WORK`` loop iterations are spent, and numba takes over from the first
call that would go past it (or from the start, when a verifier's :func:`plan` says its
checks will not fit) (docs/architecture.md §4). A small check in a cold ``solar
analyze`` never imports numba; warm processes call :func:`warm_up` and use numba throughout.

All arithmetic is float64.  Loads that cannot be proven in bounds (from the loop
extents and the guards) get explicit bounds checks that raise ``IndexError``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import math
import os
import sys
import tempfile
import time
import types
from collections.abc import Callable

import numpy as np

from solar_lsp.ir import calls_index
from solar_lsp.ir.codegen import KernelPlan, in_bounds, kernel_plan
from solar_lsp.ir.core import Kernel, Program, loads

log = logging.getLogger(__name__)

# In-process cache: generated source -> imported module (numba dispatchers inside).
_MODULES: dict[str, types.ModuleType] = {}
# Generated source -> the same source as a pure-Python module (interpreted tier, fallbacks).
_PY_MODULES: dict[str, types.ModuleType] = {}
# Sources numba failed to compile: always interpreted from then on.
_NUMBA_FAILED: set[str] = set()
# (kernel name, reason) for every numba fallback taken in this process.
FALLBACKS: list[tuple[str, str]] = []
# Counters: modules created, first calls (compile or disk-cache load) and their seconds.
STATS: dict[str, float] = {"modules": 0, "first_calls": 0, "first_call_s": 0.0, "fallbacks": 0}
# Set to True to skip numba entirely (debugging, tests of the fallback path).
FORCE_INTERPRETER = False
# "tiered" (the default: interpret until INTERPRET_WORK, then numba) or "numba" (numba for
# every call: tests of the numba path); $SOLAR_EXECUTOR sets it for a process.
EXECUTOR = os.environ.get("SOLAR_EXECUTOR", "tiered")
INTERPRET_WORK = 3e5  # loop iterations: about 0.3-0.9 s interpreted, about numba's start-up
_tier = {"interpreted": 0.0, "numba_live": False}


# ---------------------------------------------------------------- module loading


def _cache_dir() -> str:
    d = os.environ.get("SOLAR_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "solar-lsp", "numba"
    )
    try:
        os.makedirs(d, exist_ok=True)
        if os.access(d, os.W_OK):
            return d
    except OSError:
        pass
    d = os.path.join(tempfile.gettempdir(), f"solar-lsp-numba-{os.getuid()}")
    os.makedirs(d, exist_ok=True)
    return d


def _load_module(source: str) -> types.ModuleType:
    mod = _MODULES.get(source)
    if mod is not None:
        return mod
    h = hashlib.sha256(source.encode()).hexdigest()[:24]
    name = f"solar_kernel_{h}"
    path = os.path.join(_cache_dir(), name + ".py")
    try:
        with open(path, encoding="utf-8") as f:
            same = f.read() == source
    except OSError:
        same = False
    if not same:  # write atomically; an unchanged file keeps numba's cache valid
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    _tier["numba_live"] = True
    _MODULES[source] = mod
    STATS["modules"] += 1
    return mod


class _NoNumba:
    @staticmethod
    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f


def _python_module(source: str) -> types.ModuleType:
    mod = _PY_MODULES.get(source)
    if mod is None:
        mod = types.ModuleType("solar_kernel_python")
        mod.__dict__["numba"] = _NoNumba
        exec(compile(source.replace("import numba\n", "", 1), "<solar-kernel>", "exec"), mod.__dict__)
        _PY_MODULES[source] = mod
    return mod


def warm_up() -> None:
    """Import numba and set up its CPU target once (about 0.7 s), so that a long-lived
    process (the server's worker, ``solar coverage``) pays it at start and runs every kernel
    compiled."""
    import numba

    numba.njit(cache=False)(_warm_kernel)(1.0)
    _tier["numba_live"] = True


def _warm_kernel(x: float) -> float:
    return x + 1.0


def plan(work: float) -> None:
    """A verifier says how many loop iterations it is about to run: if they will not all fit
    what is left of ``INTERPRET_WORK``, numba runs every call from the first one, rather than
    after an interpreted start that would be wasted."""
    if EXECUTOR == "tiered" and not _tier["numba_live"] and _tier["interpreted"] + work > INTERPRET_WORK:
        _tier["interpreted"] = math.inf


def _interpret(work: float) -> bool:
    """Whether this call runs interpreted: before numba's first use in the process, while
    the interpreted loop iterations stay under ``INTERPRET_WORK``."""
    if EXECUTOR != "tiered" or _tier["numba_live"]:
        return False
    if _tier["interpreted"] + work > INTERPRET_WORK:
        return False
    _tier["interpreted"] += work
    return True


def _work(k: Kernel, points: int | None = None) -> float:
    """Loop iterations of one call: every loop in full, or the reduction loops per point."""
    if points is None:
        return float(math.prod(n for _, n in k.loops))
    return float(points * math.prod(n for v, n in k.loops if v in k.reduce_vars))


def _invoke(k: Kernel, plan: KernelPlan, fn: str, args: tuple, out: np.ndarray,
            work: float = math.inf) -> None:
    if FORCE_INTERPRETER or plan.source in _NUMBA_FAILED or _interpret(work):
        with np.errstate(all="ignore"):
            getattr(_python_module(plan.source), fn)(*args)
        return
    try:
        disp: Callable = getattr(_load_module(plan.source), fn)
    except Exception as exc:  # noqa: BLE001 - never crash: fall back below
        _fallback(k, plan, f"module load failed: {type(exc).__name__}: {exc}")
        _invoke(k, plan, fn, args, out)
        return
    first = not getattr(disp, "overloads", {1: 1})
    if not first:
        disp(*args)
        return
    saved = out.copy()
    t0 = time.perf_counter()
    try:
        disp(*args)
    except IndexError:
        raise
    except Exception as exc:  # noqa: BLE001 - numba typing/lowering errors and the like
        out[...] = saved
        _fallback(k, plan, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        _invoke(k, plan, fn, args, out)
        return
    STATS["first_calls"] += 1
    STATS["first_call_s"] += time.perf_counter() - t0


def _fallback(k: Kernel, plan: KernelPlan, reason: str) -> None:
    FALLBACKS.append((k.name, reason))
    STATS["fallbacks"] += 1
    log.warning("numba could not compile kernel %s, using the Python interpreter: %s", k.name, reason)
    _NUMBA_FAILED.add(plan.source)


# ---------------------------------------------------------------- public API


def _f64(a) -> np.ndarray:
    if hasattr(a, "detach"):  # torch tensor
        a = a.detach().cpu().double().numpy()
    # np.ascontiguousarray would turn a 0-d array into 1-d
    return np.array(a, dtype=np.float64, order="C", copy=None)


def _native(a) -> bool:
    """A float32 input the caller chose to pass as it is (verify/core.kernel_input: one too
    large to copy): the kernel converts each value it loads, exactly, so its results are the
    same as from a float64 copy."""
    return isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.c_contiguous


def _prepare(k: Kernel, arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray] | None = None):
    """Float64 C-contiguous arrays (0-d made 1-d; a C-contiguous float32 input is passed
    as it is, ``_native``), the plan, and the out array to copy back.
    With ``errors``, the arguments of ``run_err``/``sample``: the output's error and magnitude
    arrays follow it, and the error arrays of the inputs found in ``errors`` follow the inputs."""
    if k.out.tensor not in arrays:
        raise KeyError(f"kernel {k.name}: output tensor {k.out.tensor!r} not allocated")
    target = arrays[k.out.tensor]
    out = target if (isinstance(target, np.ndarray) and target.dtype == np.float64
                     and target.flags.c_contiguous and target.flags.writeable) else _f64(target)
    conv: dict[str, np.ndarray] = {k.out.tensor: out}
    for ld in loads(k.expr):
        if ld.tensor not in conv:
            if ld.tensor not in arrays:
                raise KeyError(f"kernel {k.name}: input tensor {ld.tensor!r} missing")
            a = arrays[ld.tensor]
            conv[ld.tensor] = a if _native(a) else _f64(a)
    for ld in [k.out, *loads(k.expr)]:
        if conv[ld.tensor].ndim != len(ld.index):
            raise ValueError(
                f"kernel {k.name}: {ld.tensor} has rank {conv[ld.tensor].ndim}, "
                f"indexed with {len(ld.index)} subscripts"
            )
    checked = not in_bounds(k, {n: a.shape for n, a in conv.items()})
    native = frozenset(t for t, a in conv.items() if t != k.out.tensor and a.dtype == np.float32)
    flagged = frozenset(t for t in conv if errors is not None and t in errors and t != k.out.tensor) - native
    plan = kernel_plan(k, checked, flagged, native)
    flat = {n: (a.reshape(1) if a.ndim == 0 else a) for n, a in conv.items()}
    params = (np.array(plan.ext, dtype=np.int64), np.array(plan.ip, dtype=np.int64),
              np.array(plan.cv, dtype=np.float64))
    ins = tuple(flat[n] for n in plan.tensors)
    if errors is None:
        return plan, (flat[k.out.tensor], *ins, *params), out, target
    eo, mo = (np.ascontiguousarray(errors[n], dtype=np.float64).reshape(flat[k.out.tensor].shape)
              for n in (k.out.tensor, k.out.tensor + "#mag"))
    eins = tuple(np.ascontiguousarray(errors[n], dtype=np.float64).reshape(flat[n].shape)
                 for n in plan.flagged)
    return plan, (flat[k.out.tensor], eo, mo, *ins, *eins, *params), out, target


# ep: growth of a sum's rounding, unit roundoff, largest finite and smallest normal value of
# the accumulator (the latter in units of the roundoff), error of the kernel's constants
_NO_ERR = np.array([0.0, 2.0**-53, np.inf, 0.0, 0.0])
_FLOAT32_MAX = 3.4028234663852886e38


def _ep(k: Kernel, unit: float, top: float | None, slack: float = 0.0) -> np.ndarray:
    if top is None:
        top = np.inf if unit < 2.0**-24 else _FLOAT32_MAX
    tiny = 2.0**-1022 if unit < 2.0**-24 else 2.0**-126  # float64's, else float32's exponent range
    if top == 65504.0:
        tiny = 2.0**-14  # float16 computing in float16
    return np.array([growth(k), unit, top, tiny / unit, slack])


def run_kernel(k: Kernel, arrays: dict[str, np.ndarray]) -> None:
    """Execute ``k`` in full, writing into ``arrays[k.out.tensor]``."""
    plan, args, out, target = _prepare(k, arrays)
    _invoke(k, plan, "run", (*args, _NO_ERR), args[0], _work(k))
    _copy_back(k, arrays, out, target)


def _copy_back(k: Kernel, arrays: dict[str, np.ndarray], out: np.ndarray, target) -> None:
    if out is not target:
        if isinstance(target, np.ndarray):
            target[...] = out
        else:
            arrays[k.out.tensor] = out


def run_kernel_err(k: Kernel, arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray],
                   unit: float, top: float | None = None, slack: float = 0.0) -> None:
    """Execute ``k`` in full, and keep in ``errors[k.out.tensor]`` a bound on the rounding
    error a framework computing in roundoff ``unit`` (largest finite value ``top``: float32's
    unless ``unit`` is float64's) makes at each output point, in units of ``unit`` (see
    docs/sol-model.md, Verification). ``errors`` holds the bounds of inputs that earlier
    kernels computed; the others are exact. ``slack``: the absolute error of every constant
    of the kernel, in units of ``unit`` (weights the framework computes from coordinates)."""
    o = k.out.tensor
    shape = np.shape(arrays[o])
    errors.setdefault(o, np.zeros(shape))
    # a reduction onto kept values sums their magnitude as well
    errors[o + "#mag"] = (np.abs(_f64(arrays[o])) if k.init == "keep" or k.op == "=" else np.zeros(shape))
    plan, args, out, target = _prepare(k, arrays, errors)
    ep = _ep(k, unit, top, slack)
    _invoke(k, plan, "run_err", (*args, ep), args[0], _work(k))
    _copy_back(k, arrays, out, target)
    eo, mo = args[1].reshape(shape), args[2].reshape(shape)
    if k.op == "+=":  # in place: a whole-tensor temporary less (verify/stream.py counts them)
        np.multiply(mo, ep[0], out=mo)
        np.add(eo, mo, out=eo)
    errors[o] = eo
    del errors[o + "#mag"]


def growth(k: Kernel) -> float:
    """How a sum's accumulated rounding grows with its length n: sqrt(n) (rounding errors of
    opposite signs cancel like a random walk; pairwise and blocked summation do better)."""
    n = max(1, math.prod(n for v, n in k.loops if v in k.reduce_vars))
    return math.sqrt(n)


def _points(k: Kernel, points: np.ndarray) -> np.ndarray:
    pts = np.ascontiguousarray(points, dtype=np.int64)
    d = len(k.out_vars)
    if pts.ndim != 2:
        pts = pts.reshape(-1, d) if d else np.zeros((max(len(pts.reshape(-1)), 1), 0), np.int64)
    if pts.shape[1] != d:
        raise ValueError(f"kernel {k.name}: points have {pts.shape[1]} columns, expected {d}")
    return pts


def sample_kernel(
    k: Kernel, arrays: dict[str, np.ndarray], points: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Values ``k`` leaves at the output positions of ``points`` (rows over ``k.out_vars``),
    computed point by point over the reduction loops only, and their magnitudes
    (``|start| + sum |term|`` for ``+=``, product of ``|.|`` for ``*=``, max ``|.|`` otherwise)."""
    vals, mags, _ = sample_kernel_err(k, arrays, {}, points, 2.0**-53)
    return vals, mags


def sample_kernel_err(k: Kernel, arrays: dict[str, np.ndarray], errors: dict[str, np.ndarray],
                      points: np.ndarray, unit: float, top: float | None = None,
                      slack: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Like :func:`sample_kernel`, with each point's rounding-error bound as a third array
    (as in :func:`run_kernel_err`)."""
    pts = _points(k, points)
    ext = k.extents
    for j, v in enumerate(k.out_vars):
        if len(pts) and (pts[:, j].min() < 0 or pts[:, j].max() >= ext[v]):
            raise IndexError(f"kernel {k.name}: sample point outside the range of {v}")
    o = k.out.tensor
    errs = dict(errors)
    errs.setdefault(o, np.zeros(np.shape(arrays[o])))
    errs[o + "#mag"] = errs[o]  # read by nothing: sample keeps magnitudes in locals
    plan, args, _, _ = _prepare(k, arrays, errs)
    vals = np.empty(len(pts), dtype=np.float64)
    mags = np.empty(len(pts), dtype=np.float64)
    out_err = np.empty(len(pts), dtype=np.float64)
    _invoke(k, plan, "sample", (*args, _ep(k, unit, top, slack), pts, vals, mags, out_err), vals,
            _work(k, len(pts)))
    return vals, mags, out_err


def out_positions(k: Kernel, points: np.ndarray) -> np.ndarray:
    """Output indices (int64 [P, rank]) of sample points given over ``k.out_vars``."""
    pts = _points(k, points)
    col = {v: j for j, v in enumerate(k.out_vars)}
    res = np.empty((len(pts), len(k.out.index)), dtype=np.int64)
    for d, a in enumerate(k.out.index):
        acc = np.full(len(pts), a.const, dtype=np.int64)
        for v, c in a.terms:
            if c:
                acc += c * pts[:, col[v]]
        res[:, d] = acc
    return res


def random_points(k: Kernel, n: int, rng: np.random.Generator) -> np.ndarray:
    """Up to ``n`` distinct points drawn uniformly over the out-var extents (all when few)."""
    ext = k.extents
    dims = [int(ext[v]) for v in k.out_vars]
    total = math.prod(dims)
    if not dims:
        return np.zeros((1, 0), dtype=np.int64)
    if total == 0 or n <= 0:
        return np.zeros((0, len(dims)), dtype=np.int64)
    if total <= n:
        return np.indices(dims).reshape(len(dims), -1).T.astype(np.int64)
    if total < 2**62:
        lin = rng.choice(total, size=n, replace=False)
        return np.stack(np.unravel_index(lin, dims), axis=1).astype(np.int64)
    return rng.integers(0, dims, size=(n, len(dims)), dtype=np.int64)


def edge_points(k: Kernel, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Points (rows over ``k.out_vars``) that write the first two and last two indices of
    each output dimension (the other dimensions drawn at random), and the corners where every
    dimension is first or last. Indices no point of the out-var box writes are left out."""
    ext = k.extents
    ov = k.out_vars
    col = {v: j for j, v in enumerate(ov)}
    if not ov:
        return np.zeros((0, 0), dtype=np.int64)
    base = lambda: np.array([rng.integers(0, ext[v]) for v in ov], dtype=np.int64)  # noqa: E731
    rows: list[np.ndarray] = []
    for d, a in enumerate(k.out.index):
        for t in sorted({0, 1, shape[d] - 2, shape[d] - 1} & set(range(shape[d]))):
            pt = base()
            if _solve(a, t, ext, col, pt):
                rows.append(pt)
    if len(shape) <= 4:  # corners: each dimension at its first or its last index
        for corner in np.ndindex(*([2] * len(shape))):
            pt = base()
            if all(_solve(a, (shape[d] - 1) * c, ext, col, pt) for d, (a, c) in enumerate(zip(k.out.index, corner))):
                rows.append(pt)
    return np.unique(np.array(rows, dtype=np.int64).reshape(-1, len(ov)), axis=0)


def _solve(a, target: int, ext: dict[str, int], col: dict[str, int], pt: np.ndarray) -> bool:
    """Set ``a``'s variables in ``pt`` so that ``a`` equals ``target`` (mixed radix, the
    largest coefficient first); False when no point of the box does."""
    rem = target - a.const
    for v, c in sorted(((v, c) for v, c in a.terms if c), key=lambda t: -abs(t[1])):
        x = min(max(rem // c, 0), ext[v] - 1)
        pt[col[v]] = x
        rem -= c * x
    return rem == 0


def cache_size() -> int:
    """Number of distinct compiled kernel modules in this process."""
    return len(_MODULES)


# ---------------------------------------------------------------- composition layer


def apply_call(call: tuple, ins: list[np.ndarray]) -> np.ndarray | tuple[np.ndarray, ...]:
    """Run one composition-layer call (view, copy, gather, sort...) with numpy, float64 in."""
    kind = call[0]
    x = ins[0]
    if kind == "reshape":
        return np.reshape(x, tuple(call[1]))
    if kind == "permute":
        return np.transpose(x, tuple(call[1]))
    if kind == "expand":
        shape = list(call[1])
        off = len(shape) - x.ndim
        for i in range(len(shape)):
            if shape[i] == -1:
                shape[i] = x.shape[i - off]
        return np.broadcast_to(x, tuple(shape))
    if kind == "slice":
        dim, start, stop, step = call[1:5]
        idx = [slice(None)] * x.ndim
        idx[dim] = slice(start, stop, step)
        return x[tuple(idx)]
    if kind == "select":
        dim, i = call[1], call[2]
        idx = [slice(None)] * x.ndim
        idx[dim] = i
        return x[tuple(idx)]
    if kind == "unsqueeze":
        return np.expand_dims(x, call[1])
    if kind == "squeeze":
        dims = call[1] if len(call) > 1 and call[1] is not None else tuple(range(x.ndim))
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        dims = tuple(d % x.ndim for d in dims if x.ndim and x.shape[d] == 1)
        return np.squeeze(x, axis=dims) if dims else x
    if kind in ("alias", "view_as", "detach"):
        return x
    if kind in ("clone", "contiguous", "copy"):
        return np.array(x, dtype=np.float64)
    if kind == "index_select":
        return np.take(x, ins[1].astype(np.int64).reshape(-1), axis=call[1])
    if kind == "embedding":
        return x[ins[1].astype(np.int64)]
    if kind == "gather":
        return np.take_along_axis(x, ins[1].astype(np.int64), axis=call[1])
    if kind in ("cat", "concat"):
        return np.concatenate(ins, axis=call[1] if len(call) > 1 else 0)
    if kind == "stack":
        return np.stack(ins, axis=call[1] if len(call) > 1 else 0)
    if kind == "diagonal":
        return np.diagonal(x, offset=call[1], axis1=call[2], axis2=call[3])
    if kind in calls_index.KINDS:  # selection and indexing; may return several outputs
        return calls_index.apply(call, ins)
    raise ValueError(f"unsupported composition call {call!r}")


def run_program_ops(p: Program, arrays: dict[str, np.ndarray]) -> None:
    """Execute every op of ``p`` in order (kernels in full, views/gathers with numpy).

    ``arrays`` holds the program's inputs and parameters; results are stored in it under
    their tensor names. Missing tensors are allocated as float64 zeros."""
    for name in list(arrays):
        a = arrays[name]
        if not (isinstance(a, np.ndarray) and a.dtype == np.float64):
            arrays[name] = np.array(_f64(a))

    def alloc(name: str) -> None:
        if name not in arrays:
            if name not in p.tensors:
                raise KeyError(f"tensor {name!r} is neither given nor declared in {p.name}")
            arrays[name] = np.zeros(p.tensors[name].shape, dtype=np.float64)

    for op in p.ops:
        if op.kind == "compute" or (op.kernels and op.call is None):
            for k in op.kernels:
                alloc(k.out.tensor)
                for t in k.inputs():
                    alloc(t)
                run_kernel(k, arrays)
            for t in op.outputs:
                alloc(t)
            continue
        if op.call is None:
            raise ValueError(f"op {op.id} ({op.kind}) has no call to execute")
        for t in op.inputs:
            alloc(t)
        results = apply_call(op.call, [arrays[t] for t in op.inputs])
        if not isinstance(results, tuple):
            results = (results,)
        for out, res in zip(op.outputs, results):  # a call may fill several outputs in order
            tt = p.tensors.get(out)
            if tt is not None and tuple(res.shape) != tuple(tt.shape):
                if res.size != tt.numel:
                    raise ValueError(
                        f"op {op.id}: {op.call[0]} gives shape {res.shape}, {out} declares {tt.shape}"
                    )
                res = res.reshape(tt.shape)
            arrays[out] = res
