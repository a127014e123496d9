"""Code generation for IR kernels (docs/architecture.md §4): each kernel becomes the Python source of a
numba module with a ``run`` function (the full loop nest) and a ``sample`` function (chosen
output points, over the reduction loops only).

Loop extents, guard bounds, affine constants and float constants are *arguments* (``ext``,
``ip``, ``cv``), so one compiled function serves every shape of the same structure.  Tensors
are renamed positionally (``O`` for the output, ``A0``, ``A1`` ... for inputs) and loop
variables become ``v0``, ``v1`` ... in loop order, so the source depends only on the kernel's
structure.

All arithmetic is float64.  Loads that cannot be proven in bounds (from the loop extents and
the guards) get explicit bounds checks that raise ``IndexError``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

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
    loads,
)

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
class KernelPlan:
    """The generated source of one kernel and the arguments its functions take."""

    source: str
    tensors: tuple[str, ...]  # input tensor names bound to A0, A1, ...
    ext: tuple[int, ...]
    ip: tuple[int, ...]
    cv: tuple[float, ...]


@dataclass(frozen=True)
class _Pieces:
    """What ``run`` and ``sample`` share (their parameters are numbered once)."""

    op: str
    guards: list[tuple[list[int], str, Guard]]  # (loop positions of its vars, condition, guard)
    out_lines: list[str]
    out_ref: str
    body_lines: list[str]
    val: str
    prelude: list[str]

    def combine(self, acc: str) -> str:
        op, val = self.op, self.val
        if op == "=":
            return val
        if op == "+=":
            return f"{acc} + {val}"
        if op == "*=":
            return f"{acc} * {val}"
        cmp = ">" if op == "max=" else "<"
        return f"{val} if ({val} {cmp} {acc} or {val} != {val}) else {acc}"


class _Gen:
    """Source of one kernel's ``run`` and ``sample`` functions and the parameters they take."""

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
    def build(self) -> KernelPlan:
        k = self.k
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
        prelude = (
            [f"n{i} = ext[{i}]" for i in range(len(k.loops))]
            + [f"k{i} = ip[{i}]" for i in range(len(self.ip))]
            + [f"c{i} = cv[{i}]" for i in range(len(self.cv))]
        )
        pc = _Pieces(k.op, guards, out_lines, out_ref, body_lines, val, prelude)
        src: list[str] = [_HEADER, _CONSTS]
        args = ", ".join(["O"] + [f"A{i}" for i in range(len(self.tnames))])
        src.append(f"\n{_JIT}\ndef run({args}, ext, ip, cv):\n")
        src.extend("    " * i + x + "\n" for i, x in self._run_lines(pc))
        src.append(f"\n\n{_JIT}\ndef sample({args}, ext, ip, cv, pts, vals, mags):\n")
        src.extend("    " * i + x + "\n" for i, x in self._sample_lines(pc))
        return KernelPlan(
            source="".join(src),
            tensors=tuple(self.tnames),
            ext=tuple(int(e) for _, e in k.loops),
            ip=tuple(self.ip),
            cv=tuple(self.cv),
        )

    def _init_lines(self, pc: _Pieces, ovpos: list[int]) -> list[tuple[int, str]]:
        """Set every output point the guards admit to the identity of the reduction."""
        lines: list[tuple[int, str]] = []
        ind = 1
        for i in ovpos:
            lines.append((ind, f"for v{i} in range(n{i}):"))
            ind += 1
        # guards on the output's own vars (padding, transposed-conv ranges) bound the index
        for vp, cond, _ in pc.guards:
            if set(vp) <= set(ovpos):
                lines.append((ind, f"if {cond}:"))
                ind += 1
        lines += [(ind, s) for s in pc.out_lines]
        lines.append((ind, f"{pc.out_ref} = {_IDENT_SRC[self.k.op]}"))
        return lines

    def _run_lines(self, pc: _Pieces) -> list[tuple[int, str]]:
        """(indent, line) of ``run``: full execution, in a local accumulator where it can."""
        k = self.k
        L = len(k.loops)
        ovpos = [self.pos[v] for v in k.out_vars]
        op = k.op
        reads_out = any(ld.tensor == k.out.tensor for ld in loads(k.expr))
        lines: list[tuple[int, str]] = [(1, p) for p in pc.prelude]
        if k.init == "identity" and op != "=":
            lines += self._init_lines(pc, ovpos)
        s = max(ovpos) + 1 if ovpos else 0
        use_acc = s < L and not reads_out
        at_depth: dict[int, list[str]] = {}
        for vp, cond, _ in pc.guards:
            at_depth.setdefault(max(vp) + 1 if vp else 0, []).append(cond)
        out_ref = pc.out_ref

        def nest(d: int, ind: int) -> None:
            for cond in at_depth.get(d, []):
                lines.append((ind, f"if {cond}:"))
                ind += 1
            start = use_acc and d == s
            if start:
                lines.extend((ind, x) for x in pc.out_lines)
                lines.append((ind, f"acc = {out_ref}"))
            if d == L:
                lines.extend((ind, x) for x in pc.body_lines)
                if use_acc:
                    lines.append((ind, f"acc = {pc.combine('acc')}"))
                else:
                    lines.extend((ind, x) for x in pc.out_lines)
                    if op != "=":
                        lines.append((ind, f"acc = {out_ref}"))
                    lines.append((ind, f"{out_ref} = {pc.combine('acc')}"))
            else:
                lines.append((ind, f"for v{d} in range(n{d}):"))
                nest(d + 1, ind + 1)
            if start:
                lines.append((ind, f"{out_ref} = acc"))

        nest(0, 1)
        lines.append((1, "return"))
        return lines

    def _sample_lines(self, pc: _Pieces) -> list[tuple[int, str]]:
        """(indent, line) of ``sample``: one output point per row of pts, looping over reduce
        vars only."""
        k = self.k
        ovpos = [self.pos[v] for v in k.out_vars]
        rvpos = [self.pos[v] for v in k.reduce_vars]
        op, val, out_ref = k.op, pc.val, pc.out_ref
        lines: list[tuple[int, str]] = [(1, p) for p in pc.prelude]
        lines.append((1, "for p in range(pts.shape[0]):"))
        for j, i in enumerate(ovpos):
            lines.append((2, f"v{i} = pts[p, {j}]"))
        lines.extend((2, x) for x in pc.out_lines)
        if k.init == "identity" and op != "=":
            lines.append((2, f"acc = {_IDENT_SRC[op]}"))
            lines.append((2, "mag = _ONE" if op == "*=" else "mag = _ZERO"))
        else:
            lines.append((2, f"acc = {out_ref}"))
            lines.append((2, "mag = np.abs(acc)"))
        rorder = {p: j for j, p in enumerate(rvpos)}
        sdepth: dict[int, list[str]] = {}
        for vp, cond, _ in pc.guards:
            rv = [rorder[p] for p in vp if p in rorder]
            sdepth.setdefault(max(rv) + 1 if rv else 0, []).append(cond)
        R = len(rvpos)

        def snest(d: int, ind: int) -> None:
            for cond in sdepth.get(d, []):
                lines.append((ind, f"if {cond}:"))
                ind += 1
            if d == R:
                lines.extend((ind, x) for x in pc.body_lines)
                lines.append((ind, f"acc = {pc.combine('acc')}"))
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
        return lines


def _is_arg_char(src: str, i: int) -> bool:
    """True where ``src[i]`` is a standalone argument name a/b/c in a _FUNC_SRC template."""
    ch = src[i]
    if ch not in "abc":
        return False
    before = src[i - 1] if i else " "
    after = src[i + 1] if i + 1 < len(src) else " "
    return not (before.isalnum() or before in "_.") and not (after.isalnum() or after == "_")



@functools.lru_cache(maxsize=4096)
def kernel_plan(k: Kernel, checked: bool) -> KernelPlan:
    """The generated source and arguments of ``k`` (``checked``: with bounds checks), cached."""
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



def in_bounds(k: Kernel, shapes: dict[str, tuple[int, ...]]) -> bool:
    """Whether every access provably stays inside its tensor (else checks are generated)."""
    ext = k.extents
    if any(e <= 0 for e in ext.values()):
        return True
    for ld in [k.out, *loads(k.expr)]:
        shape = shapes[ld.tensor]
        for a, n in zip(ld.index, shape):
            if a.vars() - ext.keys():
                return False
            lo, hi = _range(a, ext, k.guards)
            if lo <= hi and (lo < 0 or hi >= n):
                return False
    return True

