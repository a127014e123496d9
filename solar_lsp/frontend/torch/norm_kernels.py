"""Kernels of the normalisations (layer, RMS, batch, instance, group norm).

Counted like the kernels real implementations run: statistics as a sum and a sum of
squares (one add, and one multiply-add, per element), the per-row work (mean, rsqrt) once
per row, not per element, and an affine transform folded into a per-(row, channel) scale
and shift wherever the weight runs along a dim the statistics keep (batch, instance and
group norm: one multiply-add per element, as cuDNN and ATen do).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from solar_lsp.ir.core import Affine, Expr, Kernel, Load, call

Shape = tuple[int, ...]


@dataclass(frozen=True)
class NormSpace:
    """The loop nest over x: ``loops`` (var, extent), x's index, the vars the statistics keep."""

    loops: tuple[tuple[str, int], ...]
    x_index: tuple[Affine, ...]
    stat_vars: tuple[str, ...]

    @property
    def ext(self) -> dict[str, int]:
        return dict(self.loops)

    def shape(self, vs: Sequence[str]) -> Shape:
        return tuple(self.ext[v] for v in vs)

    def idx(self, vs: Sequence[str]) -> tuple[Affine, ...]:
        return tuple(Affine.var(v) for v in vs)

    def sub(self, vs: Sequence[str]) -> tuple[tuple[str, int], ...]:
        return tuple((v, self.ext[v]) for v in vs)

    @property
    def n(self) -> int:
        """Elements per statistic."""
        return math.prod(e for v, e in self.loops if v not in self.stat_vars)


@dataclass(frozen=True)
class Affine1:
    """A per-channel vector (weight or bias) and its index in the loop vars."""

    tensor: str
    index: tuple[Affine, ...]
    vars: tuple[str, ...]


def statistics(name: Callable[[str], str], sp: NormSpace, x: str, tmp: Callable[[Shape], str],
               eps: float, rms: bool = False, mean_out: str | None = None,
               rstd_out: str | None = None) -> tuple[list[Kernel], str | None, str, str]:
    """Sum, sum of squares, then per statistic ``mean = S/n`` and ``rstd = rsqrt(Q/n - mean^2
    + eps)`` (RMS: ``rsqrt(Q/n + eps)``). Returns kernels, mean, rstd and the sum of squares."""
    st = sp.shape(sp.stat_vars)
    si = sp.idx(sp.stat_vars)
    xl = Load(x, sp.x_index)
    ks: list[Kernel] = []
    inv_n = 1.0 / sp.n
    mean = None
    if not rms:
        s = tmp(st)
        ks.append(Kernel(name("sum"), sp.loops, Load(s, si), "+=", xl))
        mean = mean_out or tmp(st)
        ks.append(Kernel(name("mean"), sp.sub(sp.stat_vars), Load(mean, si), "=",
                         call("mul", Load(s, si), inv_n)))
    q = tmp(st)
    ks.append(Kernel(name("sumsq"), sp.loops, Load(q, si), "+=", call("mul", xl, xl)))
    var: Expr = call("mul", Load(q, si), inv_n)
    if mean is not None:
        var = call("sub", var, call("mul", Load(mean, si), Load(mean, si)))
    rstd = rstd_out or tmp(st)
    ks.append(Kernel(name("rstd"), sp.sub(sp.stat_vars), Load(rstd, si), "=",
                     call("rsqrt", call("add", var, eps))))
    return ks, mean, rstd, q


def normalize_out(name: Callable[[str], str], sp: NormSpace, x: str, out: str,
                  out_index: tuple[Affine, ...], mean: str | None, rstd: str,
                  weight: Affine1 | None, bias: Affine1 | None,
                  tmp: Callable[[Shape], str]) -> list[Kernel]:
    """``out = (x - mean) * rstd * w + b``. When the weight's dims are kept by the statistics
    (so a (statistic x channel) table is smaller than x), fold it into ``scale = rstd*w``,
    ``shift = b - mean*scale`` first: then one multiply-add per element."""
    si = sp.idx(sp.stat_vars)
    xl = Load(x, sp.x_index)
    aff_vars = tuple(dict.fromkeys((weight.vars if weight else ()) + (bias.vars if bias else ())))
    table_vars = tuple(v for v, _ in sp.loops if v in sp.stat_vars or v in aff_vars)
    fold = bool(aff_vars) and math.prod(sp.shape(table_vars)) < math.prod(e for _, e in sp.loops)
    if not fold:
        body: Expr = xl if mean is None else call("sub", xl, Load(mean, si))
        body = call("mul", body, Load(rstd, si))
        if weight is not None:
            body = call("mul", body, Load(weight.tensor, weight.index))
        if bias is not None:
            body = call("add", body, Load(bias.tensor, bias.index))
        return [Kernel(name("out"), sp.loops, Load(out, out_index), "=", body)]
    ts, ti = sp.shape(table_vars), sp.idx(table_vars)
    ks: list[Kernel] = []
    scale: Expr = Load(rstd, si)
    if weight is not None:
        a = tmp(ts)
        ks.append(Kernel(name("scale"), sp.sub(table_vars), Load(a, ti), "=",
                         call("mul", scale, Load(weight.tensor, weight.index))))
        scale = Load(a, ti)
    shift: Expr | None = None
    if mean is not None:
        shift = call("neg", call("mul", Load(mean, si), scale))
    if bias is not None:
        bl = Load(bias.tensor, bias.index)
        shift = bl if shift is None else call("add", bl, shift)
    if shift is None:
        ks.append(Kernel(name("out"), sp.loops, Load(out, out_index), "=", call("mul", xl, scale)))
        return ks
    b = tmp(ts)
    ks.append(Kernel(name("shift"), sp.sub(table_vars), Load(b, ti), "=", shift))
    ks.append(Kernel(name("out"), sp.loops, Load(out, out_index), "=",
                     call("add", call("mul", xl, scale), Load(b, ti))))
    return ks
