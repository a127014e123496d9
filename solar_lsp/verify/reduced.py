"""Verification at reduced sizes (docs/sol-model.md "Verification"): when the golden run of an
entry does not fit the memory budget or the verifier's loop-point limits, the *same* lowering is
verified at smaller sizes. The bounds always come from the full size.

What shrinks is what names a size in the user's code: the symbols and literal dims of a shape
pragma (``# solar: B=4, x=f32[B,512]``), or the module-level integer constants a KernelBench
style ``get_inputs()`` reads (``batch_size = 128``). Every such value larger than ``KEEP`` that
is a dim of some tensor of the full program is divided by one factor ``f`` (a power of two, so
divisibility survives), never below a floor; smaller values (kernel sizes, heads, layers) stay.
The reduced program must have the same op sequence with the same kernel forms as the full one.

This module is framework-neutral: the caller re-traces a variant and runs its verifier.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from solar_lsp import units
from solar_lsp.bounds.sol import part_of, parts_by_owner
from solar_lsp.ir.core import Index, Kernel, Op, Program, loads, walk
from solar_lsp.ir.validate import recurrence_var
from solar_lsp.verify.core import FULL_RUN_LIMIT, Verification, golden_bytes
from solar_lsp.verify.op_check import injective
from solar_lsp.verify.stream import peak_bytes

KEEP = 8  # a value up to this is structural (kernel size, heads, layers): it never shrinks
# The smallest a shrunk dim becomes: 2 first; KEEP when that size fails to trace (a conv needs
# room for its kernel); 1 when 2 still does not fit (a batch of one).
FLOOR, FLOOR_IF_FAILED, FLOOR_IF_STUCK = 2, KEEP, 1
TARGET_BYTES = 256 * 2**20  # a reduced golden run aims below this (and the budget): seconds, not minutes
TARGET_SHARE = 20  # a reduced run aims at 1/20 of each loop-point limit
MAX_TRIES = 8  # re-traces one search may take
MAX_FACTOR = 2**20
TARGET_OP_KERNELS = 256  # kernels of one op a reduced run aims at: a recurrence's steps x layers
# How fast each cost falls, at least, with the factor f when guessing the first one: a tensor of
# three shrunk dims, a contraction over three; a recurrence's kernels fall with its steps alone.
GUESS = {"bytes": 3, "op_points": 3, "loop_points": 3, "op_kernels": 1}
# The golden run's tensors (core.golden_bytes) get half the budget: the process itself (~0.33 GB
# RSS with torch loaded) and the framework's temporaries need the rest (KernelBench level1/50, a
# conv whose tensors need 1.35 GB, peaked at 2.9 GB RSS verifying at full size).
BUDGET_SHARE = 2
# A streamed golden run (torch, verify/stream.py) estimates its whole working set; the process
# itself (torch, numba and their code: ~0.35 GB RSS) and the framework's temporaries take the rest.
PROCESS_BYTES = 2**29


@dataclass(frozen=True)
class Limits:
    """What a golden run may take: bytes, loop points of one op run in full, loop replays,
    and kernels in one op (a recurrence unrolled over its steps: re-tracing it takes time)."""

    bytes: float
    op_points: float = FULL_RUN_LIMIT
    loop_points: float = math.inf
    op_kernels: float = math.inf
    streamed: bool = False  # the golden run lets tensors go after their last use (stream.py)

    @staticmethod
    def of_budget(budget_bytes: int, loop_points: float = math.inf, streamed: bool = False) -> Limits:
        """The limits for a memory budget: the golden run's tensors get ``1/BUDGET_SHARE`` of
        it, the rest is left to the process and the framework's own temporaries (a streamed
        run's estimate counts its working set: all but ``PROCESS_BYTES``)."""
        if streamed:
            return Limits(max(budget_bytes - PROCESS_BYTES, budget_bytes / BUDGET_SHARE),
                          FULL_RUN_LIMIT, loop_points, streamed=True)
        return Limits(budget_bytes / BUDGET_SHARE, FULL_RUN_LIMIT, loop_points)

    def target(self) -> Limits:
        """The smaller limits a reduced run aims at, so that it also runs fast."""
        return Limits(min(self.bytes, TARGET_BYTES), self.op_points / TARGET_SHARE,
                      self.loop_points / TARGET_SHARE, TARGET_OP_KERNELS, self.streamed)

    def need(self, p: Program) -> int:
        """The bytes the golden run of ``p`` takes, by this frontend's estimate."""
        return peak_bytes(p) if self.streamed else golden_bytes(p)


