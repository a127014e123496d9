"""``solar plot --sweep S=128..8192``: an entry's SOL times against one shape symbol, from its
formulas (docs/sol-model.md, "Symbolic costs").

Unfused and fused times are the fitted formulas evaluated at each size; the fused time's two
terms (work / peak per unit, boundary bytes / bandwidth) give the compute/memory crossover,
found exactly by bisection on the formulas. The cache-aware time has no formula (an ILP picks
the tiling): it is re-analyzed at a few sizes when one analysis is cheap, else left out with
a note.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import sympy

from solar_lsp.hardware.chips import Chip
from solar_lsp.pipeline.report import EntryReport
from solar_lsp.pipeline.symbolic import symbol
from solar_lsp.pipeline.symbolic_costs import time_exprs

POINTS = 33  # sizes the formulas are evaluated at, log-spaced
CACHE_POINTS = 6  # sizes re-analyzed for the cache-aware time
CHEAP_S = 5.0  # one re-analysis slower than this: no cache-aware curve


@dataclass
class Sweep:
    """One entry's times against one symbol on one chip."""

    entry: str
    name: str
    chip: str
    xs: list[int]
    unfused: list[float]
    fused: list[float]
    compute: list[float]
    memory: list[float]
    cache_xs: list[int] = field(default_factory=list)
    cache_aware: list[float] = field(default_factory=list)
    crossovers: list[dict] = field(default_factory=list)  # {"x", "t_s", "to": compute|memory}
    notes: list[str] = field(default_factory=list)


def sizes(lo: int, hi: int, step: int, points: int = POINTS) -> list[int]:
    """Log-spaced sizes from ``lo`` to ``hi``, multiples of ``step``."""
    raw = [lo * (hi / lo) ** (i / (points - 1)) for i in range(points)]
    return sorted({max(step, round(x / step) * step) for x in raw})


def _at(expr: sympy.Expr, subs: dict) -> float:
    return float(expr.subs(subs))


def sweep(er: EntryReport, name: str, lo: int, hi: int, chip: Chip,
          analyze: Callable[[dict[str, int]], EntryReport] | None = None) -> Sweep:
    """The entry's unfused, fused (and cache-aware) SOL times at sizes of ``name`` from ``lo``
    to ``hi``, the other symbols at the pragma's values."""
    fit = er.symbolic_fit  # type: ignore[attr-defined]
    values = dict(er.symbolic["values"])
    ops = [o for o in er.program.ops if o.kind not in ("view", "alloc")]  # type: ignore[attr-defined]
    tx = time_exprs(fit, ops, chip)
    missing = [k for k in ("t_unfused_s", "t_fused_s") if tx[k] is None]
    if missing:
        raise ValueError(f"{er.name}: no formula for {', '.join(missing)} (solar analyze --symbolic "
                         "says why)")
    xs = sizes(lo, hi, fit.axes[name].step)
    base = {symbol(k): v for k, v in values.items() if k != name}

    def series(e: sympy.Expr) -> list[float]:
        e = e.subs(base)
        return [_at(e, {symbol(name): x}) for x in xs]

    sw = Sweep(er.name, name, chip.name, xs, series(tx["t_unfused_s"]), series(tx["t_fused_s"]),
               series(tx["compute_s"]), series(tx["memory_s"]))
    sw.crossovers = crossovers(tx["compute_s"].subs(base) - tx["memory_s"].subs(base), name, xs,
                               fit.axes[name].step, tx["t_fused_s"].subs(base))
    if fit.axes[name].step > 1:
        sw.notes.append(f"{name} on multiples of {fit.axes[name].step}, where the formulas hold")
    if analyze is not None:
        _cache_aware(sw, values, analyze)
    return sw


def crossovers(diff: sympy.Expr, name: str, xs: list[int], step: int, t: sympy.Expr) -> list[dict]:
    """Where ``diff`` (compute - memory time) changes sign between sizes in ``xs``: the first
    size on the new side, found by bisection on multiples of ``step``."""
    s = symbol(name)
    sign = [_at(diff, {s: x}) >= 0 for x in xs]
    out = []
    for i in range(len(xs) - 1):
        if sign[i] == sign[i + 1]:
            continue
        a, b = xs[i], xs[i + 1]  # sign(a) = sign[i], sign(b) = sign[i + 1]
        while b - a > step:
            m = (a + b) // 2 // step * step
            if m <= a:
                break
            if (_at(diff, {s: m}) >= 0) == sign[i]:
                a = m
            else:
                b = m
        out.append({"x": b, "t_s": _at(t, {s: b}), "to": "compute" if sign[i + 1] else "memory"})
    return out


def _cache_aware(sw: Sweep, values: dict[str, int], analyze: Callable[[dict[str, int]], EntryReport]) -> None:
    """Re-analyze at up to CACHE_POINTS sizes for the cache-aware time, while it stays cheap."""
    n = len(sw.xs)
    picks = sorted({round(i * (n - 1) / (CACHE_POINTS - 1)) for i in range(CACHE_POINTS)})
    for i in picks:
        x = sw.xs[i]
        t0 = time.perf_counter()
        try:
            er = analyze({**values, sw.name: x})
        except Exception as exc:  # the user's code at this size
            sw.notes.append(f"cache-aware: the analysis at {sw.name}={x} fails: {exc}")
            continue
        h = er.by_hardware.get(sw.chip) or {}
        if h.get("t_cache_aware_s") is not None:
            sw.cache_xs.append(x)
            sw.cache_aware.append(h["t_cache_aware_s"])
        fused = h.get("t_fused_s")
        if fused is not None and abs(fused - sw.fused[i]) > 1e-9 * max(fused, 1e-30):
            sw.notes.append(f"the fused formula gives {sw.fused[i]:.6g} s at {sw.name}={x}, the "
                            f"analysis {fused:.6g} s")
        if time.perf_counter() - t0 > CHEAP_S:
            sw.notes.append(f"cache-aware: one analysis took more than {CHEAP_S:g} s, so it is "
                            f"shown at {len(sw.cache_xs)} size(s) only")
            break
