"""The source closure of an entry: the code its analysis depends on, hashed so that an edit
elsewhere in the file does not re-run the analysis.

The closure is (a) the entry's own definition with its pragma, ``get_inputs`` and
``get_init_inputs``, (b) every module-level statement that is not a definition (imports,
constants), (c) every top-level function or class those name, transitively, and (d) the
definitions that contain a line the last trace ran through (the ops' lines), which catches
code reached dynamically. All of it is found from the text alone: no user code runs.
Code in other files is covered by (e) the bytes of every user source file the last analysis
imported (a sibling module with the layers), which the worker reports with each result.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable

ALWAYS = ("get_inputs", "get_init_inputs")
_DEF = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_main_guard(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def _start(node: ast.stmt) -> int:
    decos = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decos])


def _names(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return out


def closure_defs(tree: ast.Module, entry: str, lines: Iterable[int] = ()) -> list[str]:
    """Names of the top-level definitions in the closure of ``entry`` (sorted)."""
    defs = {n.name: n for n in tree.body if isinstance(n, _DEF)}
    todo = [n for n in (entry, *ALWAYS) if n in defs]
    for ln in lines:
        for name, node in defs.items():
            if _start(node) <= ln <= (node.end_lineno or node.lineno):
                todo.append(name)
    for stmt in tree.body:
        if not isinstance(stmt, _DEF) and not _is_main_guard(stmt):
            todo += [n for n in _names(stmt) if n in defs]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [n for n in _names(defs[name]) if n in defs and n not in seen]
    return sorted(seen)


def files_digest(paths: Iterable[str]) -> str:
    """Digest of the paths and the bytes of these files; a missing file counts as its own
    content, so editing, deleting or creating one changes it."""
    h = hashlib.sha256()
    for p in sorted(set(paths)):
        h.update(p.encode() + b"\0")
        try:
            with open(p, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        except OSError:
            h.update(b"<missing>")
    return h.hexdigest()


def closure_hash(source: str, entry: str, extra_defs: Iterable[str] = (), pragma_line: int | None = None,
                 files: Iterable[str] = ()) -> str | None:
    """Hash of the entry's closure in ``source`` and of the user ``files`` its last analysis
    imported; None when the source does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = source.splitlines()
    names = set(closure_defs(tree, entry)) | set(extra_defs)
    h = hashlib.sha256(entry.encode())
    for stmt in tree.body:
        if _is_main_guard(stmt):
            continue
        if isinstance(stmt, _DEF) and stmt.name not in names:
            continue
        start = _start(stmt)
        if isinstance(stmt, _DEF) and stmt.name == entry and pragma_line:
            start = min(start, pragma_line)
        h.update("\n".join(lines[start - 1:stmt.end_lineno or stmt.lineno]).encode())
        h.update(b"\0")
    # pragma comments sit above their definition: include the comment block of each def
    for stmt in tree.body:
        if isinstance(stmt, _DEF) and stmt.name in names:
            i = _start(stmt) - 2
            while i >= 0 and lines[i].lstrip().startswith("#"):
                h.update(lines[i].encode())
                i -= 1
    files = list(files)
    if files:
        h.update(b"\0files\0" + files_digest(files).encode())
    return h.hexdigest()


def defs_of_lines(source: str, lines: Iterable[int]) -> list[str]:
    """Top-level definitions containing any of ``lines`` (the dynamic part of a closure)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = set()
    for node in tree.body:
        if isinstance(node, _DEF):
            lo, hi = _start(node), node.end_lineno or node.lineno
            if any(lo <= ln <= hi for ln in lines):
                out.add(node.name)
    return sorted(out)
