"""Counts as exact formulas of the shape symbols (docs/sol-model.md, "Symbolic costs").

Pure: ``fit_counts`` takes a function from sizes (``{"S": 7, ...}``) to integer counts
(``{key: int}``) and returns a sympy expression per key that equals the counts at every size
it was tried at. How:

1. every symbol is sampled at ``step * (START + k)``, the others held at their first sample;
   finite differences give the degree in it (at most ``MAX_DEGREE``). A count that is not a
   polynomial there is tried per residue class (``k mod m``, m in ``PERIODS``: a stride-2
   convolution's ``floor((S - k) / 2) + 1`` is linear on even and on odd S);
2. a tensor grid of ``degree + 1`` values per symbol (per residue class) pins the polynomial:
   its coefficients are solved exactly, in rationals (Vandermonde, axis by axis);
3. every size counted on the way and one size off the grid check it; a key that misses one
   gets no formula and the reason.

Symbols whose samples fail (a reshape that needs a multiple of 8) are sampled on multiples
of a larger power-of-two ``step``; the formula then holds on those multiples.
"""

from __future__ import annotations

import itertools
import types
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from fractions import Fraction

import sympy

MAX_DEGREE = 3  # per symbol
MAX_ANALYSES = 30  # evaluations of the counted function per fit
PERIODS = (1, 2, 3, 4)  # residue classes tried for a count that is not a polynomial
START = 3  # first sample: step * 3 (sizes 1 and 2 are often special cases in frameworks)
MAX_STEP = 64

Coeffs = dict[tuple[int, ...], Fraction]


class BudgetExceeded(Exception):
    """The fit needs more evaluations than its budget."""


class SampleError(Exception):
    """The counted function failed at ``sizes``."""

    def __init__(self, sizes: dict[str, int], message: str):
        super().__init__(f"at {fmt_sizes(sizes)}: {message}")
        self.sizes = sizes


@dataclass
class Axis:
    """How one symbol is sampled: ``step * (START + k)``; on each class ``k mod period`` the
    counts are polynomials of at most ``degree`` in it."""

    name: str
    step: int = 1
    period: int = 1
    degree: int = 0

    def value(self, k: int) -> int:
        """The ``k``-th sample of this symbol."""
        return self.step * (START + k)

    def residue(self, r: int) -> int:
        """The value mod ``step * period`` of the samples of class ``r``."""
        return self.step * ((START + r) % self.period)