@dataclass(frozen=True)
class Cost:
    """What the golden run of a program takes, in the terms of ``Limits``."""

    bytes: float
    op_points: float
    loop_points: float
    op_kernels: float
    # the largest op's full-run points by the verifier's own rule (``op_points``): never more
    # than ``op_points``, which picks the size a reduced run aims at; this one says whether a
    # size can be verified at all (``fits``)
    op_points_exact: float

    def over(self, limits: Limits) -> dict[str, float]:
        """How many times over each limit this is (<= 1: it fits)."""
        return {m: getattr(self, m) / max(getattr(limits, m), 1.0) for m in GUESS}

    def ratio(self, limits: Limits) -> float:
        """How many times over the tightest limit this is."""
        return max(self.over(limits).values())

    def fits(self, limits: Limits) -> bool:
        """Within ``limits``, its largest op counted as the verifier will run it."""
        return dataclasses.replace(self, op_points=self.op_points_exact).ratio(limits) <= 1.0


def _plain_out(k: Kernel) -> bool:
    """Each output index is one distinct loop variable: each point is final on its own."""
    seen = set()
    for a in k.out.index:
        if len(a.terms) != 1 or a.terms[0][1] != 1 or a.terms[0][0] in seen:
            return False
        seen.add(a.terms[0][0])
    return seen == set(k.out_vars)


def _always(k: Kernel) -> bool:
    return True


def op_points(op: Op, sampled: Callable[[Kernel], bool] = _always) -> float:
    """Loop points the verifier runs in full for ``op``: every kernel but the last, and the
    last too when it is a recurrence (never sampled) or ``sampled`` says it is not. By default
    every other last kernel counts as sampled (what a size surely needs); ``_plain_out``
    counts a last kernel whose output index is not plain (an upper estimate, for the size a
    reduced run aims at); ``op_check.injective`` is the verifier's own rule (a grouped conv's
    ``64*g + o`` is sampled), for whether a size can be verified at all."""
    if op.kind != "compute" or not op.kernels:
        return 0.0
    pts = float(sum(k.points for k in op.kernels[:-1]))
    last = op.kernels[-1]
    if recurrence_var(last) is not None or not sampled(last):
        pts += last.points
    return pts


def whole_points(op: Op, parts: dict[str, list[Op]], sampled: Callable[[Kernel], bool] = _always) -> float:
    """:func:`op_points` of ``op`` with its parts' runs (``parts``: bounds.sol.parts_by_owner)."""
    return op_points(op, sampled) + sum(k.points * q.repeat for q in parts.get(op.id, ()) for k in q.kernels)


def cost(p: Program, streamed: bool = False) -> Cost:
    """Bytes of the golden run (the peak of a ``streamed`` one), the largest op's full-run
    points (upper estimate), the loop bodies' replay points, the most kernels of one op."""
    # an op emitted as parts (an RNN layer's loop bodies) is checked whole: its parts' runs count
    # as the owner's, as the unrolled form's kernels did (verify/parts.py)
    parts = parts_by_owner(p)
    whole = [op for op in p.ops if part_of(op) is None]
    worst = max((whole_points(op, parts, _plain_out) for op in whole), default=0.0)
    exact = max((whole_points(op, parts, injective) for op in whole), default=0.0)
    loops = sum(sum(k.points for k in op.kernels) * op.repeat for op in whole if op.repeat > 1)
    kernels = max((len(op.kernels) + sum(len(q.kernels) * q.repeat for q in parts.get(op.id, ()))
                   for op in whole), default=0)
    return Cost(float(peak_bytes(p) if streamed else golden_bytes(p)), worst, float(loops), float(kernels),
                exact)


