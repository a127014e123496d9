"""Find the traced ops the lowering left out, and state each as a per-node task.

An op without a lowering still has its output tensors declared (the lowering declares them
before it looks the op up), so its inputs, outputs and golden values are all known; it only
lacks an :class:`~solar_lsp.ir.core.Op`. Ops whose outputs have data-dependent shapes have no
declared outputs and stay unsupported: static IR cannot hold them.
"""

from __future__ import annotations

import inspect
import operator
from typing import Any

from solar_lsp.frontend.errors import Lowered
from solar_lsp.frontend.torch.trace import Traced
from solar_lsp.ir.text import DTYPE_SHORT
from solar_lsp.llm.prompt import NodeTask


def _tensors_of(lowered: Lowered) -> dict[str, list[str]]:
    """fx node name -> the tensors it defines, in definition order."""
    out: dict[str, list[str]] = {}
    for tensor, node in lowered.node_of_tensor.items():
        out.setdefault(node, []).append(tensor)
    return out


def _tensor_name(arg: Any, tensors: dict[str, list[str]]) -> str | None:
    """The program tensor an fx argument stands for (getitem of a tuple output included)."""
    own = tensors.get(arg.name)
    if own and len(own) == 1:
        return own[0]
    if arg.op == "call_function" and arg.target is operator.getitem:
        parent, idx = arg.args[0], arg.args[1]
        cands = tensors.get(parent.name, [])
        want = f"{parent.name}_{idx}"
        if want in cands:
            return want
        if isinstance(idx, int) and idx < len(cands):
            return cands[idx]
    return None


def _impl_source(target: Any) -> str:
    """The Python source of a ``torch.library.custom_op`` implementation, if it has one."""
    try:
        from torch._library import custom_ops
        opdef = custom_ops.OPDEFS.get(target._schema.name)
        fn = getattr(opdef, "_init_fn", None)
        return inspect.getsource(fn) if fn is not None else ""
    except (AttributeError, OSError, TypeError, ImportError):
        return ""


def _literal(v: Any) -> str:
    return repr(v).replace("torch.", "")


def unlowered(traced: Traced, lowered: Lowered) -> list[tuple[NodeTask | None, str, int | None, str]]:
    """Every op the lowering left out, in graph order: (task or None, target, line, why not).

    The task is None when the op cannot be a per-node task (complex or unknown dtypes, an
    argument that is not a tensor of the program); the last item then says why."""
    p = lowered.program
    tensors = _tensors_of(lowered)
    done = {op.id for op in p.ops}
    lines = _source_lines(traced.path)
    out: list[tuple[NodeTask | None, str, int | None, str]] = []
    for node in traced.exported.graph.nodes:
        if node.op != "call_function" or node.name in done or node.target is operator.getitem:
            continue
        outs = tensors.get(node.name)
        if not outs:
            continue  # no declared output: data-dependent shape, a symbolic op, or a split
        target = str(node.target)
        line = traced.lines.get(node.name)
        args, ins, bad = _arguments(node, tensors)
        for t in ins + outs:
            if p.tensors[t].dtype not in DTYPE_SHORT:
                bad = bad or f"tensor {t} has dtype {p.tensors[t].dtype}, which the IR has no type for"
        if bad:
            out.append((None, target, line, bad))
            continue
        res = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
        task = NodeTask(
            node=node.name, target=target, schema=str(getattr(node.target, "_schema", target)),
            call=f"{res} = {target}({', '.join(args)})", line=line,
            source_line=lines[line - 1] if line and 0 < line <= len(lines) else "",
            inputs=[(t, p.tensors[t]) for t in ins], outputs=[(t, p.tensors[t]) for t in outs],
            impl=_impl_source(node.target), temp_prefix=f"{node.name}__")
        out.append((task, target, line, ""))
    return out


def _arguments(node: Any, tensors: dict[str, list[str]]) -> tuple[list[str], list[str], str]:
    """(argument texts, input tensors in first-use order, why not a task or '')."""
    ins: list[str] = []
    bad: list[str] = []

    def text(a: Any) -> str:
        if hasattr(a, "op") and hasattr(a, "name"):
            t = _tensor_name(a, tensors)
            if t is None:
                bad.append(f"argument {a.name} is not a tensor of the program")
                return a.name
            if t not in ins:
                ins.append(t)
            return t
        if isinstance(a, (list, tuple)):
            inner = ", ".join(text(x) for x in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner},)"
        return _literal(a)

    args = [text(a) for a in node.args] + [f"{k}={text(v)}" for k, v in node.kwargs.items()]
    return args, ins, bad[0] if bad else ""


def _source_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except OSError:
        return []
