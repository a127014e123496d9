"""Shape pragmas: ``# solar: B=8, x=f32[B,512], n=int:4, init=(1024,)``.

A pragma is a comma-separated list of ``name=value`` items. A value is one of

- a tensor ``dtype[d0, d1, ...]`` (``f32[]`` is a 0-d tensor); each dim is an integer
  expression over dim names (``S*2``, ``D//4``);
- a scalar ``int:EXPR``, ``float:EXPR`` or ``bool:True|False``;
- for the reserved name ``init``: constructor arguments, a Python literal (a tuple or list
  gives positional args, a dict gives keyword args, anything else is one positional arg);
- for the reserved name ``params`` with a parenthesized or bracketed value: the arguments a
  JAX function's training step differentiates (``params=(w1, b1)``, docs/training.md);
- otherwise a dim definition ``B=8`` (an integer expression over earlier dims).

Everything is evaluated from the AST; nothing is ``eval``-ed.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DTYPE_ALIASES",
    "DTYPE_SIZES",
    "DiscoveryError",
    "PragmaError",
    "TensorSpec",
    "canonical_dtype",
    "dtype_size",
    "parse_pragma",
]


class DiscoveryError(ValueError):
    """A source file could not be read, parsed, or its entry points understood.

    ``line`` and ``col`` are 1-based; either is ``None`` when the error has no location
    (e.g. an unreadable file or a bad config value).
    """

    def __init__(self, message: str, line: int | None = None, col: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col


class PragmaError(DiscoveryError):
    """A malformed shape pragma. ``detail`` is the message without the location prefix."""

    def __init__(self, detail: str, line: int | None = None, col: int | None = None):
        self.detail = detail
        where = f"pragma error at line {line}" if line is not None else "pragma error"
        super().__init__(f"{where}: {detail}", line, col)


@dataclass(frozen=True)
class TensorSpec:
    """One input of an entry point.

    Tensors: ``dtype`` is a canonical torch-style name (``"float32"``, ``"bfloat16"`` ...)
    and ``scalar`` is ``None``. Non-tensor inputs: ``dtype`` is ``"int"``, ``"float"`` or
    ``"bool"``, ``shape`` is ``()`` and ``scalar`` holds the value.
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    scalar: object = None

    @property
    def is_scalar(self) -> bool:
        return self.dtype in _SCALAR_KINDS and self.scalar is not None

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return 0 if self.is_scalar else self.numel * dtype_size(self.dtype)


# canonical name -> bytes per element
DTYPE_SIZES: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}

# every accepted spelling -> canonical name (short names, plus the canonical names themselves)
DTYPE_ALIASES: dict[str, str] = {
    "f64": "float64",
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "bool": "bool",
    "f8e4m3": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
    **{name: name for name in DTYPE_SIZES},
}

_SCALAR_KINDS = ("int", "float", "bool")
_DTYPE_PREFIXES = ("torch.", "jax.numpy.", "jnp.", "np.", "numpy.")
_MAX_INT = 2**63


def canonical_dtype(name: str) -> str | None:
    """Canonical torch-style dtype name for an accepted spelling, or None if unknown.

    A ``torch.`` / ``jnp.`` / ``np.`` prefix is ignored (``torch.bfloat16`` -> ``bfloat16``).
    """
    for prefix in _DTYPE_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return DTYPE_ALIASES.get(name)


def dtype_size(dtype: str) -> int:
    """Bytes per element of a tensor dtype (canonical or alias). ValueError if unknown."""
    canon = canonical_dtype(dtype)
    if canon is None:
        raise ValueError(f"unknown dtype {dtype!r}")
    return DTYPE_SIZES[canon]


# ---------------------------------------------------------------------------------------
# safe expression evaluation

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.Div: operator.truediv,
}
_UNOPS = {ast.UAdd: operator.pos, ast.USub: operator.neg}


class _EvalError(Exception):
    pass


def _eval_num(node: ast.AST, env: Mapping[str, int], *, allow_float: bool) -> int | float:
    """Evaluate an arithmetic expression over ints (and floats if allowed) and names in env."""
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _EvalError(f"unexpected constant {v!r}")
        if isinstance(v, float) and not allow_float:
            raise _EvalError(f"{v!r} is not an integer")
        return v
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise _EvalError(f"undefined dim '{node.id}'")
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNOPS:
        return _UNOPS[type(node.op)](_eval_num(node.operand, env, allow_float=allow_float))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a = _eval_num(node.left, env, allow_float=allow_float)
        b = _eval_num(node.right, env, allow_float=allow_float)
        op = type(node.op)
        if op is ast.Pow and (not isinstance(b, (int, float)) or abs(b) > 64):
            raise _EvalError("exponent too large")
        if op in (ast.FloorDiv, ast.Mod, ast.Div) and b == 0:
            raise _EvalError("division by zero")
        r = _BINOPS[op](a, b)
        if op is ast.Pow and isinstance(r, float) and not allow_float and b < 0:
            raise _EvalError("negative exponent gives a non-integer")
        if op is ast.Div and not allow_float:
            if r != int(r):
                raise _EvalError(f"{a}/{b} is not an integer")
            r = int(r)
        if isinstance(r, complex) or abs(r) > _MAX_INT:
            raise _EvalError("value out of range")
        return r
    raise _EvalError(f"unsupported expression '{ast.unparse(node)}'")


