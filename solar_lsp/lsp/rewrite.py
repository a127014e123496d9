"""Where a reorder suggestion can be applied as a text edit: the statement on its line is an
assignment or return whose whole value is the contraction chain — matmuls (``@``,
``torch.matmul``/``mm``/``bmm``) or one ``torch.einsum`` over plain names, exactly the chain's
operands. Anything else gets the suggestion as a report, never a guessed edit."""

from __future__ import annotations

import ast

_CALLS = {"matmul", "mm", "bmm", "einsum"}


def _chain_names(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        a, b = _chain_names(node.left), _chain_names(node.right)
        return a + b if a is not None and b is not None else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CALLS:
        args = node.args[1:] if node.func.attr == "einsum" else node.args
        if node.func.attr == "einsum" and not (node.args and isinstance(node.args[0], ast.Constant)):
            return None
        out: list[str] = []
        for a in args:
            n = _chain_names(a)
            if n is None:
                return None
            out += n
        return out if not node.keywords else None
    return None


def local_rewrite(source: str, line: int, operands: list[str], expression: str) -> tuple[int, int, int, int, str] | None:
    """(start line, start col, end line, end col, new text), 0-based, or None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assign, ast.Return, ast.AnnAssign)):
            continue
        if not (node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        value = node.value
        if value is None:
            continue
        names = _chain_names(value)
        if names is None or sorted(names) != sorted(operands):
            return None
        return (value.lineno - 1, value.col_offset, (value.end_lineno or value.lineno) - 1,
                value.end_col_offset or 0, expression)
    return None
