"""Affine Loop IR, object form (docs/architecture.md §3).

A *kernel* is one perfect loop nest with a single statement
``Out[idx] op= f(In1[idx1], ...)`` whose indices are affine in the loop variables.
An *op* groups the kernels one framework op (one ATen node) launches; the kernels of
an op share its buffer, so only the op's inputs and outputs cost DRAM traffic in the
unfused model. A *program* is the ops of one entry in execution order plus the
tensors between them (the composition layer: views carry no arithmetic).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

# Scalar vocabulary: name -> (arity, is_transcendental). Arity -1 means variadic.
SCALAR_FUNCS: dict[str, tuple[int, bool]] = {
    "add": (2, False), "sub": (2, False), "mul": (2, False), "div": (2, False),
    "neg": (1, False), "abs": (1, False), "max": (2, False), "min": (2, False),
    "floor": (1, False), "ceil": (1, False), "round": (1, False), "trunc": (1, False),
    "sign": (1, False), "fmod": (2, False), "remainder": (2, False), "floordiv": (2, False),
    "exp": (1, True), "exp2": (1, True), "expm1": (1, True),
    "log": (1, True), "log2": (1, True), "log1p": (1, True),
    "sqrt": (1, True), "rsqrt": (1, True), "reciprocal": (1, False),
    "tanh": (1, True), "erf": (1, True), "sigmoid": (1, True), "pow": (2, True),
    "sin": (1, True), "cos": (1, True), "tan": (1, True), "atan": (1, True),
    "asin": (1, True), "acos": (1, True), "atan2": (2, True),
    "sinh": (1, True), "cosh": (1, True), "asinh": (1, True), "acosh": (1, True), "atanh": (1, True),
    "where": (3, False),
    "eq": (2, False), "ne": (2, False), "lt": (2, False), "le": (2, False),
    "gt": (2, False), "ge": (2, False),
    "and": (2, False), "or": (2, False), "not": (1, False), "xor": (2, False),
    # two's-complement integer bit operations on the (integral) operand values; shr is
    # arithmetic (sign-extending) like torch's >> on signed types
    "band": (2, False), "bor": (2, False), "bxor": (2, False), "bnot": (1, False),
    "shl": (2, False), "shr": (2, False),
    "isnan": (1, False), "isinf": (1, False),
    "cast_f64": (1, False), "cast_f32": (1, False), "cast_f16": (1, False),
    "cast_bf16": (1, False), "cast_f8": (1, False), "cast_i64": (1, False),
    "cast_i32": (1, False), "cast_i8": (1, False), "cast_u8": (1, False),
    "cast_bool": (1, False),
}
# Functions that cost no arithmetic (selection, casts).
FREE_FUNCS = frozenset({"where", "neg", "abs"} | {f for f in SCALAR_FUNCS if f.startswith("cast_")})

ASSIGN_OPS = ("=", "+=", "*=", "max=", "min=")
UNITS = ("matrix", "vector")


@dataclass(frozen=True)
class Affine:
    """``sum(coef * var) + const`` over loop variables."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def var(name: str, coef: int = 1) -> Affine:
        return Affine(((name, coef),), 0)

    @staticmethod
    def of(value: int) -> Affine:
        return Affine((), int(value))

    def __add__(self, other: Affine | int) -> Affine:
        if isinstance(other, int):
            return Affine(self.terms, self.const + other)
        merged: dict[str, int] = dict(self.terms)
        for v, c in other.terms:
            merged[v] = merged.get(v, 0) + c
        return Affine(tuple((v, c) for v, c in merged.items() if c != 0), self.const + other.const)

    def __mul__(self, k: int) -> Affine:
        return Affine(tuple((v, c * k) for v, c in self.terms if c * k != 0), self.const * k)

    def vars(self) -> set[str]:
        return {v for v, c in self.terms if c}

    def is_var(self) -> str | None:
        """The variable name when the expression is exactly one plain variable."""
        if self.const == 0 and len(self.terms) == 1 and self.terms[0][1] == 1:
            return self.terms[0][0]
        return None

    def bounds(self, extents: Mapping[str, int]) -> tuple[int, int]:
        """Inclusive min and max over the iteration space."""
        lo = hi = self.const
        for v, c in self.terms:
            top = c * (extents[v] - 1)
            lo += min(0, top)
            hi += max(0, top)
        return lo, hi

    def __str__(self) -> str:
        parts: list[str] = []
        for v, c in self.terms:
            if c == 1:
                t = v
            elif c == -1:
                t = f"-{v}"
            else:
                t = f"{c}*{v}"
            parts.append(t)
        if self.const or not parts:
            parts.append(str(self.const))
        out = parts[0]
        for p in parts[1:]:
            out += f" - {p[1:]}" if p.startswith("-") else f" + {p}"
        return out


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Load:
    """A read of a tensor at an affine index (also the output of a kernel)."""

    tensor: str
    index: tuple[Affine, ...]


@dataclass(frozen=True)
class Const:
    """A float constant in a kernel expression."""

    value: float


@dataclass(frozen=True)
class Index:
    """The integer value of an affine index expression (iota, masks such as tril)."""

    expr: Affine


@dataclass(frozen=True)
class Call:
    """A scalar function (from SCALAR_FUNCS) applied to sub-expressions."""

    fn: str
    args: tuple[Expr, ...]