def _eval_literal(node: ast.AST, env: Mapping[str, int]) -> object:
    """A Python literal where numbers may be arithmetic over dims (for ``init=``)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_eval_literal(e, env) for e in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _EvalError("'**' is not supported")
        return {
            _eval_literal(k, env): _eval_literal(v, env) for k, v in zip(node.keys, node.values)
        }
    return _eval_num(node, env, allow_float=True)


def _freeze(value: object) -> object:
    """Make a literal hashable: lists become tuples; nested dicts/sets are rejected."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, (dict, set)):
        raise _EvalError("nested dicts/sets are not supported in init values")
    return value


# ---------------------------------------------------------------------------------------
# parsing

_PREFIX_RE = re.compile(r"^\s*#\s*solar\s*:", re.ASCII)
_ITEM_RE = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)\s*(.*?)\s*$", re.ASCII | re.DOTALL)
_SCALAR_RE = re.compile(r"^(int|float|bool)\s*:\s*(.*)$", re.DOTALL)
_TENSOR_RE = re.compile(r"^([A-Za-z_][\w.]*)\s*\[(.*)\]$", re.ASCII | re.DOTALL)
_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _split_items(text: str, line: int | None, col: int | None) -> list[str]:
    """Split at commas outside brackets and string literals."""
    items: list[str] = []
    stack: list[str] = []
    quote: str | None = None
    start = 0
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in _PAIRS:
            stack.append(_PAIRS[c])
        elif c in ")]}":
            if not stack or stack.pop() != c:
                raise PragmaError(f"unbalanced '{c}' in {text.strip()!r}", line, col)
        elif c == "," and not stack:
            items.append(text[start:i])
            start = i + 1
        i += 1
    if quote or stack:
        raise PragmaError(f"unclosed bracket or string in {text.strip()!r}", line, col)
    items.append(text[start:])
    return [s for s in items if s.strip()]


def _parse_expr(src: str, what: str, line: int | None, col: int | None) -> ast.expr:
    try:
        return ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        raise PragmaError(f"cannot parse {what} {src.strip()!r}", line, col) from None


def _int_value(node: ast.expr, env, what: str, line, col) -> int:
    try:
        v = _eval_num(node, env, allow_float=False)
    except _EvalError as e:
        raise PragmaError(f"{e} in {what}", line, col) from None
    if v < 0:
        raise PragmaError(f"{what} is negative ({v})", line, col)
    return int(v)


def _strip_prefix(text: str) -> str:
    m = _PREFIX_RE.match(text)
    return text[m.end() :] if m else text


def _dim_env(dims: Mapping[str, int] | None) -> dict[str, int]:
    """The config's dims, checked to be integers."""
    env: dict[str, int] = {}
    for k, v in (dims or {}).items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise PragmaError(f"dim '{k}' must be an integer, got {v!r}")
        env[k] = v
    return env


def parse_segments(
    segments: list[tuple[str, int | None, int | None]],
    dims: Mapping[str, int] | None = None,
    options: dict | None = None,
) -> tuple[list[TensorSpec], tuple, tuple]:
    """Parse a pragma split over several comments: ``[(text, line, col), ...]``.

    Dims defined in an earlier segment are visible in later ones; errors carry the line of
    the segment they are in. Returns ``(inputs, init_args, init_kwargs)``; the reserved
    ``params=(a, b)`` item (the trained arguments of a training step, docs/training.md) goes
    to ``options["params"]`` as a tuple of names when ``options`` is given.
    """
    env = _dim_env(dims)
    seen: set[str] = set()
    inputs: list[TensorSpec] = []
    init_args: tuple = ()
    init_kwargs: tuple = ()

    for text, line, col in segments:
        for item in _split_items(_strip_prefix(text), line, col):
            m = _ITEM_RE.match(item)
            if not m:
                raise PragmaError(f"expected name=value, got {item.strip()!r}", line, col)
            name, value = m.group(1), m.group(2)
            if name in seen:
                raise PragmaError(f"'{name}' is given twice", line, col)
            seen.add(name)
            if not value:
                raise PragmaError(f"missing value for '{name}'", line, col)

            if name == "init":
                init_args, init_kwargs = _parse_init(value, env, line, col)
                continue

            if name == "params" and value[:1] in "([":
                (options if options is not None else {})["params"] = _parse_names(value, line, col)
                continue

            sm = _SCALAR_RE.match(value)
            if sm:
                inputs.append(_parse_scalar(name, sm.group(1), sm.group(2), env, line, col))
                continue

            tm = _TENSOR_RE.match(value)
            if tm:
                inputs.append(_parse_tensor(name, tm.group(1), tm.group(2), env, line, col))
                continue

            if canonical_dtype(value) is not None and value not in env:
                raise PragmaError(f"tensor '{name}' needs a shape, e.g. {value}[8, 16] "
                                  f"({value}[] for 0-d)", line, col)
            # a dim definition
            node = _parse_expr(value, f"value of '{name}'", line, col)
            env[name] = _int_value(node, env, f"dim '{name}'", line, col)

    return inputs, init_args, init_kwargs