@dataclass
class Fit:
    """One formula per key (None where there is none, with the reason in ``why``)."""

    symbols: list[str]
    exprs: dict[Hashable, sympy.Expr | None] = field(default_factory=dict)
    why: dict[Hashable, str] = field(default_factory=dict)
    axes: dict[str, Axis] = field(default_factory=dict)
    analyses: int = 0
    checked_at: list[dict[str, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def grid(self) -> dict[str, list[int]]:
        """The sizes each symbol's polynomial was solved at (class 0)."""
        return {n: [a.value(a.period * j) for j in range(a.degree + 1)] for n, a in self.axes.items()}


def fmt_sizes(sizes: dict[str, int]) -> str:
    """``B=3, S=4``."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def symbol(name: str) -> sympy.Symbol:
    """The sympy symbol of a shape symbol: a positive integer (so ``Max`` of two terms in
    the same sizes simplifies); ``parse`` reads formulas back with the same symbols."""
    return sympy.Symbol(name, positive=True, integer=True)


def parse(text: str, symbols: list[str]) -> sympy.Expr:
    """A formula of the report back as sympy (``S``, ``N``, ``E`` are shape symbols here)."""
    from sympy.parsing.sympy_parser import parse_expr
    return parse_expr(text, local_dict={n: symbol(n) for n in symbols})


class _Sampler:
    """The counted function with a cache and a budget; failures are cached too."""

    def __init__(self, evaluate: Callable[[dict[str, int]], dict], budget: int):
        self.evaluate, self.budget = evaluate, budget
        self.cache: dict[tuple, dict | SampleError] = {}

    def __call__(self, sizes: dict[str, int]) -> dict:
        key = tuple(sorted(sizes.items()))
        if key not in self.cache:
            if len(self.cache) >= self.budget:
                raise BudgetExceeded(f"more than {self.budget} analyses needed")
            try:
                self.cache[key] = {k: int(v) for k, v in self.evaluate(dict(sizes)).items()}
            except Exception as exc:  # the user's code at an odd size: sampled elsewhere
                self.cache[key] = SampleError(dict(sizes), str(exc).splitlines()[0] if str(exc) else
                                              type(exc).__name__)
        got = self.cache[key]
        if isinstance(got, SampleError):
            raise got
        return got

    def done(self) -> list[tuple[dict[str, int], dict]]:
        """Every successful evaluation so far."""
        return [(dict(k), v) for k, v in self.cache.items() if not isinstance(v, SampleError)]


def global_values(module: types.ModuleType, symbols: dict[str, str]) -> dict[str, int]:
    """The values of the module globals marked as symbols (``global -> symbol name``), by
    symbol name; ValueError naming a global the module lacks or that is not an int."""
    out: dict[str, int] = {}
    for name, sym in symbols.items():
        if not hasattr(module, name):
            raise ValueError(f"symbol {name!r}: the file has no module global {name!r} "
                             "(--symbol and [tool.solar] symbols name globals such as batch_size)")
        value = getattr(module, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"symbol {name!r}: the module global {name} = {value!r} is not an int")
        out[sym] = value
    return out


def set_globals(module: types.ModuleType, symbols: dict[str, str], dims: dict) -> None:
    """Set each global marked as a symbol to the dim of its symbol's name, where one is given
    (before get_inputs/get_init_inputs run); ValueError as ``global_values``."""
    current = global_values(module, symbols)
    for name, sym in symbols.items():
        if sym in dims and dims[sym] != current[sym]:
            setattr(module, name, int(dims[sym]))


def _degree(seq: list[int]) -> int | None:
    """Smallest d whose (d+1)-th finite differences of ``seq`` all vanish, checked by at
    least one value (None: no such d below ``len(seq) - 1``)."""
    diffs = list(seq)
    for d in range(len(seq) - 1):
        diffs = [b - a for a, b in zip(diffs, diffs[1:])]
        if all(x == 0 for x in diffs):
            return d
    return None


def _class_degrees(sample: Callable[[int], dict], ks: list[int], skip: set,
                   least: int) -> dict[Hashable, int | None]:
    """Degree per key on the samples ``ks`` (equally spaced), sampling as many as needed and at
    least ``least``."""
    got = [sample(k) for k in ks[:least]]
    while True:
        keys = {key for g in got for key in g} - skip
        degs = {key: _degree([g.get(key, 0) for g in got]) for key in keys}
        if all(d is not None for d in degs.values()) or len(got) >= len(ks):
            return degs
        got.append(sample(ks[len(got)]))


def _probe(sampler: _Sampler, base: dict[str, int], axis: Axis, skip: set, least: int
           ) -> dict[Hashable, str]:
    """Set the axis's period and degree; the keys that are no polynomial in it (per class
    either), with the numbers counted."""
    def along(k: int) -> dict:
        return sampler({**base, axis.name: axis.value(k)})

    first: dict[Hashable, int | None] = {}
    for m in PERIODS:
        try:
            per_class = [_class_degrees(along, [r + m * j for j in range(MAX_DEGREE + 2)], skip,
                                        least) for r in range(m)]
        except (BudgetExceeded, SampleError):
            if m == 1:
                raise  # the caller samples on a larger step
            break
        bad = {key for degs in per_class for key, d in degs.items() if d is None}
        if m == 1:
            first = per_class[0]
        if not bad:
            axis.period = m
            axis.degree = max((d for degs in per_class for d in degs.values()), default=0)
            return {}
    axis.period = 1
    axis.degree = max((d for d in first.values() if d is not None), default=0)
    ks = range(MAX_DEGREE + 2)
    sizes = ", ".join(str(axis.value(k)) for k in ks)
    return {key: (f"not polynomial in {axis.name} (degree ≤ {MAX_DEGREE}, also per residue class "
                  f"mod {', '.join(map(str, PERIODS[1:]))}): at {axis.name}={sizes} it counts "
                  + ", ".join(str(sampler({**base, axis.name: axis.value(k)}).get(key, 0)) for k in ks))
            for key, d in first.items() if d is None}


def _vandermonde_inverse(xs: list[int]) -> list[list[Fraction]]:
    """Inverse of ``V[j][e] = xs[j] ** e`` in exact rationals (Gauss-Jordan)."""
    n = len(xs)
    a = [[Fraction(x) ** e for e in range(n)] + [Fraction(int(i == j)) for j in range(n)]
         for i, x in enumerate(xs)]
    for col in range(n):
        piv = next(r for r in range(col, n) if a[r][col] != 0)
        a[col], a[piv] = a[piv], a[col]
        p = a[col][col]
        a[col] = [v / p for v in a[col]]
        for r in range(n):
            if r != col and a[r][col] != 0:
                f = a[r][col]
                a[r] = [v - f * w for v, w in zip(a[r], a[col])]
    # rows of [V | I] reduced to [I | V^-1]: V^-1 maps values to coefficients
    return [row[n:] for row in a]


def interpolate(xs: list[list[int]], value: Callable[[tuple[int, ...]], int]) -> Coeffs:
    """Coefficients (keyed by exponents) of the polynomial through ``value`` at the tensor grid
    ``xs`` (one list of distinct sizes per symbol), exactly."""
    c = {idx: Fraction(value(idx)) for idx in itertools.product(*(range(len(x)) for x in xs))}
    for axis, x in enumerate(xs):
        inv = _vandermonde_inverse(x)
        c = {idx: sum((inv[idx[axis]][j] * c[idx[:axis] + (j,) + idx[axis + 1:]]
                       for j in range(len(x))), Fraction(0)) for idx in c}
    return c


def _evaluate(coeffs: Coeffs, values: list[int]) -> Fraction:
    total = Fraction(0)
    for exps, c in coeffs.items():
        if c:
            term = c
            for v, e in zip(values, exps):
                term *= v ** e
            total += term
    return total


def _expr(coeffs: Coeffs, names: list[str]) -> sympy.Expr:
    syms = [symbol(n) for n in names]
    out = sympy.Integer(0)
    for exps, c in sorted(coeffs.items(), reverse=True):
        if c:
            term = sympy.Rational(c.numerator, c.denominator)
            for s, e in zip(syms, exps):
                term *= s ** e
            out += term
    return out


def fit_counts(evaluate: Callable[[dict[str, int]], dict], symbols: list[str],
               budget: int = MAX_ANALYSES) -> Fit:
    """Exact formulas of every key ``evaluate`` counts, in ``symbols`` (see the module's doc)."""
    sampler = _Sampler(evaluate, budget)
    fit = _attempt(sampler, symbols, 3, budget)
    if fit.why or not fit.exprs:  # a check failed: probe every symbol at all its points
        fit = _better(fit, _attempt(sampler, symbols, MAX_DEGREE + 2, budget))
    if fit.why:
        # a symbol's degree is probed with the others at their first sizes, where a coefficient
        # may vanish (12*B - 4*A*B along B at A = 3 looks constant): the full degree for all
        fit = _better(fit, _attempt(sampler, symbols, MAX_DEGREE + 2, budget, full=True))
    fit.analyses = len(sampler.cache)
    return fit


def _better(fit: Fit, again: Fit) -> Fit:
    """The attempt with at least as many formulas (the later one on a tie)."""
    found = lambda f: sum(e is not None for e in f.exprs.values())  # noqa: E731
    return again if found(again) >= found(fit) else fit


def _attempt(sampler: _Sampler, symbols: list[str], least: int, budget: int,
             full: bool = False) -> Fit:
    fit = Fit(list(symbols), axes={n: Axis(n) for n in symbols})
    try:
        _fit(sampler, fit, least, full)
    except BudgetExceeded as exc:
        fit.exprs = {}
        fit.notes.append(f"no formulas: {exc} (the budget is {budget}; fewer symbols or a lower "
                         "degree would fit)")
    except SampleError as exc:
        fit.exprs = {}
        fit.notes.append(f"no formulas: the analysis fails {exc}")
    return fit


def _fit(sampler: _Sampler, fit: Fit, least: int, full: bool = False) -> None:
    """Probe each symbol's period and degree, interpolate on the grid they pin, check off it;
    ``full``: every symbol at ``MAX_DEGREE`` whatever its probe said."""
    axes = list(fit.axes.values())
    _base(sampler, axes)
    if axes and axes[0].step > 1:
        fit.notes.append(f"sampled on multiples of {axes[0].step} (the analysis fails at "
                         "smaller sizes); the formulas hold there")
    for axis in axes:
        while True:
            base = {a.name: a.value(0) for a in axes}
            try:
                fit.why.update(_probe(sampler, base, axis, set(fit.why), least))
                break
            except SampleError as exc:
                if axis.step * 2 > MAX_STEP:
                    raise
                axis.step *= 2
                fit.notes.append(f"{axis.name} sampled on multiples of {axis.step} (the analysis "
                                 f"fails {exc}); the formulas hold there")
    if full:
        for axis in axes:
            axis.degree = MAX_DEGREE
    grids = _grids(axes)
    need = {tuple(sorted(p.items())) for _, pts in grids for p in pts} - set(sampler.cache)
    if len(sampler.cache) + len(need) > sampler.budget:
        raise BudgetExceeded(f"the grid needs {len(sampler.cache) + len(need)} analyses")
    per_combo = {combo: [sampler(p) for p in pts] for combo, pts in grids}
    keys = {k for vals in per_combo.values() for v in vals for k in v} - set(fit.why)
    coeffs = {key: {combo: interpolate(_xs(axes, combo), _lookup(axes, vals, key))
                    for combo, vals in per_combo.items()} for key in keys}
    check = {a.name: a.value(a.period * (a.degree + 2) + i % a.period + 1) for i, a in enumerate(axes)}
    try:
        sampler(check)
        fit.checked_at.append(check)
    except (SampleError, BudgetExceeded) as exc:
        fit.notes.append(f"not checked off the grid at {fmt_sizes(check)}: {exc}")
    _check(sampler, fit, axes, coeffs)
    names = [a.name for a in axes]
    for key, by_combo in coeffs.items():
        if key not in fit.why:
            fit.exprs[key] = _assemble(by_combo, axes, names)
    for key in fit.why:
        fit.exprs[key] = None


def _base(sampler: _Sampler, axes: list[Axis]) -> dict[str, int]:
    """The first sample of every symbol at once, on larger steps while the analysis fails."""
    while True:
        base = {a.name: a.value(0) for a in axes}
        try:
            sampler(base)
            return base
        except SampleError:
            if not axes or any(a.step * 2 > MAX_STEP for a in axes):
                raise
            for a in axes:
                a.step *= 2


def _grids(axes: list[Axis]) -> list[tuple[tuple[int, ...], list[dict[str, int]]]]:
    """Per combination of residue classes, the tensor grid of sizes that pins its polynomial."""
    out = []
    for combo in itertools.product(*(range(a.period) for a in axes)):
        xs = _xs(axes, combo)
        pts = [{a.name: x for a, x in zip(axes, point)} for point in itertools.product(*xs)]
        out.append((combo, pts))
    return out


def _xs(axes: list[Axis], combo: tuple[int, ...]) -> list[list[int]]:
    return [[a.value(r + a.period * j) for j in range(a.degree + 1)] for a, r in zip(axes, combo)]


def _lookup(axes: list[Axis], vals: list[dict], key) -> Callable[[tuple[int, ...]], int]:
    shape = [a.degree + 1 for a in axes]

    def value(idx: tuple[int, ...]) -> int:
        flat = 0
        for i, n in zip(idx, shape):
            flat = flat * n + i
        return vals[flat].get(key, 0)
    return value


def _combo_of(axes: list[Axis], sizes: dict[str, int]) -> tuple[int, ...] | None:
    """The residue classes of ``sizes`` (None off the sampled steps)."""
    out = []
    for a in axes:
        v = sizes[a.name]
        if v % a.step:
            return None
        out.append(((v // a.step) - START) % a.period)
    return tuple(out)


def _check(sampler: _Sampler, fit: Fit, axes: list[Axis], coeffs: dict) -> None:
    """Drop (with the reason) every key whose formula misses a size counted."""
    for sizes, counts in sampler.done():
        combo = _combo_of(axes, sizes)
        if combo is None:
            continue
        values = [sizes[a.name] for a in axes]
        for key, by_combo in coeffs.items():
            if key in fit.why:
                continue
            want = counts.get(key, 0)
            got = _evaluate(by_combo[combo], values)
            if got != want:
                fit.why[key] = (f"no polynomial of degree ≤ {MAX_DEGREE} per symbol fits: at "
                                f"{fmt_sizes(sizes)} it predicts {got}, the analysis counts {want}")


def _assemble(by_combo: dict[tuple[int, ...], Coeffs], axes: list[Axis], names: list[str]) -> sympy.Expr:
    """One polynomial, or a Piecewise over the residue classes where they differ."""
    exprs = {combo: _expr(c, names) for combo, c in by_combo.items()}
    distinct = set(exprs.values())
    if len(distinct) == 1:
        return distinct.pop()
    pieces = []
    for combo, e in exprs.items():
        conds = [sympy.Eq(sympy.Mod(symbol(a.name), a.step * a.period), a.residue(r))
                 for a, r in zip(axes, combo) if a.period > 1]
        pieces.append((e, sympy.And(*conds)))
    pieces[-1] = (pieces[-1][0], sympy.true)
    return sympy.Piecewise(*pieces)