Expr = Load | Const | Index | Call


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of an expression, pre-order."""
    yield expr
    if isinstance(expr, Call):
        for a in expr.args:
            yield from walk(a)


def loads(expr: Expr) -> list[Load]:
    """The tensor reads of an expression, in pre-order."""
    return [e for e in walk(expr) if isinstance(e, Load)]


def map_loads(expr: Expr, f: Callable[[Load], Load]) -> Expr:
    """``expr`` with every tensor read ``ld`` replaced by ``f(ld)``."""
    if isinstance(expr, Load):
        return f(expr)
    if isinstance(expr, Call):
        return Call(expr.fn, tuple(map_loads(x, f) for x in expr.args))
    return expr


def rename_loads(expr: Expr, rename: Callable[[str], str]) -> Expr:
    """``expr`` with every tensor read renamed (a loop step's tensors onto another step's)."""
    return map_loads(expr, lambda ld: Load(rename(ld.tensor), ld.index))


def call(fn: str, *args: Expr | float | int) -> Call:
    """Build a call, wrapping Python numbers as constants."""
    return Call(fn, tuple(a if isinstance(a, (Load, Const, Index, Call)) else Const(float(a)) for a in args))


# ---------------------------------------------------------------- kernels


@dataclass(frozen=True)
class Guard:
    """``lo <= expr < hi``: padding and triangular masks, never a branch on data."""

    expr: Affine
    lo: int | None
    hi: int | None


@dataclass(frozen=True)
class TensorType:
    """Shape and dtype of a tensor of a program."""

    shape: tuple[int, ...]
    dtype: str  # canonical torch-style name: float32, bfloat16, int64, ...

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


@dataclass(frozen=True)
class Kernel:
    """One perfect loop nest with one statement ``out[idx] op= expr``."""

    name: str
    loops: tuple[tuple[str, int], ...]
    out: Load
    op: str
    expr: Expr
    guards: tuple[Guard, ...] = ()
    init: str = "identity"  # "identity": reductions start from op's identity; "keep": accumulate onto out
    unit: str = "vector"  # "matrix" for multiply-accumulate contractions on matrix units

    @property
    def extents(self) -> dict[str, int]:
        return dict(self.loops)

    @property
    def points(self) -> int:
        n = 1
        for _, e in self.loops:
            n *= e
        return n

    @property
    def out_vars(self) -> list[str]:
        seen: set[str] = set()
        for a in self.out.index:
            seen |= a.vars()
        return [v for v, _ in self.loops if v in seen]

    @property
    def reduce_vars(self) -> list[str]:
        ov = set(self.out_vars)
        return [v for v, _ in self.loops if v not in ov]

    def inputs(self) -> list[str]:
        names: list[str] = []
        for ld in loads(self.expr):
            if ld.tensor not in names:
                names.append(ld.tensor)
        return names


def rename_kernel(k: Kernel, rename: Callable[[str], str]) -> Kernel:
    """``k`` with its output and every read renamed (see :func:`rename_loads`)."""
    return replace(k, out=Load(rename(k.out.tensor), k.out.index), expr=rename_loads(k.expr, rename))


@dataclass
class Op:
    """One framework op: what eager mode launches (roughly) as one kernel."""

    id: str
    target: str  # e.g. "aten.addmm.default"
    line: int | None
    inputs: list[str]  # tensor names read (after resolving views)
    outputs: list[str]
    kernels: list[Kernel] = field(default_factory=list)
    kind: str = "compute"  # "compute" | "view" | "gather"
    # For "view" and "gather" ops: the composition-layer call, e.g. ("permute", (1, 0)),
    # ("reshape", (8, 64)), ("expand", (4, 8)), ("slice", dim, start, stop, step),
    # ("index_select", dim). Executed with numpy; views cost no traffic, gathers do.
    call: tuple | None = None
    note: str = ""
    # How many times the op runs per call of the entry (a loop body's trip count); its
    # counts and unfused bytes scale by it. Loop bodies are emitted once, never unrolled.
    repeat: int = 1
    # Which part of a training step the op belongs to (docs/training.md): "forward",
    # "backward" (attributed to the forward line it differentiates) or "optimizer".
    # Inference programs are all "forward".
    phase: str = "forward"


@dataclass
class Program:
    """The ops of one entry in execution order and the tensors between them."""

    name: str
    tensors: dict[str, TensorType] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # user inputs
    params: list[str] = field(default_factory=list)  # weights, buffers, constants
    # the module parameters among ``params`` whose values the golden run may draw itself
    # (verify/core.lazy_weights: large ones, drawn at their first use; inference only)
    weights: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    # view tensor -> the tensor it is a view of; views share storage with their base
    views: dict[str, str] = field(default_factory=dict)
    # distinct elements behind a tensor where fewer than numel (expand/broadcast views)
    unique: dict[str, int] = field(default_factory=dict)

    def base(self, name: str) -> str:
        while name in self.views:
            name = self.views[name]
        return name

    def unique_numel(self, name: str) -> int:
        return self.unique.get(name, self.tensors[name].numel)


IDENTITY = {"+=": 0.0, "*=": 1.0, "max=": float("-inf"), "min=": float("inf")}