def too_large(p: Program, limits: Limits) -> str | None:
    """Why the full size cannot be verified (over the budget or a loop-point limit), or None."""
    need = limits.need(p)
    if need > limits.bytes:
        share = (f"the budget less {units.nbytes(PROCESS_BYTES)} for the process" if limits.streamed
                 else f"1/{BUDGET_SHARE} of the verification budget")
        return (f"golden run needs {units.nbytes(need)}, over the {units.nbytes(limits.bytes)} its "
                f"tensors may take ({share})")
    parts = parts_by_owner(p)
    for op in p.ops:
        if whole_points(op, parts) > limits.op_points:
            return (f"{op.id} (line {op.line}) executes {whole_points(op, parts):.2g} loop points, "
                    f"over the verification limit of {limits.op_points:.2g}")
    c = cost(p, limits.streamed)
    if c.loop_points > limits.loop_points:
        return f"replaying its loops takes {c.loop_points:.2g} loop points, over the limit"
    return None


def hit_limit(v: Verification) -> str | None:
    """The reason a verification stopped at a size limit (budget, loop points), or None."""
    if v.status != "unverified":
        return None
    if not v.ops and "budget" in v.detail:
        return v.detail
    for o in v.ops:
        if o.status == "unverified" and "limit" in o.detail:
            return f"{o.op} (line {o.line}): {o.detail}"
    return None


def dims_of(p: Program) -> set[int]:
    """Every extent of every tensor of ``p``: the values a size constant may stand for."""
    return {d for t in p.tensors.values() for d in t.shape}


