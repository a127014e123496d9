"""Validator for the Affine Loop IR (docs/architecture.md §3).

``validate_kernel`` checks one kernel against the tensor types it touches;
``validate_program`` checks a whole program (tensors, roles, views, ops and the
data flow between an op's kernels). Both raise :class:`IRValidationError` whose
message names the kernel (and op) and says what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping

from solar_lsp.ir.core import (
    ASSIGN_OPS,
    SCALAR_FUNCS,
    UNITS,
    Affine,
    Call,
    Const,
    Guard,
    Index,
    Kernel,
    Load,
    Op,
    Program,
    TensorType,
    walk,
)

INITS = ("identity", "keep")
OP_KINDS = ("compute", "view", "gather", "alloc")  # alloc: torch.empty and friends


class IRValidationError(ValueError):
    """An IR object that violates the rules of the Affine Loop IR."""


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _norm(a: Affine) -> tuple[tuple[tuple[str, int], ...], int]:
    """Canonical form of an affine expression (merged, sorted, zero terms dropped)."""
    merged: dict[str, int] = {}
    for v, c in a.terms:
        merged[v] = merged.get(v, 0) + c
    return tuple(sorted((v, c) for v, c in merged.items() if c)), a.const


def _fmt_load(ld: Load) -> str:
    return f"{ld.tensor}[{', '.join(str(a) for a in ld.index)}]"


def _check_affine(a: object, what: str, loop_vars: list[str], fail) -> None:
    if not isinstance(a, Affine):
        fail(f"{what} is not an Affine expression (got {type(a).__name__})")
    ok = _is_int(a.const) and isinstance(a.terms, tuple) and all(
        isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str) and _is_int(t[1])
        for t in a.terms
    )
    if not ok:
        fail(f"{what} is not affine in the loop variables (integer coefficients required)")
    for v, _c in a.terms:
        if v not in loop_vars:
            loops = ", ".join(loop_vars) or "none"
            fail(f"{what} uses {v!r}, which is not a loop variable of the kernel (loops: {loops})")


def _single_var(a: Affine) -> tuple[str, int] | None:
    """``(v, c)`` when ``a`` is ``c*v + const`` with one variable, else None."""
    terms = _norm(a)[0]
    return terms[0] if len(terms) == 1 else None


def recurrence_var(k: Kernel) -> str | None:
    """The loop variable a kernel carries a recurrence along, or None.

    A kernel may read its own output only (a) at exactly the point it writes, with op '='
    (an in-place update of what an earlier kernel left), or (b) at an element written
    strictly earlier in loop order: some output dim is ``c*v + k`` and the read there is
    ``c*v + k - s`` (``s > 0``, a multiple of ``c > 0``), and every loop variable before
    ``v`` is pinned (read and written at the same plain index). Then every iteration that
    writes the element read runs earlier (``out[b, i+1] = out[b, i] + x[b, i+1]``, or an
    RNN's ``h[t+1, j] += W[j, k] * h[t, k]``). Such a kernel must execute in full, in order.
    Raises :class:`IRValidationError` for any other read of the output."""
    order = [v for v, _ in k.loops]
    carried: str | None = None
    for ld in (n for n in walk(k.expr) if isinstance(n, Load) and n.tensor == k.out.tensor):
        if len(ld.index) != len(k.out.index):
            raise IRValidationError(f"kernel {k.name!r}: reads its output with the wrong rank")
        if all(_norm(r) == _norm(w) for r, w in zip(ld.index, k.out.index)):
            if k.op == "=":
                continue  # case (a)
            raise IRValidationError(
                f"kernel {k.name!r}: op {k.op!r} reads its own output at the point it updates")
        pinned = {sv[0] for r, w in zip(ld.index, k.out.index)
                  if _norm(r) == _norm(w) and (sv := _single_var(w)) and sv[1] != 0}
        found = None
        for r, w in zip(ld.index, k.out.index):
            sv = _single_var(w)
            if sv is None or _norm(r)[0] != _norm(w)[0]:
                continue
            v, c = sv
            s = w.const - r.const
            if c > 0 and s > 0 and s % c == 0 and all(u in pinned for u in order[:order.index(v)]):
                found = v
                break
        if found is None:
            raise IRValidationError(
                f"kernel {k.name!r}: reads its own output at {_fmt_load(ld)}, which is not "
                f"written strictly earlier in loop order than {_fmt_load(k.out)} "
                "(a recurrence reads out[.., v - s, ..] along one variable v, with the loop "
                "variables before v held fixed)")
        if carried is not None and carried != found:
            raise IRValidationError(
                f"kernel {k.name!r}: recurrences along both {carried!r} and {found!r}")
        carried = found
    return carried


def validate_kernel(k: Kernel, tensors: Mapping[str, TensorType]) -> None:
    """Raise :class:`IRValidationError` unless ``k`` is a well-formed kernel over ``tensors``."""
    name = getattr(k, "name", "?")

    def fail(msg: str):
        raise IRValidationError(f"kernel {name!r}: {msg}")

    if not isinstance(k, Kernel):
        fail(f"not a Kernel (got {type(k).__name__})")
    loop_vars = _check_loops(k, fail)
    _check_statement_form(k, fail)
    nodes = list(walk(k.expr))
    _check_nodes(nodes, fail)
    all_loads = [k.out] + [n for n in nodes if isinstance(n, Load)]
    _check_indices(k, all_loads, nodes, loop_vars, fail)
    _check_ranks(k, all_loads, tensors, fail)

    # -- reads of the kernel's own output: in-place update or a recurrence, nothing else
    recurrence_var(k)

    # -- '=' needs every loop variable in the output index
    if k.op == "=" and k.reduce_vars:
        rv = ", ".join(repr(v) for v in k.reduce_vars)
        fail(
            f"op '=' but loop variable(s) {rv} do not appear in the output index "
            f"{_fmt_load(k.out)}; last write wins is ambiguous (use +=, *=, max= or min= "
            "for a reduction)"
        )
    if k.unit == "matrix":
        _check_matrix(k, fail)
    _check_bounds(k, all_loads, tensors, fail)


def _check_loops(k: Kernel, fail) -> list[str]:
    """The loop variables, in order, once each loop is a (fresh identifier, positive int)."""
    loop_vars: list[str] = []
    for entry in k.loops:
        if not (isinstance(entry, tuple) and len(entry) == 2):
            fail(f"loop entry {entry!r} is not a (variable, extent) pair")
        v, e = entry
        if not (isinstance(v, str) and v.isidentifier()):
            fail(f"loop variable {v!r} is not an identifier")
        if v in loop_vars:
            fail(f"loop variable {v!r} is bound twice")
        if not _is_int(e) or e <= 0:
            fail(f"loop {v!r} has extent {e!r}; extents must be positive ints")
        loop_vars.append(v)
    return loop_vars


def _check_statement_form(k: Kernel, fail) -> None:
    """Assignment op, unit and init from the IR's vocabulary, and a Load as the output."""
    if k.op not in ASSIGN_OPS:
        fail(f"assignment op {k.op!r} is not one of {', '.join(ASSIGN_OPS)}")
    if k.unit not in UNITS:
        fail(f"unit {k.unit!r} is not one of {', '.join(UNITS)}")
    if k.init not in INITS:
        fail(f"init {k.init!r} is not one of {', '.join(INITS)}")
    if not isinstance(k.out, Load):
        fail(f"output is not a Load (got {type(k.out).__name__})")


def _check_nodes(nodes: list, fail) -> None:
    """Expression nodes, vocabulary, arity."""
    for node in nodes:
        if isinstance(node, Call):
            if node.fn not in SCALAR_FUNCS:
                allowed = ", ".join(sorted(SCALAR_FUNCS))
                fail(f"scalar function {node.fn!r} is not in the IR vocabulary (allowed: {allowed})")
            arity = SCALAR_FUNCS[node.fn][0]
            n = len(node.args)
            if arity >= 0 and n != arity:
                fail(f"scalar function {node.fn!r} takes {arity} argument(s), got {n}")
            if arity < 0 and n < 1:
                fail(f"scalar function {node.fn!r} needs at least one argument")
        elif isinstance(node, Const):
            if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
                fail(f"constant {node.value!r} is not a number")
        elif not isinstance(node, (Load, Index)):
            fail(f"unknown expression node {node!r}")


def _check_indices(k: Kernel, all_loads: list[Load], nodes: list, loop_vars: list[str], fail) -> None:
    """Affine indices, idx() and guards use only loop variables; guard bounds are ints."""
    for ld in all_loads:
        for d, a in enumerate(ld.index):
            text = str(a) if isinstance(a, Affine) else repr(a)
            _check_affine(a, f"index {text!r} of {ld.tensor!r} (dim {d})", loop_vars, fail)
    for node in nodes:
        if isinstance(node, Index):
            text = str(node.expr) if isinstance(node.expr, Affine) else repr(node.expr)
            _check_affine(node.expr, f"idx({text})", loop_vars, fail)
    for g in k.guards:
        if not isinstance(g, Guard):
            fail(f"guard {g!r} is not a Guard")
        text = str(g.expr) if isinstance(g.expr, Affine) else repr(g.expr)
        _check_affine(g.expr, f"guard on {text!r}", loop_vars, fail)
        for b in (g.lo, g.hi):
            if b is not None and not _is_int(b):
                fail(f"guard on {text!r} has a non-integer bound {b!r}")
        if g.lo is not None and g.hi is not None and not g.lo < g.hi:
            fail(f"guard {g.lo} <= {text} < {g.hi} is empty (needs lo < hi)")


def _check_ranks(k: Kernel, all_loads: list[Load], tensors: Mapping[str, TensorType], fail) -> None:
    """Tensors exist with matching rank."""
    for ld in all_loads:
        if ld.tensor not in tensors:
            role = "output" if ld is k.out else "input"
            fail(f"{role} tensor {ld.tensor!r} is not declared")
        rank = len(tensors[ld.tensor].shape)
        if len(ld.index) != rank:
            fail(f"{_fmt_load(ld)} indexes {len(ld.index)} dim(s) but {ld.tensor!r} has rank {rank}")


def _check_matrix(k: Kernel, fail) -> None:
    """Matrix units run `out += a * b` contractions only."""
    def operand_ok(e: object) -> bool:
        if isinstance(e, Call) and e.fn.startswith("cast_") and len(e.args) == 1:
            e = e.args[0]
        return isinstance(e, Load)

    e = k.expr
    if not (
        k.op == "+="
        and isinstance(e, Call)
        and e.fn == "mul"
        and len(e.args) == 2
        and all(operand_ok(a) for a in e.args)
    ):
        fail(
            "a matrix kernel must have the form `out[...] += a[...] * b[...]` "
            f"(op '+=', expr mul(Load, Load), each optionally cast_*); got op {k.op!r}"
        )
    if not k.reduce_vars:
        fail("a matrix kernel needs at least one reduction variable")


def _check_bounds(k: Kernel, all_loads: list[Load], tensors: Mapping[str, TensorType], fail) -> None:
    """Every access stays inside its tensor unless guarded."""
    extents = dict(k.loops)
    guard_ranges: dict[object, list[Guard]] = {}
    for g in k.guards:
        guard_ranges.setdefault(_norm(g.expr), []).append(g)
    for ld in all_loads:
        shape = tensors[ld.tensor].shape
        for d, a in enumerate(ld.index):
            lo, hi = a.bounds(extents)
            for g in guard_ranges.get(_norm(a), ()):
                if g.lo is not None:
                    lo = max(lo, g.lo)
                if g.hi is not None:
                    hi = min(hi, g.hi - 1)
            if lo > hi:
                continue  # the guards exclude every point
            if lo < 0 or hi >= shape[d]:
                fail(
                    f"access {_fmt_load(ld)} is out of bounds: dim {d} of {ld.tensor!r} "
                    f"(extent {shape[d]}) is indexed by {str(a)!r} over [{lo}, {hi}]; "
                    f"add a guard `0 <= {a} < {shape[d]}` if this is padding"
                )


def validate_program(p: Program) -> None:
    """Raise :class:`IRValidationError` unless ``p`` is a well-formed program."""

    def fail(msg: str):
        raise IRValidationError(f"program {p.name!r}: {msg}")

    _check_tensors(p, fail)
    ids: set[str] = set()
    for op in p.ops:
        if op.id in ids:
            fail(f"op id {op.id!r} is used twice")
        ids.add(op.id)
        _check_op(p, op)


def _check_tensors(p: Program, fail) -> None:
    """Tensor types, roles, views (acyclic) and unique counts refer to declared tensors."""
    for t, ty in p.tensors.items():
        if not isinstance(ty, TensorType):
            fail(f"tensor {t!r} has type {ty!r}, not a TensorType")
        if not isinstance(ty.shape, tuple) or not all(_is_int(s) and s >= 0 for s in ty.shape):
            fail(f"tensor {t!r} has shape {ty.shape!r}; dims must be non-negative ints")
        if not isinstance(ty.dtype, str) or not ty.dtype:
            fail(f"tensor {t!r} has dtype {ty.dtype!r}")
    for role in ("inputs", "params", "outputs"):
        for t in getattr(p, role):
            if t not in p.tensors:
                fail(f"{role[:-1]} {t!r} is not a declared tensor")
    for v, b in p.views.items():
        for t in (v, b):
            if t not in p.tensors:
                fail(f"view entry {v!r} -> {b!r}: {t!r} is not a declared tensor")
    for v in p.views:
        seen = {v}
        cur = v
        while cur in p.views:
            cur = p.views[cur]
            if cur in seen:
                fail(f"views form a cycle through {v!r}")
            seen.add(cur)
    for t, n in p.unique.items():
        if t not in p.tensors:
            fail(f"unique-count entry {t!r} is not a declared tensor")
        if not _is_int(n) or n < 0:
            fail(f"unique-count of {t!r} is {n!r}; must be a non-negative int")


def _check_op(p: Program, op: Op) -> None:
    """An op's kind and tensors, its kernels, and that each kernel reads only what the op
    reads, writes, or an earlier kernel of the op wrote."""

    def ofail(msg: str, op=op):
        raise IRValidationError(f"program {p.name!r}: op {op.id!r}: {msg}")

    if op.kind not in OP_KINDS:
        ofail(f"kind {op.kind!r} is not one of {', '.join(OP_KINDS)}")
    for t in op.inputs:
        if t not in p.tensors:
            ofail(f"input tensor {t!r} is not declared")
    for t in op.outputs:
        if t not in p.tensors:
            ofail(f"output tensor {t!r} is not declared")
    visible = set(op.inputs) | set(op.outputs)
    visible_bases = {p.base(t) for t in visible}
    written: set[str] = set()
    for k in op.kernels:
        try:
            validate_kernel(k, p.tensors)
        except IRValidationError as e:
            ofail(str(e))
        for name in k.inputs():
            if name in visible or name in written or p.base(name) in visible_bases:
                continue
            ofail(
                f"kernel {k.name!r}: reads {name!r}, which is neither an input or output "
                "of the op nor written by an earlier kernel of the op"
            )
        written.add(k.out.tensor)
