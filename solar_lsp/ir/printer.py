"""Printer of the Affine Loop IR text form (grammar in :mod:`solar_lsp.ir.text`): IR objects to
the restricted, executable Python subset that ``solar_lsp.ir.parse`` reads back."""

from __future__ import annotations

import json
import keyword
import math
from collections.abc import Mapping

from solar_lsp.ir.core import (
    Call,
    Const,
    Expr,
    Guard,
    Index,
    Kernel,
    Load,
    Op,
    Program,
    TensorType,
)
from solar_lsp.ir.dtype_names import DTYPE_SHORT

__all__ = ["print_kernel", "print_program"]

_INFIX = {"add": ("+", 1), "sub": ("-", 1), "mul": ("*", 2), "div": ("/", 2)}
_ATOM = 3


def _ident(name: str) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _need_ident(name: str, what: str) -> str:
    if not _ident(name):
        raise ValueError(f"cannot print {what} {name!r}: not a Python identifier")
    return name


def _q(s: str) -> str:
    """A double-quoted Python string literal."""
    return json.dumps(s)


def _fmt_const(v: float) -> str:
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def _fmt_lit(v: object) -> str:
    """A Python literal for the values an ``Op.call`` may hold."""
    if isinstance(v, str):
        return _q(v)
    if v is None or isinstance(v, (bool, int)):
        return repr(v)
    if isinstance(v, float):
        return _fmt_const(v)
    if isinstance(v, tuple):
        if len(v) == 1:
            return f"({_fmt_lit(v[0])},)"
        return "(" + ", ".join(_fmt_lit(x) for x in v) + ")"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt_lit(x) for x in v) + "]"
    raise ValueError(f"cannot print {v!r} as a literal in the IR text form")


def _fmt_dtype(dtype: str) -> str:
    short = DTYPE_SHORT.get(dtype, dtype)
    return _need_ident(short, "dtype")


def _fmt_type(ty: TensorType) -> str:
    shape = ", ".join(str(s) for s in ty.shape) if ty.shape else "()"
    return f"{_fmt_dtype(ty.dtype)}[{shape}]"


def _fmt_load(ld: Load) -> str:
    _need_ident(ld.tensor, "tensor name")
    if not ld.index:
        return f"{ld.tensor}[()]"
    return f"{ld.tensor}[{', '.join(str(a) for a in ld.index)}]"


def _fn_name(fn: str) -> str:
    if keyword.iskeyword(fn):
        return fn + "_"
    return _need_ident(fn, "scalar function")


def _fmt_expr(e: Expr) -> tuple[str, int]:
    """Text and precedence (1: + -, 2: * /, 3: atom)."""
    if isinstance(e, Load):
        return _fmt_load(e), _ATOM
    if isinstance(e, Const):
        return _fmt_const(e.value), _ATOM
    if isinstance(e, Index):
        return f"idx({e.expr})", _ATOM
    if isinstance(e, Call):
        if e.fn in _INFIX and len(e.args) == 2:
            sym, prec = _INFIX[e.fn]
            (ls, lp), (rs, rp) = _fmt_expr(e.args[0]), _fmt_expr(e.args[1])
            if lp < prec:
                ls = f"({ls})"
            if rp <= prec:
                rs = f"({rs})"
            return f"{ls} {sym} {rs}", prec
        args = ", ".join(_fmt_expr(a)[0] for a in e.args)
        return f"{_fn_name(e.fn)}({args})", _ATOM
    raise ValueError(f"cannot print expression node {e!r}")


def _fmt_guard(g: Guard) -> str:
    if g.lo is not None and g.hi is not None:
        return f"{g.lo} <= {g.expr} < {g.hi}"
    if g.lo is not None:
        return f"{g.expr} >= {g.lo}"
    if g.hi is not None:
        return f"{g.expr} < {g.hi}"
    return f"-inf < {g.expr} < inf"


def _ambiguous_assign(k: Kernel) -> bool:
    """A plain ``=`` whose right side reads like the ``max=``/``min=`` statement form."""
    e = k.expr
    return (
        k.op == "="
        and isinstance(e, Call)
        and e.fn in ("max", "min")
        and len(e.args) == 2
        and e.args[0] == k.out
    )


def _kernel_lines(k: Kernel) -> list[str]:
    kw: list[str] = []
    if k.unit != "vector":
        kw.append(f"unit={_q(k.unit)}")
    if k.op != "=" or k.init != "identity":
        kw.append(f"init={_q(k.init)}")
    if _ambiguous_assign(k):
        kw.append('op="="')
    fname = k.name
    if not _ident(k.name):
        kw.append(f"name={_q(k.name)}")
        fname = "_kernel"
    lines = [f"@kernel({', '.join(kw)})", f"def {fname}():"]
    depth = 1
    for v, ext in k.loops:
        lines.append("    " * depth + f"for {_need_ident(v, 'loop variable')} in range({ext}):")
        depth += 1
    if k.guards:
        lines.append("    " * depth + "if " + " and ".join(_fmt_guard(g) for g in k.guards) + ":")
        depth += 1
    out = _fmt_load(k.out)
    rhs = _fmt_expr(k.expr)[0]
    if k.op == "=":
        stmt = f"{out} = {rhs}"
    elif k.op in ("+=", "*="):
        stmt = f"{out} {k.op} {rhs}"
    elif k.op in ("max=", "min="):
        stmt = f"{out} = {k.op[:-1]}({out}, {rhs})"
    else:
        raise ValueError(f"kernel {k.name!r}: cannot print assignment op {k.op!r}")
    lines.append("    " * depth + stmt)
    return lines


