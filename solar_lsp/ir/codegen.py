"""Code generation for IR kernels (docs/architecture.md §4): each kernel becomes the Python source of a
numba module with a ``run`` function (the full loop nest), a ``run_err`` function (the same,
keeping beside each output value a bound on the rounding error a framework makes computing it,
and the magnitude it summed: ``EO``, ``MO``) and a ``sample`` function (chosen output points,
over the reduction loops only, with their magnitudes and error bounds). The error bounds are a
first-order running error analysis (docs/sol-model.md, Verification; templates in
:mod:`solar_lsp.ir.scalar_src`); inputs computed by an earlier kernel carry theirs (``EA0`` ...).

Loop extents, guard bounds, affine constants and float constants are *arguments* (``ext``,
``ip``, ``cv``; ``ep`` for the error analysis), so one compiled function serves every shape of
the same structure.  Tensors
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
from solar_lsp.ir.scalar_src import ERR_SRC, EXACT, FUNC_SRC, is_arg_char

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
# e·|x| and n/d, with 0·inf and 0/0 taken as 0 (an exact value stays exact); one rounding
# of r with underflow (|r| + tiny), or inf past the accumulator's range
_HELPERS = (
    f"\n{_JIT}\ndef _pm(e, x):\n    if e == 0.0:\n        return _ZERO\n    return e * np.abs(x)\n"
    f"\n\n{_JIT}\ndef _q(n, d):\n    if n == 0.0:\n        return _ZERO\n    return n / d\n"
    f"\n\n{_JIT}\ndef _rd(r, top, tiny):\n    if np.abs(r) <= top:\n        return np.abs(r) + tiny\n    return _INF\n"
)
_IDENT_SRC = {"+=": "_ZERO", "*=": "_ONE", "max=": "_NEGINF", "min=": "_INF"}


# ---------------------------------------------------------------- code generation


@dataclass(frozen=True)
class KernelPlan:
    """The generated source of one kernel and the arguments its functions take."""

    source: str
    tensors: tuple[str, ...]  # input tensor names bound to A0, A1, ...
    ext: tuple[int, ...]
    ip: tuple[int, ...]
    cv: tuple[float, ...]
    flagged: tuple[str, ...] = ()  # inputs whose error bounds are passed (EA0, EA1, ...)
    native: tuple[str, ...] = ()  # float32 inputs passed as they are, each load made float64


@dataclass(frozen=True)
class _Pieces:
    """What the generated functions share (their parameters are numbered once)."""

    op: str
    guards: list[tuple[list[int], str, Guard]]  # (loop positions of its vars, condition, guard)
    out_lines: list[str]
    out_ref: str
    body_lines: list[str]
    val: str
    ebody_lines: list[str]  # the body again, with each value's error bound beside it
    eval_: str
    eerr: str
    prelude: list[str]

    def load_acc(self, err: bool) -> list[str]:
        """Read the output point into the accumulator (and its error and magnitude)."""
        extra = [f"eacc = E{self.out_ref}", f"mag = M{self.out_ref}"] if err else []
        return [f"acc = {self.out_ref}", *extra]

    def store_acc(self, err: bool) -> list[str]:
        extra = [f"E{self.out_ref} = eacc", f"M{self.out_ref} = mag"] if err else []
        return [f"{self.out_ref} = acc", *extra]

    def step(self, err: bool) -> list[tuple[int, str]]:
        """(extra indent, line) combining one term into ``acc`` (and with ``err``, its error
        into ``eacc`` and its magnitude into ``mag``)."""
        op = self.op
        v, ev = (self.eval_, self.eerr) if err else (self.val, "")
        if op == "=":
            return [(0, f"acc = {v}")] + ([(0, f"eacc = {ev}")] if err else [])
        if op == "+=":
            return [(0, f"acc = acc + {v}")] + (
                [(0, f"eacc = eacc + {ev}"), (0, f"mag = mag + np.abs({v})")] if err else [])
        if op == "*=":
            if not err:
                return [(0, f"acc = acc * {v}")]
            return [(0, f"nacc = acc * {v}"), (0, f"eacc = _pm(eacc, {v}) + _pm({ev}, acc) + _rd(nacc, ep2, ep3)"),
                    (0, "acc = nacc"), (0, f"mag = mag * np.abs({v})")]
        cmp = ">" if op == "max=" else "<"
        lines = [(0, f"if {v} {cmp} acc or {v} != {v}:"), (1, f"acc = {v}")]
        return lines + ([(1, f"eacc = {ev}"), (0, f"mag = np.maximum(mag, np.abs({v}))")] if err else [])


class _Gen:
    """Source of one kernel's ``run`` and ``sample`` functions and the parameters they take."""

    def __init__(self, k: Kernel, checked: bool, flagged: frozenset[str] = frozenset(),
                 native: frozenset[str] = frozenset()):
        self.k = k
        self.checked = checked
        self.native = native
        self.flagged = flagged | {k.out.tensor}  # tensors whose error bounds are passed
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

    def expr(self, e: Expr, lines: list[str], cse: dict[str, str],
             errs: dict[str, str] | None = None) -> str:
        """The local holding ``e``'s value; with ``errs``, also the local (or expression)
        holding its error bound, in units of the accumulator's roundoff (``errs[value]``)."""
        if isinstance(e, Const):
            self.cv.append(float(e.value))
            name = f"c{len(self.cv) - 1}"
            if errs is not None:  # a constant the framework rounds to float32 (or computes: ep4)
                errs[name] = f"((_ZERO if np.float64(np.float32({name})) == {name} else np.abs({name})) + ep4)"
            return name
        args: list[str] = []
        if isinstance(e, Load):
            rhs = self.index(e, lines, cse)
            if e.tensor in self.native:  # exact: every float32 is a float64
                rhs = f"np.float64({rhs})"
        elif isinstance(e, Index):
            rhs = f"np.float64({self.affine(e.expr)})"
        elif isinstance(e, Call):
            if e.fn not in FUNC_SRC:
                raise ValueError(f"kernel {self.k.name}: unknown scalar function {e.fn!r}")
            args = [self.expr(a, lines, cse, errs) for a in e.args]
            need = SCALAR_FUNCS[e.fn][0] if e.fn in SCALAR_FUNCS else len(args)
            if len(args) != need:
                raise ValueError(f"kernel {self.k.name}: {e.fn} takes {need} arguments")
            env = dict(zip("abc", args))
            src = FUNC_SRC[e.fn]
            rhs = "".join(env.get(ch, ch) if is_arg_char(src, i) else ch for i, ch in enumerate(src))
        else:
            raise ValueError(f"kernel {self.k.name}: bad expression {e!r}")
        t = cse.get(rhs)
        if t is None:
            t = self.temp()
            lines.append(f"{t} = {rhs}")
            cse[rhs] = t
        if errs is not None and t not in errs:
            errs[t] = f"e{t}"
            lines.append(f"e{t} = {self._err_rhs(e, rhs, t, args, errs)}")
        return t

    def _err_rhs(self, e: Expr, rhs: str, t: str, args: list[str], errs: dict[str, str]) -> str:
        if isinstance(e, Load):  # exact unless an earlier kernel of the op computed it
            return f"E{rhs}" if e.tensor in self.flagged else "_ZERO"
        if not isinstance(e, Call):
            return "_ZERO"
        env = {"r": t, "u": "ep1", "top": "ep2", "tiny": "ep3"}
        for ch, a in zip("abc", args):
            env[ch] = a
            env["e" + ch] = errs[a]
        return ERR_SRC.get(e.fn, EXACT).format(**env)

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
        # Pieces shared by all functions (parameters are numbered once).
        guards = []  # (vars positions, cond)
        for g in k.guards:
            cond = self.guard(g)
            if cond is not None:
                guards.append(([self.pos[v] for v in g.expr.vars() if v in self.pos], cond, g))
        out_lines: list[str] = []
        out_ref = self.index(k.out, out_lines, {})
        body_lines: list[str] = []
        val = self.expr(k.expr, body_lines, {})
        ebody_lines: list[str] = []
        errs: dict[str, str] = {}
        eval_ = self.expr(k.expr, ebody_lines, {}, errs)
        prelude = (
            [f"n{i} = ext[{i}]" for i in range(len(k.loops))]
            + [f"k{i} = ip[{i}]" for i in range(len(self.ip))]
            + [f"c{i} = cv[{i}]" for i in range(len(self.cv))]
            + ["ep0 = ep[0]", "ep1 = ep[1]", "ep2 = ep[2]", "ep3 = ep[3]", "ep4 = ep[4]"]
        )
        pc = _Pieces(k.op, guards, out_lines, out_ref, body_lines, val, ebody_lines, eval_, errs[eval_],
                     prelude)
        src: list[str] = [_HEADER, _CONSTS, _HELPERS]
        ins = [f"A{i}" for i in range(len(self.tnames))]
        eins = [f"EA{i}" for i, t in enumerate(self.tnames) if t in self.flagged]
        args = ", ".join(["O"] + ins)
        src.append(f"\n{_JIT}\ndef run({args}, ext, ip, cv, ep):\n")
        src.extend("    " * i + x + "\n" for i, x in self._run_lines(pc, False))
        eargs = ", ".join(["O", "EO", "MO"] + ins + eins)
        src.append(f"\n\n{_JIT}\ndef run_err({eargs}, ext, ip, cv, ep):\n")
        src.extend("    " * i + x + "\n" for i, x in self._run_lines(pc, True))
        src.append(f"\n\n{_JIT}\ndef sample({eargs}, ext, ip, cv, ep, pts, vals, mags, errs):\n")
        src.extend("    " * i + x + "\n" for i, x in self._sample_lines(pc))
        return KernelPlan(
            source="".join(src),
            tensors=tuple(self.tnames),
            ext=tuple(int(e) for _, e in k.loops),
            ip=tuple(self.ip),
            cv=tuple(self.cv),
            flagged=tuple(t for t in self.tnames if t in self.flagged),
            native=tuple(t for t in self.tnames if t in self.native),
        )

    def _init_lines(self, pc: _Pieces, ovpos: list[int], err: bool) -> list[tuple[int, str]]:
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
        if err:
            lines += [(ind, f"E{pc.out_ref} = _ZERO"), (ind, f"M{pc.out_ref} = _ZERO")]
        return lines

    def _run_lines(self, pc: _Pieces, err: bool) -> list[tuple[int, str]]:
        """(indent, line) of ``run`` (or, with ``err``, ``run_err``, which also keeps each
        output's error bound in EO and its summed magnitude in MO): full execution, in a local
        accumulator where it can."""
        k = self.k
        L = len(k.loops)
        ovpos = [self.pos[v] for v in k.out_vars]
        reads_out = any(ld.tensor == k.out.tensor for ld in loads(k.expr))
        lines: list[tuple[int, str]] = [(1, p) for p in pc.prelude]
        if k.init == "identity" and k.op != "=":
            lines += self._init_lines(pc, ovpos, err)
        s = max(ovpos) + 1 if ovpos else 0
        use_acc = s < L and not reads_out
        at_depth: dict[int, list[str]] = {}
        for vp, cond, _ in pc.guards:
            at_depth.setdefault(max(vp) + 1 if vp else 0, []).append(cond)
        load, store = pc.load_acc(err), pc.store_acc(err)

        def nest(d: int, ind: int) -> None:
            for cond in at_depth.get(d, []):
                lines.append((ind, f"if {cond}:"))
                ind += 1
            start = use_acc and d == s
            if start:
                lines.extend((ind, x) for x in pc.out_lines + load)
            if d == L:
                lines.extend((ind, x) for x in (pc.ebody_lines if err else pc.body_lines))
                step = pc.step(err)
                if not use_acc:
                    pre = pc.out_lines + (load if k.op != "=" or err else [])
                    step = [(0, x) for x in pre] + step + [(0, x) for x in store]
                lines.extend((ind + di, x) for di, x in step)
            else:
                lines.append((ind, f"for v{d} in range(n{d}):"))
                nest(d + 1, ind + 1)
            if start:
                lines.extend((ind, x) for x in store)

        nest(0, 1)
        lines.append((1, "return"))
        return lines

    def _sample_lines(self, pc: _Pieces) -> list[tuple[int, str]]:
        """(indent, line) of ``sample``: one output point per row of pts, looping over reduce
        vars only; its value, the magnitude of what it combined (``mags``: sum of ``|term|``
        for ``+=``, product for ``*=``, largest for max/min) and its error bound (``errs``)."""
        k = self.k
        ovpos = [self.pos[v] for v in k.out_vars]
        rvpos = [self.pos[v] for v in k.reduce_vars]
        op = k.op
        lines: list[tuple[int, str]] = [(1, p) for p in pc.prelude]
        lines.append((1, "for p in range(pts.shape[0]):"))
        for j, i in enumerate(ovpos):
            lines.append((2, f"v{i} = pts[p, {j}]"))
        lines.extend((2, x) for x in pc.out_lines)
        if k.init == "identity" and op != "=":
            lines += [(2, f"acc = {_IDENT_SRC[op]}"), (2, "eacc = _ZERO"),
                      (2, "mag = _ONE" if op == "*=" else "mag = _ZERO")]
        else:
            lines += [(2, f"acc = {pc.out_ref}"), (2, f"eacc = E{pc.out_ref}"), (2, "mag = np.abs(acc)")]
        rorder = {p: j for j, p in enumerate(rvpos)}
        sdepth: dict[int, list[str]] = {}
        for vp, cond, _ in pc.guards:
            rv = [rorder[p] for p in vp if p in rorder]
            sdepth.setdefault(max(rv) + 1 if rv else 0, []).append(cond)

        def snest(d: int, ind: int) -> None:
            for cond in sdepth.get(d, []):
                lines.append((ind, f"if {cond}:"))
                ind += 1
            if d == len(rvpos):
                lines.extend((ind, x) for x in pc.ebody_lines)
                lines.extend((ind + di, x) for di, x in pc.step(True))
            else:
                lines.append((ind, f"for v{rvpos[d]} in range(n{rvpos[d]}):"))
                snest(d + 1, ind + 1)

        snest(0, 2)
        lines.append((2, "vals[p] = acc"))
        lines.append((2, "mags[p] = np.abs(acc)" if op == "=" else "mags[p] = mag"))
        lines.append((2, "errs[p] = eacc + ep0 * mag" if op == "+=" else "errs[p] = eacc"))
        lines.append((1, "return"))
        return lines


@functools.lru_cache(maxsize=4096)
def kernel_plan(k: Kernel, checked: bool, flagged: frozenset[str] = frozenset(),
                native: frozenset[str] = frozenset()) -> KernelPlan:
    """The generated source and arguments of ``k`` (``checked``: with bounds checks;
    ``flagged``: inputs whose error bounds ``run_err`` and ``sample`` read; ``native``: float32
    inputs read as they are, each value converted on load), cached."""
    return _Gen(k, checked, flagged, native).build()


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

