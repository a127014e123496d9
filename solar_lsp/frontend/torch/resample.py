"""Resampling along one dim as a few affine pieces (interpolation taps, pooling windows).

An output position ``o`` of an interpolation reads input positions that are not affine in
``o`` (``floor(o * scale)``), but for a rational scale the pattern repeats: positions
``o = start + P * step`` read ``idx + P * shift``. ``find_runs`` splits the positions into
such runs; each run becomes one affine kernel. The index and weight arithmetic copies
torch's CPU kernels (``UpSample.h``: float opmath, the same clamps), so the constants
are the ones torch uses.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

Taps = tuple[tuple[int, float], ...]  # (input index, weight) per tap
CUBIC_A = -0.75
WEIGHT_TOL = 1e-6  # weights closer than this share a kernel (float32 noise of the scale)
MAX_PERIOD = 64


@dataclass(frozen=True)
class Run:
    """Output positions ``start + P*step`` (P < count) read ``idx + P*shift`` per tap."""

    start: int
    step: int
    count: int
    shift: int
    idx: tuple[int, ...]
    payload: tuple[float, ...]


def _f32(v: float) -> np.float32:
    return np.float32(v)


def scales_value(scale: float | None, isize: int, osize: int) -> np.float32:
    """``compute_scales_value<float>``: 1/scale_factor when given, else in/out."""
    if scale is not None and scale > 0:
        return _f32(1.0 / scale)
    return _f32(isize) / _f32(osize)


def area_scale(isize: int, osize: int, align_corners: bool, scale: float | None) -> np.float32:
    """``area_pixel_compute_scale<float>``."""
    if align_corners:
        return _f32(isize - 1) / _f32(osize - 1) if osize > 1 else _f32(0.0)
    return scales_value(scale, isize, osize)


def source_index(scale: np.float32, o: int, align_corners: bool, cubic: bool) -> np.float32:
    """``area_pixel_compute_source_index<float>``."""
    if align_corners:
        return scale * _f32(o)
    src = scale * (_f32(o) + _f32(0.5)) - _f32(0.5)
    return _f32(0.0) if (not cubic and src < 0) else src


def _clean(taps: list[tuple[int, float]]) -> Taps:
    """Merge taps on the same index, drop zero weights (no work is counted for them)."""
    acc: dict[int, float] = {}
    for i, w in taps:
        acc[i] = acc.get(i, 0.0) + w
    return tuple((i, w) for i, w in sorted(acc.items()) if w != 0.0)


def nearest_taps(isize: int, osize: int, scale: float | None, exact: bool) -> list[Taps]:
    """``nearest_idx`` / ``nearest_exact_idx`` of torch's CPU kernel."""
    out: list[Taps] = []
    s = scales_value(scale, isize, osize)
    for o in range(osize):
        if not exact and osize == isize:
            i = o
        elif not exact and osize == 2 * isize:
            i = o >> 1
        else:
            off = _f32(0.5) if exact else _f32(0.0)
            i = min(int(math.floor((_f32(o) + off) * s)), isize - 1)
        out.append(((i, 1.0),))
    return out


def linear_taps(isize: int, osize: int, align_corners: bool, scale: float | None) -> list[Taps]:
    """``compute_indices_weights_linear``: two taps, lambda clamped to [0, 1]."""
    s = area_scale(isize, osize, align_corners, scale)
    out: list[Taps] = []
    for o in range(osize):
        src = source_index(s, o, align_corners, cubic=False)
        i0 = min(int(math.floor(src)), isize - 1)
        lam1 = min(max(src - _f32(i0), _f32(0.0)), _f32(1.0))
        lam0 = _f32(1.0) - lam1
        i1 = i0 + (1 if i0 < isize - 1 else 0)
        out.append(_clean([(i0, float(lam0)), (i1, float(lam1))]))
    return out


def _cubic1(x: float) -> float:
    return ((CUBIC_A + 2) * x - (CUBIC_A + 3)) * x * x + 1


def _cubic2(x: float) -> float:
    return ((CUBIC_A * x - 5 * CUBIC_A) * x + 8 * CUBIC_A) * x - 4 * CUBIC_A


def cubic_taps(isize: int, osize: int, align_corners: bool, scale: float | None) -> list[Taps]:
    """``compute_indices_weights_cubic``: four taps, indices clamped to the input."""
    s = area_scale(isize, osize, align_corners, scale)
    out: list[Taps] = []
    for o in range(osize):
        src = source_index(s, o, align_corners, cubic=True)
        i0 = min(int(math.floor(src)), isize - 1)
        t = float(min(max(src - _f32(i0), _f32(0.0)), _f32(1.0)))
        ws = (_cubic2(t + 1.0), _cubic1(t), _cubic1(1.0 - t), _cubic2(2.0 - t))
        taps = [(max(min(i0 - 1 + j, isize - 1), 0), float(_f32(w))) for j, w in enumerate(ws)]
        out.append(_clean(taps))
    return out


def _aa_linear(x: float) -> float:
    return max(0.0, 1.0 - abs(x))


