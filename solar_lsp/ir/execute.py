"""Execute IR kernels with numba (DESIGN §4).

Every kernel is turned into Python source in which loop extents, guard bounds, affine
constants and float constants are *arguments* (``ext``, ``ip``, ``cv``), so one compiled
function serves every shape of the same structure.  Tensors are renamed positionally
(``O`` for the output, ``A0``, ``A1`` ... for inputs) and loop variables become
``v0``, ``v1`` ... in loop order, so the source depends only on the kernel's structure.

Compiled functions are cached in-process (``_MODULES``, keyed by the generated source)
and on disk: the source is written to ``$SOLAR_CACHE_DIR`` (default
``~/.cache/solar-lsp/numba``) under a hash of itself and imported as a module whose
functions use ``@numba.njit(cache=True)``, so numba's own cache serves later processes.

If numba cannot compile a module, the same source is executed as plain Python with
numpy float64 scalars (IEEE semantics, slow but identical); the reason is logged and
recorded in ``FALLBACKS``.

All arithmetic is float64.  Loads that cannot be proven in bounds (from the loop
extents and the guards) get explicit bounds checks that raise ``IndexError``.
"""

from __future__ import annotations

import functools
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
from dataclasses import dataclass

import numpy as np

from solar_lsp.ir import calls_index
from solar_lsp.ir.core import (
    SCALAR_FUNCS,
    Affine,
    Call,
    Const,
    Expr,
    Guard,
    Index,
    Kernel,
    Load,
    Program,
)

log = logging.getLogger(__name__)

# In-process cache: generated source -> imported module (numba dispatchers inside).
_MODULES: dict[str, types.ModuleType] = {}
# Sources numba failed to compile -> the pure-Python module that replaces them.
_PY_MODULES: dict[str, types.ModuleType] = {}
# (kernel name, reason) for every numba fallback taken in this process.
FALLBACKS: list[tuple[str, str]] = []
# Counters: modules created, first calls (compile or disk-cache load) and their seconds.
STATS: dict[str, float] = {"modules": 0, "first_calls": 0, "first_call_s": 0.0, "fallbacks": 0}
# Set to True to skip numba entirely (debugging, tests of the fallback path).
FORCE_INTERPRETER = False

_HEADER = "import math\nimport numpy as np\nimport numba\n"
_JIT = '@numba.njit(cache=True, error_model="numpy")'
_CONSTS = (
    "_ONE = np.float64(1.0)\n"
    "_ZERO = np.float64(0.0)\n"
    "_INF = np.float64(np.inf)\n"
    "_NEGINF = np.float64(-np.inf)\n"
    "_I64MIN = np.float64(-9223372036854775808.0)\n"
    "_I32MIN = np.float64(-2147483648.0)\n"
)
_IDENT_SRC = {"+=": "_ZERO", "*=": "_ONE", "max=": "_NEGINF", "min=": "_INF"}

