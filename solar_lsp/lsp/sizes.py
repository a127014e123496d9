"""The "SOL at S=…" code lens (docs/editors.md, "Symbolic costs"): reading the sizes a user
types, the pragma's numeric symbols a lens offers, and the evaluation of an entry's formulas
(``EntryReport.symbolic``, docs/sol-model.md "Symbolic costs") at those sizes.

``parse_sizes`` and ``pragma_dims`` are plain Python (the server calls them);
``evaluate_formulas`` imports sympy and runs in a worker, never in the server's loop.
"""

from __future__ import annotations

import re

_ITEM = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*([0-9][0-9_]*)\s*$")
# a top-level ``NAME=123`` of a pragma: a shape symbol with its value
_DIM = re.compile(r"(?:^|[,:])\s*([A-Za-z_]\w*)\s*=\s*([0-9][0-9_]*)\s*(?=,|$)")


class SizesError(ValueError):
    """Sizes the user typed that cannot be read; the message says how to write them."""


def parse_sizes(value: object) -> dict[str, int]:
    """``"S=4096, B=8"`` or ``{"S": 4096}`` → ``{"S": 4096, "B": 8}``; every size positive."""
    if isinstance(value, dict):
        items = [f"{k}={v}" for k, v in value.items()]
    elif isinstance(value, str):
        items = [p for p in re.split(r"[,\s;]+(?=[A-Za-z_])", value.strip()) if p.strip()]
    else:
        raise SizesError("sizes must be text such as S=4096, B=8")
    out: dict[str, int] = {}
    for item in items:
        m = _ITEM.match(str(item).rstrip(","))
        if not m:
            raise SizesError(f"cannot read {str(item).strip()!r}: write NAME=SIZE, e.g. S=4096")
        n = int(m.group(2).replace("_", ""))
        if n < 1:
            raise SizesError(f"{m.group(1)} must be at least 1, got {n}")
        out[m.group(1)] = n
    if not out:
        raise SizesError("no size given: write NAME=SIZE, e.g. S=4096")
    return out


def pragma_dims(pragma: str | None) -> dict[str, int]:
    """The numeric symbols a pragma defines at its top level (``B=4, S=512, x=f32[B,S]`` →
    ``{"B": 4, "S": 512}``): what the lens offers before any formula exists."""
    if not pragma:
        return {}
    text = re.sub(r"\[[^\]]*\]|\([^)]*\)", "", pragma.split("solar:", 1)[-1])
    return {m.group(1): int(m.group(2).replace("_", "")) for m in _DIM.finditer(text)}


def fmt_sizes(sizes: dict[str, int]) -> str:
    """``S=4096, B=8``."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def evaluate_formulas(sym: dict, sizes: dict[str, int], dram_bytes_per_s: float) -> dict:
    """The entry's formulas (``EntryReport.symbolic``) at ``sizes`` (other symbols at the
    pragma's values): counts, the unfused time (Σ of per-op maxima) and the fused time with
    its two terms (the roofline max of compute and memory, evaluated) and which one binds."""
    from solar_lsp.pipeline.symbolic import parse, symbol

    names = list(sym.get("symbols") or [])
    unknown = sorted(set(sizes) - set(names))
    if unknown:
        raise SizesError(f"{', '.join(unknown)} is not a shape symbol of this entry "
                         f"(its symbols: {', '.join(names) or 'none'})")
    values = {**(sym.get("values") or {}), **sizes}
    subs = {symbol(n): int(v) for n, v in values.items()}

    def at(key: str):
        text = sym.get(key)
        if text is None:
            return None
        e = parse(text, names).subs(subs)
        return float(e) if e.is_number else None

    out: dict = {"sizes": {n: int(values[n]) for n in names if n in values}}
    for key in ("tensor_flops", "vector_flops", "transcendentals", "bytes_unfused", "bytes_fused",
                "t_unfused_s", "t_fused_s"):
        out[key] = at(key)
    fb = out["bytes_fused"]
    out["memory_s"] = fb / dram_bytes_per_s if fb is not None else None
    t = out["t_fused_s"]
    out["compute_s"] = _compute_term(sym.get("t_fused_s"), names, subs, out["memory_s"])
    if t is not None and out["memory_s"] is not None:
        out["bound"] = "memory" if out["memory_s"] >= t * (1 - 1e-9) else "compute"
    return out


def _compute_term(text: str | None, names: list[str], subs: dict, memory_s: float | None) -> float | None:
    """The compute term of the fused time ``Max(compute, memory)``: its largest argument other
    than the memory term."""
    if text is None:
        return None
    import sympy

    from solar_lsp.pipeline.symbolic import parse
    e = parse(text, names)
    args = e.args if isinstance(e, sympy.Max) else (e,)
    vals = [float(a.subs(subs)) for a in args]
    if memory_s is not None:
        vals = [v for v in vals if abs(v - memory_s) > 1e-12 * max(abs(memory_s), 1e-30)] or [0.0]
    return max(vals)