def print_kernel(k: Kernel, tensors: Mapping[str, TensorType] | None = None) -> str:
    """The text form of one kernel. With ``tensors``, a leading comment gives the types
    of the tensors it touches (the parser ignores it)."""
    lines: list[str] = []
    if tensors:
        names = [k.out.tensor] + [t for t in k.inputs() if t != k.out.tensor]
        decl = [f"{t}: {_fmt_type(tensors[t])}" for t in names if t in tensors]
        if decl:
            lines.append("# " + ", ".join(decl))
    lines += _kernel_lines(k)
    return "\n".join(lines) + "\n"


def _call_line(op: Op) -> str | None:
    """The one-line body of a view/gather op, or None when the op needs the keyword form."""
    c = op.call
    if op.kind not in ("view", "gather") or op.kernels or not op.inputs or not op.outputs:
        return None
    if not (isinstance(c, tuple) and c and isinstance(c[0], str) and _ident(c[0])):
        return None
    if any(t in ("inf", "nan") for t in op.inputs) or (op.kind == "view" and op.inputs[0] == "gather"):
        return None
    try:
        lits = [_fmt_lit(a) for a in c[1:]]
    except ValueError:
        return None
    rest = list(op.inputs[1:])
    if op.kind == "view":
        rhs = f"{op.inputs[0]}.{c[0]}({', '.join(lits + rest)})"
    else:
        rhs = f"gather.{c[0]}({', '.join([op.inputs[0]] + lits + rest)})"
    return f"{', '.join(op.outputs)} = {rhs}"


def _op_lines(op: Op) -> list[str]:
    kw = [_q(op.target)]
    if op.line is not None:
        kw.append(f"line={op.line!r}")
    fname = op.id
    if not _ident(op.id):
        kw.append(f"id={_q(op.id)}")
        fname = "_op"
    body = _call_line(op)
    if body is None:
        if op.kind != "compute":
            kw.append(f"kind={_q(op.kind)}")
        if op.call is not None:
            kw.append(f"call={_fmt_lit(op.call)}")
    if op.note:
        kw.append(f"note={_q(op.note)}")
    if op.repeat != 1:  # a loop body's op: runs `repeat` times per call
        kw.append(f"repeat={op.repeat!r}")
    if op.phase != "forward":  # a training step's backward or optimizer op
        kw.append(f"phase={_q(op.phase)}")
    for t in op.inputs + op.outputs:
        _need_ident(t, "tensor name")
    sig = f"def {fname}({', '.join(op.inputs)})"
    if len(op.outputs) == 1:
        sig += f" -> {op.outputs[0]}"
    elif op.outputs:
        sig += f" -> ({', '.join(op.outputs)})"
    lines = [f"@op({', '.join(kw)})", sig + ":"]
    if body is not None:
        lines.append("    " + body)
    elif op.kernels:
        for k in op.kernels:
            lines += ["    " + ln for ln in _kernel_lines(k)]
    else:
        lines.append("    pass")
    return lines


def print_program(p: Program) -> str:
    """The text form of a whole program; ``parse_program`` reads it back to an equal object."""
    roles: dict[str, list[str]] = {}
    for role in ("inputs", "params", "outputs"):
        for t in getattr(p, role):
            roles.setdefault(t, []).append(role[:-1])
    head = [_q(p.name)]
    for role in ("inputs", "params", "outputs"):
        names = getattr(p, role)
        if names:
            head.append(f"{role}=[{', '.join(_q(t) for t in names)}]")
    lines = [
        f"# solar IR v1 — program {p.name!r}",
        "from __future__ import annotations",
        "",
        f"program({', '.join(head)})",
        "",
        "# tensors",
    ]
    for t, ty in p.tensors.items():
        decl = f"{_need_ident(t, 'tensor name')}: {_fmt_type(ty)}"
        note = list(roles.get(t, []))
        if t in p.views:
            note.append(f"view of {p.views[t]}")
        lines.append(decl + (f"  # {', '.join(note)}" if note else ""))
    if p.views:
        lines.append("views({" + ", ".join(f"{_q(k)}: {_q(v)}" for k, v in p.views.items()) + "})")
    if p.unique:
        lines.append("unique({" + ", ".join(f"{_q(k)}: {v!r}" for k, v in p.unique.items()) + "})")
    for op in p.ops:
        lines.append("")
        lines += _op_lines(op)
    return "\n".join(lines) + "\n"