# fn -> expression over argument names a, b, c (each a plain local name, may repeat).
_FUNC_SRC: dict[str, str] = {
    "add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b",
    "neg": "-a", "abs": "np.abs(a)",
    "max": "np.maximum(a, b)", "min": "np.minimum(a, b)",
    "floor": "np.floor(a)", "ceil": "np.ceil(a)", "round": "np.rint(a)", "trunc": "np.trunc(a)",
    "sign": "np.sign(a)", "fmod": "np.fmod(a, b)", "remainder": "np.remainder(a, b)",
    "floordiv": "np.floor(a / b)",
    "exp": "np.exp(a)", "exp2": "np.exp2(a)", "expm1": "np.expm1(a)",
    "log": "np.log(a)", "log2": "np.log2(a)", "log1p": "np.log1p(a)",
    "sqrt": "np.sqrt(a)", "rsqrt": "_ONE / np.sqrt(a)", "reciprocal": "_ONE / a",
    "tanh": "np.tanh(a)", "erf": "np.float64(math.erf(a))",
    "sigmoid": "_ONE / (_ONE + np.exp(-a))", "pow": "np.power(a, b)",
    "sin": "np.sin(a)", "cos": "np.cos(a)", "tan": "np.tan(a)", "atan": "np.arctan(a)",
    "asin": "np.arcsin(a)", "acos": "np.arccos(a)", "atan2": "np.arctan2(a, b)",
    "sinh": "np.sinh(a)", "cosh": "np.cosh(a)", "asinh": "np.arcsinh(a)",
    "acosh": "np.arccosh(a)", "atanh": "np.arctanh(a)",
    "where": "(b if a != 0.0 else c)",
    "eq": "(_ONE if a == b else _ZERO)", "ne": "(_ONE if a != b else _ZERO)",
    "lt": "(_ONE if a < b else _ZERO)", "le": "(_ONE if a <= b else _ZERO)",
    "gt": "(_ONE if a > b else _ZERO)", "ge": "(_ONE if a >= b else _ZERO)",
    "and": "(_ONE if (a != 0.0 and b != 0.0) else _ZERO)",
    "or": "(_ONE if (a != 0.0 or b != 0.0) else _ZERO)",
    "not": "(_ONE if a == 0.0 else _ZERO)",
    "xor": "(_ONE if ((a != 0.0) != (b != 0.0)) else _ZERO)",
    # integer bit operations: the float64 operands hold integral values; compute in int64
    "band": "np.float64(np.int64(a) & np.int64(b))", "bor": "np.float64(np.int64(a) | np.int64(b))",
    "bxor": "np.float64(np.int64(a) ^ np.int64(b))", "bnot": "np.float64(~np.int64(a))",
    "shl": "np.float64(np.int64(a) << np.int64(b))", "shr": "np.float64(np.int64(a) >> np.int64(b))",
    "isnan": "(_ONE if np.isnan(a) else _ZERO)", "isinf": "(_ONE if np.isinf(a) else _ZERO)",
    "cast_f64": "a", "cast_f32": "a", "cast_f16": "a", "cast_bf16": "a", "cast_f8": "a",
    "cast_i64": "(np.trunc(a) if np.isfinite(a) else _I64MIN)",
    "cast_i32": "(np.remainder(np.trunc(a) + 2147483648.0, 4294967296.0) - 2147483648.0"
    " if np.isfinite(a) else _I32MIN)",
    "cast_i8": "(np.remainder(np.trunc(a) + 128.0, 256.0) - 128.0 if np.isfinite(a) else _ZERO)",
    "cast_u8": "(np.remainder(np.trunc(a), 256.0) if np.isfinite(a) else _ZERO)",
    "cast_bool": "(_ONE if a != 0.0 else _ZERO)",
}


# ---------------------------------------------------------------- code generation


@dataclass(frozen=True)
class _Plan:
    source: str
    tensors: tuple[str, ...]  # input tensor names bound to A0, A1, ...
    ext: tuple[int, ...]
    ip: tuple[int, ...]
    cv: tuple[float, ...]