def _aa_cubic(x: float) -> float:
    """Keys' cubic with a = -0.5 (torch's antialiasing filter, not the -0.75 of bicubic)."""
    x = abs(x)
    if x < 1.0:
        return ((-0.5 + 2) * x - (-0.5 + 3)) * x * x + 1
    if x < 2.0:
        return ((-0.5 * x - 5 * -0.5) * x + 8 * -0.5) * x - 4 * -0.5
    return 0.0


def antialias_taps(isize: int, osize: int, align_corners: bool, scale: float | None,
                   cubic: bool) -> list[Taps]:
    """``_compute_weights_aa``: when downsampling the filter widens by the scale; weights
    are normalised to sum 1 over the window that fits in the input."""
    s = area_scale(isize, osize, align_corners, scale)
    interp = 4 if cubic else 2
    support = _f32(interp * 0.5) * s if s >= 1.0 else _f32(interp * 0.5)
    invscale = _f32(1.0) / s if s >= 1.0 else _f32(1.0)
    filt = _aa_cubic if cubic else _aa_linear
    out: list[Taps] = []
    for o in range(osize):
        center = s * (_f32(o) + _f32(0.5))
        xmin = max(int(center - support + _f32(0.5)), 0)
        xsize = min(int(center + support + _f32(0.5)), isize) - xmin
        ws = [_f32(filt(float((_f32(j + xmin) - center + _f32(0.5)) * invscale))) for j in range(xsize)]
        total = _f32(sum(ws, _f32(0.0)))
        if total != 0:
            ws = [w / total for w in ws]
        out.append(_clean([(xmin + j, float(w)) for j, w in enumerate(ws)]))
    return out


def adaptive_windows(isize: int, osize: int) -> list[tuple[int, int]]:
    """(start, size) of each adaptive pooling window, as torch's ``start_index``/``end_index``."""
    res = []
    for o in range(osize):
        lo = (o * isize) // osize
        hi = ((o + 1) * isize + osize - 1) // osize
        res.append((lo, hi - lo))
    return res


# ------------------------------------------------------------------ runs


def _same(a: tuple[float, ...], b: tuple[float, ...], tol: float) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


def _runs_for(idx: list[tuple[int, ...]], pay: list[tuple[float, ...]], p: int, q: int,
              tol: float) -> list[Run]:
    n = len(idx)
    runs: list[Run] = []
    for r in range(min(p, n)):
        o = r
        while o < n:
            start, k = o, 1
            base = idx[start]
            while True:
                nxt = start + k * p
                if nxt >= n or len(idx[nxt]) != len(base) or \
                        any(a != b + k * q for a, b in zip(idx[nxt], base)) or \
                        not _same(pay[nxt], pay[start], tol):
                    break
                k += 1
            runs.append(Run(start, p, k, q, base, pay[start]))
            o = start + k * p
    return runs


def find_runs(idx: list[tuple[int, ...]], pay: list[tuple[float, ...]], ratio: float | None = None,
              tol: float = WEIGHT_TOL) -> list[Run]:
    """Fewest runs covering every position: try small periods and the period of ``ratio``
    (input positions per output position); the shift of a period is its most common one."""
    n = len(idx)
    if n == 0:
        return []
    cands = set(range(1, min(n, 8) + 1))
    if ratio is not None and ratio > 0:
        f = Fraction(float(ratio)).limit_denominator(min(n, MAX_PERIOD))
        for m in (1, 2):
            if f.denominator * m <= n:
                cands.add(f.denominator * m)
    best: list[Run] | None = None
    for p in sorted(cands):
        diffs = Counter(idx[o + p][0] - idx[o][0] for o in range(n - p) if idx[o] and idx[o + p])
        q = diffs.most_common(1)[0][0] if diffs else 0
        runs = _runs_for(idx, pay, p, q, tol)
        if best is None or len(runs) < len(best):
            best = runs
    assert best is not None
    return best


def taps_runs(taps: list[Taps], ratio: float | None) -> list[Run]:
    """Runs of interpolation taps: payload = weights, idx = tap indices."""
    return find_runs([tuple(i for i, _ in t) for t in taps],
                     [tuple(w for _, w in t) for t in taps], ratio)


def is_identity(taps: list[Taps], isize: int) -> bool:
    """Whether the taps copy every input position to the same output position (no resampling)."""
    return len(taps) == isize and all(t == ((o, 1.0),) for o, t in enumerate(taps))


def merged_copy(runs: list[Run], osize: int) -> tuple[int, int, int, int] | None:
    """When every run is a single-tap copy and the runs are the ``p`` residues of one period,
    each covering all of them, with tap index affine in the residue: ``(p, shift, a, b)`` so
    that ``out[P*p + R] = in[P*shift + a*R + b]`` is one kernel."""
    if not runs or any(len(r.idx) != 1 or r.payload != (1.0,) for r in runs):
        return None
    p, q = runs[0].step, runs[0].shift
    if len(runs) != p or osize % p or any(r.step != p or r.shift != q for r in runs):
        return None
    by_start = sorted(runs, key=lambda r: r.start)
    if [r.start for r in by_start] != list(range(p)) or any(r.count != osize // p for r in by_start):
        return None
    b = by_start[0].idx[0]
    a = by_start[1].idx[0] - b if p > 1 else 0
    if any(r.idx[0] != a * k + b for k, r in enumerate(by_start)):
        return None
    return p, q, a, b