def _parse_tensor(name: str, head: str, body: str, env: dict[str, int], line, col) -> TensorSpec:
    """``name=dtype[shape]``: the dtype by any of its names, the dims as integer expressions."""
    dtype = canonical_dtype(head)
    if dtype is None:
        raise PragmaError(
            f"unknown dtype '{head}' for '{name}' (known: "
            f"{', '.join(k for k, v in DTYPE_ALIASES.items() if k != v)}"
            " or torch names such as float32, bfloat16, float8_e4m3fn)",
            line,
            col,
        )
    shape: tuple[int, ...] = ()
    if body.strip():
        tup = _parse_expr(f"({body},)", f"shape of '{name}'", line, col)
        if not isinstance(tup, ast.Tuple):  # pragma: no cover - defensive
            raise PragmaError(f"cannot parse shape of '{name}'", line, col)
        shape = tuple(
            _int_value(e, env, f"dim {i} of '{name}'", line, col)
            for i, e in enumerate(tup.elts)
        )
    return TensorSpec(name, dtype, shape)


def _parse_scalar(name, kind, src, env, line, col) -> TensorSpec:
    node = _parse_expr(src, f"value of '{name}'", line, col)
    if kind == "bool":
        if not (isinstance(node, ast.Constant) and isinstance(node.value, bool)):
            raise PragmaError(f"'{name}' needs True or False, got {src.strip()!r}", line, col)
        return TensorSpec(name, "bool", (), node.value)
    try:
        v = _eval_num(node, env, allow_float=(kind == "float"))
    except _EvalError as e:
        raise PragmaError(f"{e} in value of '{name}'", line, col) from None
    if kind == "int":
        env[name] = int(v)  # an int input can size later tensors: n=int:4, x=f32[n]
        return TensorSpec(name, "int", (), int(v))
    return TensorSpec(name, "float", (), float(v))


def _parse_names(value: str, line, col) -> tuple[str, ...]:
    """``params=(w1, b1)`` (or a list, or ``()``): the argument names, in the order given."""
    node = _parse_expr(value, "params", line, col)
    elts = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
    if not all(isinstance(e, ast.Name) for e in elts):
        raise PragmaError(f"params= expects argument names, e.g. params=(w1, b1); got "
                          f"{value.strip()!r}", line, col)
    return tuple(dict.fromkeys(e.id for e in elts))


def _parse_init(value: str, env, line, col) -> tuple[tuple, tuple]:
    try:
        obj = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        node = _parse_expr(value, "init", line, col)
        try:
            obj = _eval_literal(node, env)
        except _EvalError as e:
            raise PragmaError(f"{e} in init", line, col) from None
    try:
        if isinstance(obj, dict):
            for k in obj:
                if not isinstance(k, str) or not k.isidentifier():
                    raise PragmaError(f"init keyword {k!r} is not an identifier", line, col)
            return (), tuple((k, _freeze(v)) for k, v in obj.items())
        if isinstance(obj, (tuple, list)):
            return tuple(_freeze(v) for v in obj), ()
        return (_freeze(obj),), ()
    except _EvalError as e:
        raise PragmaError(str(e), line, col) from None


def parse_pragma(
    text: str, dims: Mapping[str, int] | None = None, line: int | None = None
) -> tuple[list[TensorSpec], tuple, tuple]:
    """Parse one pragma (with or without the leading ``# solar:``).

    ``dims`` gives values for symbolic dims (dims defined in the pragma take precedence).
    Returns ``(inputs, init_args, init_kwargs)``; raises PragmaError (with ``line``).
    """
    return parse_segments([(text, line, None)], dims)