class _Gen:
    def __init__(self, k: Kernel, checked: bool):
        self.k = k
        self.checked = checked
        self.pos = {v: i for i, (v, _) in enumerate(k.loops)}
        if len(self.pos) != len(k.loops):
            raise ValueError(f"kernel {k.name}: duplicate loop variable")
        if k.op not in ("=", "+=", "*=", "max=", "min="):
            raise ValueError(f"kernel {k.name}: unknown op {k.op!r}")
        if k.init not in ("identity", "keep"):
            raise ValueError(f"kernel {k.name}: unknown init {k.init!r}")
        self.ip: list[int] = []
        self.cv: list[float] = []
        self.tnames: list[str] = []
        self.ntemp = 0

    # names ---------------------------------------------------------------
    def tensor(self, name: str) -> str:
        if name == self.k.out.tensor:
            return "O"
        if name not in self.tnames:
            self.tnames.append(name)
        return f"A{self.tnames.index(name)}"

    def iparam(self, value: int) -> str:
        self.ip.append(int(value))
        return f"k{len(self.ip) - 1}"

    def temp(self) -> str:
        self.ntemp += 1
        return f"t{self.ntemp - 1}"

    def affine(self, a: Affine) -> str:
        parts = []
        for v, c in sorted(a.terms, key=lambda t: self.pos.get(t[0], -1)):
            if c == 0:
                continue
            if v not in self.pos:
                raise ValueError(f"kernel {self.k.name}: unknown loop variable {v!r}")
            name = f"v{self.pos[v]}"
            parts.append(name if c == 1 else f"({c}) * {name}")
        if a.const:
            parts.append(self.iparam(a.const))
        return " + ".join(parts) if parts else "0"

    # expressions ---------------------------------------------------------
    def index(self, ld: Load, lines: list[str], cse: dict[str, str]) -> str:
        arr = self.tensor(ld.tensor)
        if not ld.index:
            return f"{arr}[0]"
        names = []
        for d, a in enumerate(ld.index):
            rhs = self.affine(a)
            if rhs in cse:
                names.append(cse[rhs])
                continue
            t = self.temp()
            lines.append(f"{t} = {rhs}")
            cse[rhs] = t
            if self.checked:
                lines.append(
                    f"if {t} < 0 or {t} >= {arr}.shape[{d}]: "
                    f"raise IndexError('kernel index out of bounds')"
                )
            names.append(t)
        return f"{arr}[{', '.join(names)}]"

    def expr(self, e: Expr, lines: list[str], cse: dict[str, str]) -> str:
        if isinstance(e, Const):
            self.cv.append(float(e.value))
            return f"c{len(self.cv) - 1}"
        if isinstance(e, Load):
            rhs = self.index(e, lines, cse)
        elif isinstance(e, Index):
            rhs = f"np.float64({self.affine(e.expr)})"
        elif isinstance(e, Call):
            if e.fn not in _FUNC_SRC:
                raise ValueError(f"kernel {self.k.name}: unknown scalar function {e.fn!r}")
            args = [self.expr(a, lines, cse) for a in e.args]
            need = SCALAR_FUNCS[e.fn][0] if e.fn in SCALAR_FUNCS else len(args)
            if len(args) != need:
                raise ValueError(f"kernel {self.k.name}: {e.fn} takes {need} arguments")
            env = dict(zip("abc", args))
            src = _FUNC_SRC[e.fn]
            rhs = "".join(env.get(ch, ch) if _is_arg_char(src, i) else ch for i, ch in enumerate(src))
        else:
            raise ValueError(f"kernel {self.k.name}: bad expression {e!r}")
        if rhs in cse:
            return cse[rhs]
        t = self.temp()
        lines.append(f"{t} = {rhs}")
        cse[rhs] = t
        return t

    def guard(self, g: Guard) -> str | None:
        e = self.affine(g.expr)
        conds = []
        if g.lo is not None:
            conds.append(f"{self.iparam(g.lo)} <= ({e})")
        if g.hi is not None:
            conds.append(f"({e}) < {self.iparam(g.hi)}")
        return " and ".join(conds) if conds else None

    # assembly ------------------------------------------------------------
    def build(self) -> _Plan:
        k = self.k
        L = len(k.loops)
        ovpos = [self.pos[v] for v in k.out_vars]
        rvpos = [self.pos[v] for v in k.reduce_vars]
        op = k.op

        # Pieces shared by both functions (parameters are numbered once).
        guards = []  # (vars positions, cond)
        for g in k.guards:
            cond = self.guard(g)
            if cond is not None:
                guards.append(([self.pos[v] for v in g.expr.vars() if v in self.pos], cond, g))
        out_lines: list[str] = []
        out_ref = self.index(k.out, out_lines, {})
        body_lines: list[str] = []
        val = self.expr(k.expr, body_lines, {})
        reads_out = any(ld.tensor == k.out.tensor for ld in _loads(k.expr))
        use_ident = k.init == "identity" and op != "="

        def combine(acc: str) -> str:
            if op == "=":
                return val
            if op == "+=":
                return f"{acc} + {val}"
            if op == "*=":
                return f"{acc} * {val}"
            cmp = ">" if op == "max=" else "<"
            return f"{val} if ({val} {cmp} {acc} or {val} != {val}) else {acc}"

        src: list[str] = [_HEADER, _CONSTS]
        args = ", ".join(["O"] + [f"A{i}" for i in range(len(self.tnames))])
        prelude = (
            [f"n{i} = ext[{i}]" for i in range(L)]
            + [f"k{i} = ip[{i}]" for i in range(len(self.ip))]
            + [f"c{i} = cv[{i}]" for i in range(len(self.cv))]
        )

        # ---- full execution
        lines: list[tuple[int, str]] = [(1, p) for p in prelude]
        if use_ident:
            ind = 1
            for i in ovpos:
                lines.append((ind, f"for v{i} in range(n{i}):"))
                ind += 1
            # guards on the output's own vars (padding, transposed-conv ranges) bound the index
            for vp, cond, _ in guards:
                if set(vp) <= set(ovpos):
                    lines.append((ind, f"if {cond}:"))
                    ind += 1
            lines += [(ind, s) for s in out_lines]
            lines.append((ind, f"{out_ref} = {_IDENT_SRC[op]}"))
        s = max(ovpos) + 1 if ovpos else 0
        use_acc = s < L and not reads_out
        at_depth: dict[int, list[str]] = {}
        for vp, cond, _ in guards:
            at_depth.setdefault(max(vp) + 1 if vp else 0, []).append(cond)

        def nest(d: int, ind: int) -> None:
            for cond in at_depth.get(d, []):
                lines.append((ind, f"if {cond}:"))
                ind += 1
            start = use_acc and d == s
            if start:
                lines.extend((ind, x) for x in out_lines)
                lines.append((ind, f"acc = {out_ref}"))
            if d == L:
                lines.extend((ind, x) for x in body_lines)
                if use_acc:
                    lines.append((ind, f"acc = {combine('acc')}"))
                else:
                    lines.extend((ind, x) for x in out_lines)
                    if op != "=":
                        lines.append((ind, f"acc = {out_ref}"))
                    lines.append((ind, f"{out_ref} = {combine('acc')}"))
            else:
                lines.append((ind, f"for v{d} in range(n{d}):"))
                nest(d + 1, ind + 1)
            if start:
                lines.append((ind, f"{out_ref} = acc"))

        nest(0, 1)
        lines.append((1, "return"))
        src.append(f"\n{_JIT}\ndef run({args}, ext, ip, cv):\n")
        src.extend("    " * i + x + "\n" for i, x in lines)

        # ---- sampling: one output point per row of pts, looping over reduce vars only
        lines = [(1, p) for p in prelude]
        lines.append((1, "for p in range(pts.shape[0]):"))
        for j, i in enumerate(ovpos):
            lines.append((2, f"v{i} = pts[p, {j}]"))
        lines.extend((2, x) for x in out_lines)
        if use_ident:
            lines.append((2, f"acc = {_IDENT_SRC[op]}"))
            lines.append((2, "mag = _ONE" if op == "*=" else "mag = _ZERO"))
        else:
            lines.append((2, f"acc = {out_ref}"))
            lines.append((2, "mag = np.abs(acc)"))
        rorder = {p: j for j, p in enumerate(rvpos)}
        sdepth: dict[int, list[str]] = {}
        for vp, cond, _ in guards:
            rv = [rorder[p] for p in vp if p in rorder]
            sdepth.setdefault(max(rv) + 1 if rv else 0, []).append(cond)
        R = len(rvpos)

        def snest(d: int, ind: int) -> None:
            for cond in sdepth.get(d, []):
                lines.append((ind, f"if {cond}:"))
                ind += 1
            if d == R:
                lines.extend((ind, x) for x in body_lines)
                lines.append((ind, f"acc = {combine('acc')}"))
                if op == "+=":
                    lines.append((ind, f"mag = mag + np.abs({val})"))
                elif op == "*=":
                    lines.append((ind, f"mag = mag * np.abs({val})"))
                elif op != "=":
                    lines.append((ind, f"mag = np.maximum(mag, np.abs({val}))"))
            else:
                i = rvpos[d]
                lines.append((ind, f"for v{i} in range(n{i}):"))
                snest(d + 1, ind + 1)

        snest(0, 2)
        lines.append((2, "vals[p] = acc"))
        lines.append((2, "mags[p] = np.abs(acc)" if op == "=" else "mags[p] = mag"))
        lines.append((1, "return"))
        src.append(f"\n\n{_JIT}\ndef sample({args}, ext, ip, cv, pts, vals, mags):\n")
        src.extend("    " * i + x + "\n" for i, x in lines)
        return _Plan(
            source="".join(src),
            tensors=tuple(self.tnames),
            ext=tuple(int(e) for _, e in k.loops),
            ip=tuple(self.ip),
            cv=tuple(self.cv),
        )