def shrink(v: int, f: int, floor: int) -> int:
    """``v`` divided by ``f`` (rounded up), not below ``floor``; a value up to KEEP stays."""
    if v <= KEEP:
        return v
    return max(min(floor, v), -(-v // f))


def signature(p: Program) -> list[tuple]:
    """The lowering's shape-free form: each op's kind, target, call and kernel forms."""
    out = []
    for op in p.ops:
        forms = frozenset((re.sub(r"\d+$", "", k.name.removeprefix(op.id)), k.op,
                           len(k.loops)) for k in op.kernels)
        out.append((op.kind, op.target, op.call[0] if op.call else None, forms))
    return out


def _strided(k: Kernel) -> set[int]:
    """Positions of ``k``'s loops whose coefficient an index hides when the loop runs once:
    a loop read with a coefficient other than ±1, or beside another loop in one index position
    (a strided or dilated window, ``2*o + k``), or whose value the kernel computes with."""
    names = [v for v, _ in k.loops]
    out: set[int] = set()
    for ld in [k.out, *loads(k.expr)]:
        for a in ld.index:
            terms = [(v, c) for v, c in a.terms if c]
            for v, c in terms:
                if v in names and (abs(c) != 1 or len(terms) > 1):
                    out.add(names.index(v))
    for e in walk(k.expr):  # a loop's value used as a number (arange's start + i*step)
        if isinstance(e, Index):
            out |= {names.index(v) for v in e.expr.vars() if v in names}
    return out


def collapsed(full: Program, small: Program) -> str | None:
    """What a reduced program no longer checks, or None: a loop read with a stride (or beside
    another loop in one index) that runs more than once at full size and once at the reduced
    size leaves that coefficient untested, e.g. a stride-2 convolution at one output row. The
    programs have equal signatures: their ops and kernels pair up in order."""
    for fo, so in zip(full.ops, small.ops):
        if len(fo.kernels) != len(so.kernels):
            continue  # (a cat's pieces: kernel forms are compared as a set)
        for fk, sk in zip(fo.kernels, so.kernels):
            if len(fk.loops) != len(sk.loops):
                continue
            for i in _strided(fk):
                if fk.loops[i][1] > 1 and sk.loops[i][1] == 1:
                    return (f"loop {fk.loops[i][0]} of {fo.id} (line {fo.line}) runs once, so its "
                            "stride would go unchecked")
    return None


# ------------------------------------------------------------------ where sizes are written


def _int_expr(node: ast.AST) -> int | None:
    """The value of an integer expression over literals only (``2048 * 2``), else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, int) and not isinstance(node.value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int_expr(node.operand)
        return None if v is None else -v
    if not isinstance(node, ast.BinOp):
        return None
    a, b = _int_expr(node.left), _int_expr(node.right)
    if a is None or b is None:
        return None
    if isinstance(node.op, ast.Add):
        return a + b
    if isinstance(node.op, ast.Sub):
        return a - b
    if isinstance(node.op, ast.Mult):
        return a * b
    if isinstance(node.op, ast.FloorDiv) and b != 0:
        return a // b
    if isinstance(node.op, ast.Pow) and 0 <= b <= 64:
        return a**b
    return None


@dataclass(frozen=True)
class Site:
    """One integer written in the source that may size tensors: a named constant, an element
    of a named tuple, or a literal in ``get_inputs()`` / ``get_init_inputs()`` (``name`` "")."""

    key: tuple[int, int, int, int]  # (line, col, end line, end col) of the expression
    name: str
    value: int


def _key(node: ast.AST) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0)


def module_sites(tree: ast.Module) -> list[Site]:
    """Module-level ``NAME = <int>`` (and tuples of ints) and the int literals written in
    ``get_inputs()`` and ``get_init_inputs()``: where a KernelBench-style file writes its sizes."""
    sites: list[Site] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else []
        if len(targets) == 1 and isinstance(targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple) \
                and len(targets[0].elts) == len(node.value.elts):  # D, H, W = 16, 32, 32
            sites += [Site(_key(e), t.id, _int_expr(e)) for t, e in zip(targets[0].elts, node.value.elts)
                      if isinstance(t, ast.Name) and _int_expr(e) is not None]
            continue
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names or len(names) != len(targets):
            continue
        value = node.value
        if _int_expr(value) is not None:
            sites.append(Site(_key(value), "=".join(names), _int_expr(value)))
        elif isinstance(value, (ast.Tuple, ast.List)):
            sites += [Site(_key(e), f"{names[0]}[{i}]", _int_expr(e)) for i, e in enumerate(value.elts)
                      if _int_expr(e) is not None]
    for node in tree.body:  # the sizes and constructor arguments these two write out
        if isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"):
            sites += [Site(_key(c), "", c.value) for c in ast.walk(node)
                      if isinstance(c, ast.Constant) and _int_expr(c) is not None]
    return sites


class _Replace(ast.NodeTransformer):
    def __init__(self, values: dict[tuple[int, int, int, int], int]):
        self.values = values

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and getattr(node, "lineno", None) is not None \
                and _key(node) in self.values:
            return ast.copy_location(ast.Constant(self.values[_key(node)]), node)
        return super().visit(node)


def rewrite_module(source: str, path: str, values: dict[tuple[int, int, int, int], int]) -> ast.Module:
    """``source`` with the expressions at the given keys replaced by integers (lines kept)."""
    tree = ast.parse(source, filename=path)
    return ast.fix_missing_locations(_Replace(values).visit(tree))


def shrink_module(sites: list[Site], dims: set[int], f: int, floor: int, anonymous: bool
                  ) -> tuple[dict, dict[str, int]] | None:
    """New values by site key, and the named ones by name; None when nothing would change."""
    values: dict[tuple[int, int, int, int], int] = {}
    named: dict[str, int] = {}
    for s in sites:
        if s.value not in dims or (not s.name and not anonymous):
            continue
        new = shrink(s.value, f, floor)
        if new != s.value:
            values[s.key] = new
            if s.name:
                named[s.name] = new
    return (values, named) if values else None


# ------------------------------------------------------------------ pragmas


def _split(text: str) -> list[str]:
    """Items of a pragma (or of a shape) at the commas outside brackets and strings."""
    items, depth, cur, quote = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        else:
            depth += 1 if ch in "[({" else -1 if ch in "])}" else 0
        if ch == "," and depth == 0 and not quote:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    return [s.strip() for s in items + [cur] if s.strip()]


_ITEM = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)\s*(.*?)\s*$", re.DOTALL)
_TENSOR = re.compile(r"^([A-Za-z_][\w.]*)\s*\[(.*)\]$", re.DOTALL)
_INT_SCALAR = re.compile(r"^int\s*:\s*(.*)$", re.DOTALL)


def _literal(text: str) -> int | None:
    try:
        return _int_expr(ast.parse(text.strip(), mode="eval").body)
    except SyntaxError:
        return None


def shrink_pragma(text: str, dims: set[int], f: int, floor: int, init: bool = False
                  ) -> tuple[str, dict[str, int]] | None:
    """The pragma with its size symbols (``B=4096``, ``n=int:512``) and literal shape dims
    (``x=f32[4096, 64]``) shrunk, and with ``init`` the integers of ``init=(...)`` too; the
    renamed symbols; None when nothing would change."""
    text = re.sub(r"^\s*#?\s*solar\s*:\s*", "", text)

    def new(v: int | None) -> int | None:
        return None if v is None or v not in dims or shrink(v, f, floor) == v else shrink(v, f, floor)

    out, named = [], {}
    for item in _split(text):
        m = _ITEM.match(item)
        name, value = (m.group(1), m.group(2)) if m else ("", "")
        tensor, scalar = _TENSOR.match(value), _INT_SCALAR.match(value)
        if name == "init":
            out.append(f"init={_shrink_literals(value, new)}" if init else item)
        elif tensor:
            dims_in = [d.strip() for d in _split(tensor.group(2))]
            shape = [str(new(_literal(d)) or d) for d in dims_in]
            out.append(f"{name}={tensor.group(1)}[{', '.join(shape)}]" if shape != dims_in else item)
        elif m and new(_literal(scalar.group(1) if scalar else value)) is not None:
            named[name] = new(_literal(scalar.group(1) if scalar else value))
            out.append(f"{name}=int:{named[name]}" if scalar else f"{name}={named[name]}")
        else:
            out.append(item)
    joined = ", ".join(out)
    return (joined, named) if joined != ", ".join(_split(text)) else None


def _shrink_literals(value: str, new: Callable[[int | None], int | None]) -> str:
    """An ``init=`` value with each integer literal that is a dim shrunk."""
    try:
        tree = ast.parse(value.strip(), mode="eval")
    except SyntaxError:
        return value
    keys = {_key(n): new(n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and _int_expr(n) is not None and new(n.value) is not None}
    return ast.unparse(_Replace(keys).visit(tree)) if keys else value


def shrink_dims(dims: dict[str, int], used: set[int], f: int, floor: int) -> dict[str, int]:
    """Config dims (``--dim``) shrunk like the pragma's own symbols."""
    return {k: (shrink(v, f, floor) if v in used else v) for k, v in dims.items()}


# ------------------------------------------------------------------ the search


@dataclass
class Found:
    """A reduced variant that traced to the same lowering and fits: what the caller verifies."""

    named: dict[str, int]
    program: Program
    payload: Any
    tries: int


Variant = Callable[[int, int, bool], tuple[Any, dict[str, int]] | None]
Retrace = Callable[[Any], tuple[Program, Any] | str]


def _first_factor(full: Cost, target: Limits) -> int:
    """A first factor from how far over the target the full size is (``GUESS`` exponents)."""
    steps = [math.ceil(math.log2(r) / GUESS[m]) for m, r in full.over(target).items() if r > 1.0]
    return 2 ** max([1] + steps)


def _next_factor(f: int, full: Cost, got: Cost, target: Limits) -> int | None:
    """A larger factor from how each cost still over the target fell from ``full`` to ``got``
    at ``f``; None when one of them did not fall."""
    step = 1
    for m, over in got.over(target).items():
        if over <= 1.0:
            continue
        fell = getattr(full, m) / max(getattr(got, m), 1e-300)
        if fell <= 1.01 or f <= 1:
            return None
        exponent = max(math.log(fell) / math.log(f), 0.5)
        step = max(step, 2 ** max(1, math.ceil(math.log2(over ** (1.0 / exponent)))))
    return f * step if 1 < step and f * step <= MAX_FACTOR else None


@dataclass
class _Search:
    """The state of one search: the full program's cost and lowering, the tries so far, the
    first variant that fits the limits but not the target, and why none fitted."""

    full: Program
    limits: Limits
    variant: Variant
    retrace: Retrace
    tries: int = 0
    best: Found | None = None
    why: str = "no size constant of the entry names a dim of its tensors"
    factor: int = 1

    def descend(self, anon: bool, floor: int, start: int | None = None) -> Found | str:
        """Larger factors from ``start`` (the first guess) until a variant fits the target: the
        variant, or "failed" (it did not trace to the same lowering) or "stuck" (no larger
        factor changes it, or it does not fit)."""
        target, want = self.limits.target(), signature(self.full)
        full_cost = cost(self.full, self.limits.streamed)
        f: int | None = start or _first_factor(full_cost, target)
        last = None
        while self.tries < MAX_TRIES and f is not None:
            self.factor = f
            made = self.variant(f, floor, anon)
            if made is None or made[0] == last:
                return "stuck"
            spec, named = made
            last = spec
            self.tries += 1
            got = self.retrace(spec)
            if isinstance(got, str) or signature(got[0]) != want:
                self.why = (f"at a reduced size: {got}" if isinstance(got, str) else "at a reduced "
                            "size the lowering differs (the code depends on the sizes)")
                return "failed"
            lost = collapsed(self.full, got[0]) if floor > 1 else None
            if lost is not None:
                self.why = f"at a reduced size {lost}"
                return "failed"
            c = cost(got[0], self.limits.streamed)
            if c.ratio(target) <= 1.0:
                return Found(named, got[0], got[1], self.tries)
            if c.fits(self.limits) and self.best is None:
                self.best = Found(named, got[0], got[1], self.tries)
            f = _next_factor(f, full_cost, c, target)
            if not c.fits(self.limits):
                where = ", ".join(f"{k}={v}" for k, v in named.items()) or "a reduced size"
                self.why = (f"no reduced size fits the limits; at {where} the golden run needs "
                            f"{units.nbytes(c.bytes)} and {c.op_points_exact:.2g} loop points in one op")
        return "stuck"


def search(full: Program, limits: Limits, variant: Variant, retrace: Retrace,
           anonymous: bool = True) -> Found | str:
    """The first reduced variant that traces to the same lowering and fits the target limits
    (else the first that fits ``limits``); the reason there is none otherwise. Unnamed
    literals (``anonymous``) shrink in a first round, then stay."""
    s = _Search(full, limits, variant, retrace)
    for anon in ((True, False) if anonymous else (False,)):
        got = s.descend(anon, FLOOR)
        failed_at = s.factor
        if got == "failed" and s.best is None:
            got = s.descend(anon, FLOOR_IF_FAILED)
        elif got == "stuck" and s.best is None:  # on from where the floor of 2 stopped
            got = s.descend(anon, FLOOR_IF_STUCK, s.factor)
        while got == "failed" and s.best is None and failed_at > 2:
            # a smaller factor keeps more divisibility (480 / 16 = 30 breaks a `% 4` check
            # that 480 / 8 = 60 passes): try it before giving up
            failed_at //= 2
            got = s.descend(anon, FLOOR, failed_at)
        if isinstance(got, Found):
            return got
        if s.best is not None:
            return s.best
    return s.why


def annotate(v: dict, found: Found, inputs: list[dict], full_reason: str) -> dict:
    """The reduced run's verification JSON, saying at which sizes it ran and why."""
    where = ", ".join(f"{k}={val}" for k, val in found.named.items())
    shapes = ", ".join(f"{i['name']}{list(i['shape'])}" for i in inputs)
    at = f"{where} ({shapes})" if where else shapes
    out = dict(v)
    out["detail"] = (f"at reduced size {at}: {v['detail']}; the full size is not run ({full_reason}); "
                     f"bounds are for the full size")
    out["reduced"] = dict(found.named)
    out["reduced_inputs"] = inputs
    out["full_size"] = full_reason
    return out
