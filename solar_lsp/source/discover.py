"""Find the analyzable entry points of a Python source file from its AST.

The file is never imported or run: a module that raises at import time, or imports a
package that is not installed, is discovered all the same. See docs/entry-points.md.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from solar_lsp.source.pragma import DiscoveryError, PragmaError, TensorSpec, parse_segments

__all__ = [
    "DiscoveryError",
    "Entry",
    "PragmaError",
    "TensorSpec",
    "discover",
    "discover_file",
]

JAX_ROOTS = frozenset({"jax", "flax", "equinox", "haiku"})
TORCH_ROOTS = frozenset({"torch"})

_PRAGMA_RE = re.compile(r"^#\s*solar\s*:(.*)$", re.DOTALL)


@dataclass(frozen=True)
class Entry:
    """One analyzable entry point found in a file: what to build and with which inputs."""

    name: str  # "Model" or the function/class name
    kind: str  # "model" | "function" | "module"
    line: int  # 1-based line of the def/class keyword
    end_line: int
    frontend: str  # "torch" | "jax"
    inputs: tuple[TensorSpec, ...] | None  # None for kind "model" (from get_inputs())
    init_args: tuple = ()
    init_kwargs: tuple = ()  # ((key, value), ...)
    pragma: str | None = None
    pragma_line: int | None = None
    # the pragma's ``params=(a, b)``: the arguments a training step trains (docs/training.md)
    params: tuple[str, ...] | None = None


@dataclass
class _Comment:
    line: int
    col: int  # 0-based
    text: str
    alone: bool  # the only thing on its line


_DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


# ---------------------------------------------------------------------------------------
# source scanning


def _parse(source: str, path: str) -> ast.Module:
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as e:
        line, col = e.lineno, e.offset
        where = f"line {line}, col {col}" if col else f"line {line}"
        raise DiscoveryError(f"syntax error at {where}: {e.msg}", line, col) from None
    except (ValueError, RecursionError, MemoryError) as e:
        raise DiscoveryError(f"cannot parse {path}: {e}") from None


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    try:
        return list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError) as e:  # pragma: no cover - ast.parse passed
        raise DiscoveryError(f"cannot tokenize: {e}") from None


def _comments(tokens: list[tokenize.TokenInfo]) -> dict[int, _Comment]:
    out: dict[int, _Comment] = {}
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            (line, col) = tok.start
            alone = tok.line[:col].strip() == ""
            out[line] = _Comment(line, col, tok.string, alone)
    return out


def _header_end(node: _DefNode, tokens, index: dict[tuple[int, int], int]) -> int:
    """Line of the ':' that ends a def/class header."""
    i = index.get((node.lineno, node.col_offset))
    if i is None:
        return node.lineno
    depth = 0
    for tok in tokens[i:]:
        if tok.type == tokenize.OP:
            if tok.string in "([{":
                depth += 1
            elif tok.string in ")]}":
                depth -= 1
            elif tok.string == ":" and depth == 0:
                return tok.start[0]
    return node.lineno  # pragma: no cover


def _pragma_segments(node: _DefNode, comments, tokens, index) -> list[tuple[str, int, int]]:
    """`# solar:` comments attached to a top-level def/class, in line order.

    Attached: the block of comment-only lines (at the def's indentation) directly above
    the first decorator or the def, and any comment from the first decorator line through
    the end of the header (the line with the ':').
    """
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    lines: list[int] = []
    ln = first - 1
    while ln in comments and comments[ln].alone and comments[ln].col == node.col_offset:
        lines.append(ln)
        ln -= 1
    lines.reverse()
    lines.extend(range(first, _header_end(node, tokens, index) + 1))
    segs = []
    for ln in lines:
        c = comments.get(ln)
        if c is None:
            continue
        m = _PRAGMA_RE.match(c.text)
        if m:
            segs.append((m.group(1), ln, c.col + 1))
    return segs


# ---------------------------------------------------------------------------------------
# imports and frontends


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted module path, for every absolute import in the file."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    root = a.name.split(".")[0]
                    aliases[root] = root
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                if a.name != "*":
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _dotted(expr: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.append(expr.id)
        return parts[::-1]
    return None


def _root_framework(root: str) -> str | None:
    if root in TORCH_ROOTS:
        return "torch"
    if root in JAX_ROOTS:
        return "jax"
    return None


class _Analyzer:
    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.aliases = _import_aliases(tree)
        roots = {v.split(".")[0] for v in self.aliases.values()}
        self.imports_jax = bool(roots & JAX_ROOTS)
        self.imports_torch = bool(roots & TORCH_ROOTS)
        self.classes: dict[str, ast.ClassDef] = {
            n.name: n for n in tree.body if isinstance(n, ast.ClassDef)
        }

    def _base_info(self, cls: ast.ClassDef, seen: frozenset[str]) -> tuple[bool, str | None]:
        """(derives from something named *Module, framework of that base if known)."""
        is_module, framework = False, None
        for base in cls.bases:
            parts = _dotted(base)
            if parts is None:
                continue
            if len(parts) == 1 and parts[0] in self.classes and parts[0] not in seen:
                m, fw = self._base_info(self.classes[parts[0]], seen | {parts[0]})
            else:
                m = parts[-1].endswith("Module")
                target = self.aliases.get(parts[0])
                fw = _root_framework(target.split(".")[0]) if target else None
                if fw is None and not m:
                    continue
            if m:
                is_module = True
            if fw is not None and framework is None:
                framework = fw
        return is_module, framework

    def is_module_class(self, cls: ast.ClassDef) -> bool:
        return self._base_info(cls, frozenset({cls.name}))[0]

    def frontend(self, node: _DefNode) -> str:
        if isinstance(node, ast.ClassDef):
            fw = self._base_info(node, frozenset({node.name}))[1]
            if fw is not None:
                return fw
        if not self.imports_jax:
            return "torch"
        if not self.imports_torch:
            return "jax"
        # both imported: go by the framework names the entry itself uses
        used = {
            _root_framework(self.aliases[n.id].split(".")[0])
            for n in ast.walk(node)
            if isinstance(n, ast.Name) and n.id in self.aliases
        }
        if "torch" in used and "jax" not in used:
            return "torch"
        return "jax"


# ---------------------------------------------------------------------------------------
# signatures


def _signature_node(node: _DefNode, frontend: str) -> ast.FunctionDef | None:
    if isinstance(node, ast.FunctionDef):
        return node
    if isinstance(node, ast.ClassDef):
        methods = {
            n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        order = ("forward", "__call__") if frontend == "torch" else ("__call__", "forward")
        for name in order:
            m = methods.get(name)
            if isinstance(m, ast.FunctionDef):
                return m
    return None


def _match_signature(
    node: _DefNode, frontend: str, inputs: list[TensorSpec], line: int | None
) -> list[TensorSpec]:
    """Check pragma inputs against the visible signature; return them in parameter order."""
    fn = _signature_node(node, frontend)
    if fn is None:
        return inputs
    a = fn.args
    positional = list(a.posonlyargs) + list(a.args)
    n_required_pos = len(positional) - len(a.defaults)
    if isinstance(node, ast.ClassDef) and positional:
        positional = positional[1:]  # self
        n_required_pos -= 1
    params = [p.arg for p in positional] + [p.arg for p in a.kwonlyargs]
    required = [p.arg for p in positional[: max(n_required_pos, 0)]] + [
        p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None
    ]
    given = {s.name for s in inputs}
    what = f"'{node.name}'"
    extras_ok = a.vararg is not None or a.kwarg is not None
    unknown = [s.name for s in inputs if s.name not in params]
    if unknown and not extras_ok:
        raise PragmaError(
            f"'{unknown[0]}' is not a parameter of {what} (parameters: {', '.join(params) or 'none'})",
            line,
        )
    missing = [p for p in required if p not in given]
    if missing:
        raise PragmaError(
            f"no input given for parameter '{missing[0]}' of {what} "
            f"(add e.g. {missing[0]}=f32[...] or {missing[0]}=int:N)",
            line,
        )
    pos = {p: i for i, p in enumerate(params)}
    return sorted(inputs, key=lambda s: pos.get(s.name, len(params)))


# ---------------------------------------------------------------------------------------
# config


def _config_parts(config: Mapping | None, path: str) -> tuple[dict[str, int], dict[str, str]]:
    if config is None:
        return {}, {}
    if not isinstance(config, Mapping):
        raise DiscoveryError(f"config must be a mapping, got {type(config).__name__}")
    dims = config.get("dims") or {}
    entries = config.get("entries") or {}
    if not isinstance(dims, Mapping):
        raise DiscoveryError("config 'dims' must be a mapping of name -> int")
    for k, v in dims.items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int):
            raise DiscoveryError(f"config dim {k!r} must be an integer, got {v!r}")
    if not isinstance(entries, Mapping):
        raise DiscoveryError("config 'entries' must be a mapping of name -> pragma string")
    norm_path = Path(path).as_posix()
    out: dict[str, str] = {}
    for key, pragma in entries.items():
        if not isinstance(key, str) or not isinstance(pragma, str):
            raise DiscoveryError(f"config entry {key!r} must map a name to a pragma string")
        if "::" in key:
            file_part, name = key.rsplit("::", 1)
            file_part = Path(os.path.normpath(file_part)).as_posix()
            if not (norm_path == file_part or norm_path.endswith("/" + file_part)):
                continue
        else:
            name = key
        out[name] = pragma
    return dict(dims), out


# ---------------------------------------------------------------------------------------
# discovery


def _has_toplevel_function(tree: ast.Module, name: str) -> bool:
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name:
            return True
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in n.targets
        ):
            return True
    return False


def discover(source: str, path: str = "<string>", config: Mapping | None = None) -> list[Entry]:
    """Entry points of ``source``, ordered by line. Never imports or runs the code.

    ``config``: ``{"dims": {"B": 8}, "entries": {"name": "x=f32[B,16]"}}``; an entries key
    may be ``"file.py::name"`` to apply to one file only. Raises DiscoveryError on a
    syntax error, PragmaError (a DiscoveryError) on a bad pragma.
    """
    tree = _parse(source, path)
    tokens = _tokens(source)
    index = {tok.start: i for i, tok in enumerate(tokens) if tok.type == tokenize.NAME}
    comments = _comments(tokens)
    dims, config_entries = _config_parts(config, path)
    an = _Analyzer(tree)

    # last top-level definition of each name wins (that is what Python binds)
    defs: dict[str, _DefNode] = {}
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[n.name] = n

    has_get_inputs = _has_toplevel_function(tree, "get_inputs")
    entries: list[Entry] = []
    for node in defs.values():
        segments: list[tuple[str, int | None, int | None]]
        if node.name in config_entries:
            text = config_entries[node.name]
            segments = [(text, node.lineno, None)]
            pragma_text, pragma_line = text.strip(), None
        else:
            found = _pragma_segments(node, comments, tokens, index)
            segments = list(found)
            pragma_text = ", ".join(s[0].strip() for s in found if s[0].strip()) if found else None
            pragma_line = found[0][1] if found else None

        frontend = an.frontend(node)
        if not segments:
            if (
                isinstance(node, ast.ClassDef)
                and node.name == "Model"
                and has_get_inputs
                and an.is_module_class(node)
            ):
                entries.append(
                    Entry(
                        name=node.name,
                        kind="model",
                        line=node.lineno,
                        end_line=node.end_lineno or node.lineno,
                        frontend=frontend,
                        inputs=None,
                    )
                )
            continue
        entries.append(_pragma_entry(node, frontend, segments, dims, node.name in config_entries,
                                     pragma_text, pragma_line))
    entries.sort(key=lambda e: e.line)
    return entries


def _pragma_entry(node: _DefNode, frontend: str, segments: list[tuple[str, int | None, int | None]],
                  dims: dict[str, int], from_config: bool, pragma_text: str | None,
                  pragma_line: int | None) -> Entry:
    """The entry a pragma (or a config entry) declares on ``node``, checked against its
    signature."""
    err_line = pragma_line if pragma_line is not None else node.lineno
    options: dict = {}
    try:
        inputs, init_args, init_kwargs = parse_segments(segments, dims, options)
    except PragmaError as e:
        if from_config:
            raise PragmaError(
                f"config entry '{node.name}': {e.detail}", node.lineno, node.col_offset + 1
            ) from None
        raise
    if isinstance(node, ast.AsyncFunctionDef):
        raise PragmaError(f"async function '{node.name}' cannot be analyzed", err_line)
    kind = "module" if isinstance(node, ast.ClassDef) else "function"
    if kind == "function" and (init_args or init_kwargs):
        raise PragmaError(
            f"init= is only valid for a class, not function '{node.name}'", err_line
        )
    inputs = _match_signature(node, frontend, inputs, err_line)
    params = options.get("params")
    if params is not None:
        _check_params(node.name, frontend, params, inputs, err_line)
    return Entry(
        name=node.name,
        kind=kind,
        line=node.lineno,
        end_line=node.end_lineno or node.lineno,
        frontend=frontend,
        inputs=tuple(inputs),
        init_args=init_args,
        init_kwargs=init_kwargs,
        pragma=pragma_text,
        pragma_line=pragma_line,
        params=params,
    )


def _check_params(name: str, frontend: str, params: tuple[str, ...],
                  inputs: list[TensorSpec], line: int | None) -> None:
    """``params=(...)`` names tensor arguments of a JAX entry (a Flax module is refused when
    traced: it trains its own parameters)."""
    if frontend != "jax":
        raise PragmaError(f"params= names the trained arguments of a JAX function; '{name}' is "
                          "PyTorch code, which trains its module's parameters (docs/training.md)",
                          line)
    tensors = [s.name for s in inputs if not s.is_scalar]
    for p in params:
        if p not in tensors:
            what = "a scalar argument, not a tensor" if p in {s.name for s in inputs} else \
                f"not a tensor argument of '{name}' (tensor arguments: {', '.join(tensors) or 'none'})"
            raise PragmaError(f"params=: '{p}' is {what}", line)


def discover_file(path: str | os.PathLike, config: Mapping | None = None) -> list[Entry]:
    """Read ``path`` (UTF-8) and discover its entry points; unreadable files raise DiscoveryError."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise DiscoveryError(f"cannot read {p}: {e.strerror or e}") from None
    try:
        source = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise DiscoveryError(
            f"cannot read {p}: not valid UTF-8 at line {line}, col {col}", line, col
        ) from None
    return discover(source, str(p), config)