def _is_arg_char(src: str, i: int) -> bool:
    """True where ``src[i]`` is a standalone argument name a/b/c in a _FUNC_SRC template."""
    ch = src[i]
    if ch not in "abc":
        return False
    before = src[i - 1] if i else " "
    after = src[i + 1] if i + 1 < len(src) else " "
    return not (before.isalnum() or before in "_.") and not (after.isalnum() or after == "_")


def _loads(e: Expr) -> list[Load]:
    if isinstance(e, Load):
        return [e]
    if isinstance(e, Call):
        return [ld for a in e.args for ld in _loads(a)]
    return []


@functools.lru_cache(maxsize=4096)
def _plan(k: Kernel, checked: bool) -> _Plan:
    return _Gen(k, checked).build()


# ---------------------------------------------------------------- bounds proof


def _range(a: Affine, ext: dict[str, int], guards: tuple[Guard, ...]) -> tuple[int, int]:
    lo, hi = a.bounds(ext)
    key = tuple(sorted((v, c) for v, c in a.terms if c))
    for g in guards:
        if tuple(sorted((v, c) for v, c in g.expr.terms if c)) != key:
            continue
        shift = a.const - g.expr.const
        if g.lo is not None:
            lo = max(lo, g.lo + shift)
        if g.hi is not None:
            hi = min(hi, g.hi - 1 + shift)
    return lo, hi


def _in_bounds(k: Kernel, shapes: dict[str, tuple[int, ...]]) -> bool:
    """Whether every access provably stays inside its tensor (else checks are generated)."""
    ext = k.extents
    if any(e <= 0 for e in ext.values()):
        return True
    for ld in [k.out, *_loads(k.expr)]:
        shape = shapes[ld.tensor]
        for a, n in zip(ld.index, shape):
            if a.vars() - ext.keys():
                return False
            lo, hi = _range(a, ext, k.guards)
            if lo <= hi and (lo < 0 or hi >= n):
                return False
    return True


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


def _invoke(k: Kernel, plan: _Plan, fn: str, args: tuple, out: np.ndarray) -> None:
    if FORCE_INTERPRETER or plan.source in _PY_MODULES:
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


def _fallback(k: Kernel, plan: _Plan, reason: str) -> None:
    FALLBACKS.append((k.name, reason))
    STATS["fallbacks"] += 1
    log.warning("numba could not compile kernel %s, using the Python interpreter: %s", k.name, reason)
    _python_module(plan.source)


# ---------------------------------------------------------------- public API


def _f64(a) -> np.ndarray:
    if hasattr(a, "detach"):  # torch tensor
        a = a.detach().cpu().double().numpy()
    # np.ascontiguousarray would turn a 0-d array into 1-d
    return np.array(a, dtype=np.float64, order="C", copy=None)


def _prepare(k: Kernel, arrays: dict[str, np.ndarray]):
    """Float64 C-contiguous arrays (0-d made 1-d), the plan, and the out array to copy back."""
    if k.out.tensor not in arrays:
        raise KeyError(f"kernel {k.name}: output tensor {k.out.tensor!r} not allocated")
    target = arrays[k.out.tensor]
    out = target if (isinstance(target, np.ndarray) and target.dtype == np.float64
                     and target.flags.c_contiguous and target.flags.writeable) else _f64(target)
    conv: dict[str, np.ndarray] = {k.out.tensor: out}
    for ld in _loads(k.expr):
        if ld.tensor not in conv:
            if ld.tensor not in arrays:
                raise KeyError(f"kernel {k.name}: input tensor {ld.tensor!r} missing")
            conv[ld.tensor] = _f64(arrays[ld.tensor])
    for ld in [k.out, *_loads(k.expr)]:
        if conv[ld.tensor].ndim != len(ld.index):
            raise ValueError(
                f"kernel {k.name}: {ld.tensor} has rank {conv[ld.tensor].ndim}, "
                f"indexed with {len(ld.index)} subscripts"
            )
    checked = not _in_bounds(k, {n: a.shape for n, a in conv.items()})
    plan = _plan(k, checked)
    flat = {n: (a.reshape(1) if a.ndim == 0 else a) for n, a in conv.items()}
    args = (flat[k.out.tensor], *[flat[n] for n in plan.tensors],
            np.array(plan.ext, dtype=np.int64), np.array(plan.ip, dtype=np.int64),
            np.array(plan.cv, dtype=np.float64))
    return plan, args, out, target


def run_kernel(k: Kernel, arrays: dict[str, np.ndarray]) -> None:
    """Execute ``k`` in full, writing into ``arrays[k.out.tensor]``."""
    plan, args, out, target = _prepare(k, arrays)
    _invoke(k, plan, "run", args, args[0])
    if out is not target:
        if isinstance(target, np.ndarray):
            target[...] = out
        else:
            arrays[k.out.tensor] = out


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
    pts = _points(k, points)
    ext = k.extents
    for j, v in enumerate(k.out_vars):
        if len(pts) and (pts[:, j].min() < 0 or pts[:, j].max() >= ext[v]):
            raise IndexError(f"kernel {k.name}: sample point outside the range of {v}")
    plan, args, _, _ = _prepare(k, arrays)
    vals = np.empty(len(pts), dtype=np.float64)
    mags = np.empty(len(pts), dtype=np.float64)
    _invoke(k, plan, "sample", (*args, pts, vals, mags), vals)
    return vals, mags


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


def cache_size() -> int:
    """Number of distinct compiled kernel modules in this process."""
    return len(_MODULES)


# ---------------------------------------------------------------- composition layer


def _apply_call(call: tuple, ins: list[np.ndarray]) -> np.ndarray | tuple[np.ndarray, ...]:
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
        results = _apply_call(op.call, [arrays[t] for t in op.inputs])
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
