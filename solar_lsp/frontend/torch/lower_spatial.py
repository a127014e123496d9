"""Spatial lowerings: interpolation, pixel (un)shuffle, im2col/col2im, pooling; and the
dtype-specific matmuls (``_int_mm``, ``_scaled_mm``).

Interpolation reads input positions that are not affine in the output position; they are
split into affine runs (``resample``), one kernel per run, one separable stage per
resampled dim (docs/sol-model.md, Interpolation). Pooling windows that are uneven
(adaptive pooling) use the same runs; divisors are compile-time constants, written into a
small op-internal table by constant kernels (no work) and applied with one multiply.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.torch import resample as R
from solar_lsp.frontend.torch.context import Ctx, lowers
from solar_lsp.frontend.torch.contractions import matmul_into
from solar_lsp.ir.core import Affine, Const, Expr, Guard, Index, Kernel, Load, call

Shape = tuple[int, ...]
FLOAT = ("float32", "float64", "float16", "bfloat16")


def _arg(a: tuple, kw: dict, pos: int, name: str, default: Any = None) -> Any:
    if len(a) > pos:
        return a[pos]
    return kw.get(name, default)


def _tup(v: Any, nd: int, default: Any) -> list:
    if v is None or v == []:
        v = default
    if isinstance(v, (int, float)):
        return [v] * nd
    v = list(v)
    return v * nd if len(v) == 1 else v


def _p(v: str, coef: int, const: int) -> Affine:
    """``coef*v + const`` (a constant when coef is 0)."""
    return (Affine.var(v, coef) + const) if coef else Affine.of(const)


def _copy(name: str, src: str, dst: str, shape: Shape) -> Kernel:
    vs = B.ivars(len(shape))
    return Kernel(name, tuple(zip(vs, shape)), Load(dst, B.plain(vs)), "=", Load(src, B.plain(vs)))


# ------------------------------------------------------------------ interpolation

_MODES = {
    "upsample_nearest": "nearest", "_upsample_nearest_exact": "nearest_exact",
    "upsample_linear": "linear", "upsample_bilinear": "linear", "upsample_trilinear": "linear",
    "upsample_bicubic": "cubic", "_upsample_bilinear2d_aa": "linear_aa",
    "_upsample_bicubic2d_aa": "cubic_aa",
}


def _interp_args(target: str, a: tuple, kw: dict, nd: int) -> tuple[str, bool, list]:
    base = target.split(".")[1]
    mode = next(m for p, m in _MODES.items() if base.startswith(p))
    has_ac = mode not in ("nearest", "nearest_exact")
    ac = bool(_arg(a, kw, 2, "align_corners", False)) if has_ac else False
    if target.endswith(".vec"):
        sf = _arg(a, kw, 3 if has_ac else 2, "scale_factors")
        scales = list(sf) if sf else [None] * nd
    else:  # .default: output_size, [align_corners], scales_d, scales_h, scales_w
        first = 3 if has_ac else 2
        scales = [a[first + j] if len(a) > first + j else None for j in range(nd)]
    return mode, ac, scales


def _taps(mode: str, isize: int, osize: int, ac: bool, scale: float | None) -> list[R.Taps]:
    if mode in ("nearest", "nearest_exact"):
        return R.nearest_taps(isize, osize, scale, mode == "nearest_exact")
    if mode == "linear":
        return R.linear_taps(isize, osize, ac, scale)
    if mode in ("linear_aa", "cubic_aa"):
        return R.antialias_taps(isize, osize, ac, scale, cubic=mode == "cubic_aa")
    return R.cubic_taps(isize, osize, ac, scale)


def _ratio(mode: str, isize: int, osize: int, ac: bool, scale: float | None) -> float:
    if mode in ("nearest", "nearest_exact"):
        return float(R.scales_value(scale, isize, osize))
    return float(R.area_scale(isize, osize, ac, scale))


def _stage_flops(runs: list[R.Run]) -> int:
    """Vector FLOPs per (other-dims) point of one stage: K muls and K-1 adds per output
    position with K > 1 taps; a single tap of weight 1 is a copy."""
    return sum(r.count * (0 if r.payload == (1.0,) else 2 * len(r.idx) - 1) for r in runs)


def _run_kernel(name: str, src: str, cur: Shape, dst: str, dim: int, run: R.Run) -> Kernel:
    vs = B.ivars(len(cur))
    loops = tuple((("P", run.count) if d == dim else (v, s)) for d, (v, s) in enumerate(zip(vs, cur)))

    def at(pos: Affine) -> tuple[Affine, ...]:
        return tuple(pos if d == dim else Affine.var(v) for d, v in enumerate(vs))

    oi = at(_p("P", run.step, run.start))
    terms: list[Expr] = []
    for i, w in zip(run.idx, run.payload):
        ld = Load(src, at(_p("P", run.shift, i)))
        terms.append(ld if w == 1.0 else call("mul", float(w), ld))
    expr = terms[0]
    for t in terms[1:]:
        expr = call("add", expr, t)
    return Kernel(name, loops, Load(dst, oi), "=", expr)


def _direct_copy(name: str, x: str, xs: Shape, out: str, merged: dict[int, tuple]) -> Kernel:
    """One kernel for copy-only resampling: ``out[.., P*p + R, ..] = x[.., P*q + a*R + b, ..]``."""
    loops: list[tuple[str, int]] = []
    oi: list[Affine] = []
    xi: list[Affine] = []
    for d, s in enumerate(xs):
        if d not in merged:
            loops.append((f"i{d}", s))
            oi.append(Affine.var(f"i{d}"))
            xi.append(Affine.var(f"i{d}"))
            continue
        p, q, a, b, osize = merged[d]
        loops += [(f"p{d}", osize // p), (f"r{d}", p)]
        oi.append(Affine.var(f"p{d}", p) + Affine.var(f"r{d}"))
        xi.append(_p(f"p{d}", q, b) + (Affine.var(f"r{d}", a) if a else Affine.of(0)))
    return Kernel(name, tuple(loops), Load(out, tuple(oi)), "=", Load(x, tuple(xi)))


@lowers(*[f"aten.{n}.{ov}" for n in (
    "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d",
    "_upsample_nearest_exact2d", "_upsample_nearest_exact3d", "upsample_linear1d",
    "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bilinear2d_aa",
    "_upsample_bicubic2d_aa") for ov in ("vec", "default")])
def _interpolate(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs, os_ = c.shape(x), c.out_shape
    nd = len(xs) - 2
    mode, ac, scales = _interp_args(str(c.node.target), a, kw, nd)
    if mode not in ("nearest", "nearest_exact") and c.dtype(x) not in FLOAT:
        raise Unsupported(f"{mode} interpolation of {c.dtype(x)} rounds in integer arithmetic, "
                          "which the IR does not model")
    plans: dict[int, list[R.Run]] = {}
    for j in range(nd):
        d = 2 + j
        taps = _taps(mode, xs[d], os_[d], ac, scales[j])
        if R.is_identity(taps, xs[d]):
            continue
        plans[d] = R.taps_runs(taps, _ratio(mode, xs[d], os_[d], ac, scales[j]))
    if not plans:
        c.emit(_copy(c.name("copy"), x, c.out, xs))
        return
    merged = {d: R.merged_copy(runs, os_[d]) for d, runs in plans.items()}
    if all(m is not None for m in merged.values()):
        c.emit(_direct_copy(c.name("near"), x, xs, c.out,
                            {d: (*m, os_[d]) for d, m in merged.items()}))
        return
    _stages(c, x, xs, plans)


def _stages(c: Ctx, x: str, xs: Shape, plans: dict[int, list[R.Run]]) -> None:
    """Resample one dim at a time, in the order with the least work (then the smallest
    intermediates); the last stage writes the output (through one copy when it is split
    into several runs, so that verification checks the whole output, not the last run)."""
    os_ = c.out_shape

    def cost(order: Sequence[int]) -> tuple[int, int]:
        cur = list(xs)
        flops = points = 0
        for d in order:
            other = math.prod(cur) // cur[d]
            flops += other * _stage_flops(plans[d])
            cur[d] = os_[d]
            points += math.prod(cur)
        return flops, points

    order = min(itertools.permutations(plans), key=cost)
    src, cur = x, tuple(xs)
    for n, d in enumerate(order):
        nxt = tuple(os_[e] if e == d else s for e, s in enumerate(cur))
        last = n == len(order) - 1
        direct = last and len(plans[d]) == 1
        dst = c.out if direct else c.tmp(nxt)
        for run in plans[d]:
            c.emit(_run_kernel(c.name(f"rs{d}_"), src, cur, dst, d, run))
        if last and not direct:
            c.emit(_copy(c.name("copy"), dst, c.out, nxt))
        src, cur = dst, nxt


# ------------------------------------------------------------------ pixel shuffle, im2col


@lowers("aten.pixel_shuffle.default", "aten.pixel_unshuffle.default")
def _pixel_shuffle(c: Ctx, a: tuple, kw: dict) -> None:
    """``out[.., c, h*r + i, w*r + j] = x[.., c*r*r + i*r + j, h, w]`` (unshuffle: reversed)."""
    x = c.t(a[0])
    r = int(a[1])
    shuffle = "unshuffle" not in str(c.node.target)
    small = c.shape(x) if shuffle else c.out_shape  # the (C*r*r, H, W) side
    lead = B.ivars(len(small) - 3, "b")
    ch, h, w = small[-3] // (r * r), small[-2], small[-1]
    loops = tuple(zip(lead, small[:-3])) + (("c", ch), ("h", h), ("i", r), ("w", w), ("j", r))
    packed = B.plain(lead) + (Affine.var("c", r * r) + Affine.var("i", r) + Affine.var("j"),
                              Affine.var("h"), Affine.var("w"))
    spread = B.plain(lead) + (Affine.var("c"), Affine.var("h", r) + Affine.var("i"),
                              Affine.var("w", r) + Affine.var("j"))
    oi, xi = (spread, packed) if shuffle else (packed, spread)
    c.emit(Kernel(c.name("shuf"), loops, Load(c.out, oi), "=", Load(x, xi)))


def _im2col_geometry(kernel: list[int], dil: list[int], pad: list[int], stride: list[int],
                     h: int, w: int) -> tuple[int, int]:
    oh = (h + 2 * pad[0] - dil[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dil[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    return oh, ow


@lowers("aten.im2col.default", "aten.col2im.default")
def _im2col(c: Ctx, a: tuple, kw: dict) -> None:
    """``col[n, (c*kh + i)*kw + j, oh*OW + ow] = x[n, c, oh*sh + i*dh - ph, ow*sw + j*dw - pw]``;
    col2im is the same map read backwards, accumulating where windows overlap."""
    fold = "col2im" in str(c.node.target)
    x = c.t(a[0])
    off = 1 if fold else 0
    kernel = _tup(a[1 + off], 2, 1)
    dil = _tup(a[2 + off], 2, 1)
    pad = _tup(a[3 + off], 2, 0)
    stride = _tup(a[4 + off], 2, 1)
    img_shape = c.out_shape if fold else c.shape(x)
    batched = len(img_shape) == 4
    ch, h, w = img_shape[-3:]
    oh, ow = _im2col_geometry(kernel, dil, pad, stride, h, w)
    lead = (("n", img_shape[0]),) if batched else ()
    nb = (Affine.var("n"),) if batched else ()
    loops = lead + (("c", ch), ("i", kernel[0]), ("j", kernel[1]), ("oh", oh), ("ow", ow))
    hi = Affine.var("oh", stride[0]) + Affine.var("i", dil[0]) + (-pad[0])
    wi = Affine.var("ow", stride[1]) + Affine.var("j", dil[1]) + (-pad[1])
    ext = dict(loops)
    guards = tuple(Guard(e, 0, n) for e, n in ((hi, h), (wi, w))
                   if e.bounds(ext)[0] < 0 or e.bounds(ext)[1] >= n)
    img = nb + (Affine.var("c"), hi, wi)
    col = nb + (Affine.var("c", kernel[0] * kernel[1]) + Affine.var("i", kernel[1]) + Affine.var("j"),
                Affine.var("oh", ow) + Affine.var("ow"))
    out = c.out
    if not fold:
        if guards:
            c.ew(lambda: Const(0.0))
        c.emit(Kernel(c.name("im2col"), loops, Load(out, col), "=", Load(x, img), guards=guards))
        return
    overlap = any(stride[d] < dil[d] * (kernel[d] - 1) + 1 for d in range(2))
    covered = all(set(range(n)) <= {o * stride[d] + k * dil[d] - pad[d] for o in range(no)
                                     for k in range(kernel[d])}
                  for d, no, n in ((0, oh, h), (1, ow, w)))
    if overlap or not covered:  # pixels no window reaches are zero; overlaps accumulate on it
        c.ew(lambda: Const(0.0))
    # init "keep": the zero fill is the start (an identity init would write unguarded)
    c.emit(Kernel(c.name("col2im"), loops, Load(out, img), "+=" if overlap else "=", Load(x, col),
                  guards=guards, init="keep"))


# ------------------------------------------------------------------ pooling


def _window_guards(pos: Sequence[Affine], sizes: Sequence[int], ext: dict[str, int]) -> tuple[Guard, ...]:
    out = []
    for e, n in zip(pos, sizes):
        lo, hi = e.bounds(ext)
        if lo < 0 or hi >= n:
            out.append(Guard(e, 0, n))
    return tuple(out)


def _flat(pos: Sequence[Affine], sizes: Sequence[int]) -> Affine:
    """Row-major flat index of a position in the pooled dims (torch's max-pool indices)."""
    acc = Affine.of(0)
    for e, n in zip(pos, sizes):
        acc = acc * n + e
    return acc


def _argmax_kernel(name: str, x: str, vals: str, idx: str, loops: tuple, xi: tuple, oi: tuple,
                   pos: Sequence[Affine], sizes: Sequence[int], guards: tuple) -> Kernel:
    """Index of the first window element equal to the max (torch scans in row-major order,
    so the first is the smallest flat index)."""
    big = float(math.prod(sizes))
    return Kernel(name, loops, Load(idx, oi), "min=",
                  call("where", call("eq", Load(x, xi), Load(vals, oi)), Index(_flat(pos, sizes)), big),
                  guards=guards)


def _divisor_table(c: Ctx, name: str, per_dim: list[list[int]], out_pooled: Shape) -> str | float:
    """1/divisor for each pooled output position, divisor = product of per-dim factors: a
    constant when every dim's factor is, else a table written by constant kernels."""
    runs = [R.find_runs([()] * len(f), [(float(v),) for v in f], tol=0.0) for f in per_dim]
    if all(len(r) == 1 for r in runs):
        return float(math.prod(f[0] for f in per_dim))
    inv = c.tmp(out_pooled)
    for combo in itertools.product(*runs):
        vs = [f"o{d}" for d in range(len(combo))]
        loops = tuple((v, r.count) for v, r in zip(vs, combo))
        oi = tuple(_p(v, r.step, r.start) for v, r in zip(vs, combo))
        val = 1.0 / math.prod(r.payload[0] for r in combo)
        c.emit(Kernel(c.name(name), loops, Load(inv, oi), "=", Const(val)))
    return inv


def _scale_out(c: Ctx, total: str, out: str, os_: Shape, nd: int, div: str | float) -> None:
    """``out = sum / divisor``: one operation per output element."""
    vs = B.ivars(len(os_))
    s = Load(total, B.plain(vs))
    if isinstance(div, float):
        body: Expr = s if div == 1.0 else call("div", s, div)
    else:
        body = call("mul", s, Load(div, B.plain(vs[-nd:])))
    c.emit(Kernel(c.name("avg"), tuple(zip(vs, os_)), Load(out, B.plain(vs)), "=", body))


@lowers("aten.max_pool2d_with_indices.default", "aten.max_pool3d_with_indices.default",
        "aten.max_pool1d.default", "aten.max_pool2d.default", "aten.max_pool3d.default",
        "aten.avg_pool1d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default")
def _pool(c: Ctx, a: tuple, kw: dict) -> None:
    """Windows with padding guards. Max pooling with indices adds the index of the first
    maximum; average pooling divides by torch's divisor (window clipped to the padded input,
    or to the input when ``count_include_pad=False``, or ``divisor_override``)."""
    t = str(c.node.target)
    x = c.t(a[0])
    xs = c.shape(x)
    nd = 1 if "1d" in t else (2 if "2d" in t else 3)
    kernel = _tup(a[1], nd, 1)
    stride = _tup(_arg(a, kw, 2, "stride"), nd, kernel)
    padding = _tup(_arg(a, kw, 3, "padding", 0), nd, 0)
    is_max = "max" in t
    dil = _tup(_arg(a, kw, 4, "dilation", 1), nd, 1) if is_max else [1] * nd
    out = c.out_n(0)
    os_ = c.shape(out)
    lead = len(xs) - nd
    bv = B.ivars(lead, "b")
    sp = [f"s{d}" for d in range(nd)]
    ks = [f"k{d}" for d in range(nd)]
    loops = tuple(zip(bv, xs[:lead])) + tuple(zip(sp, os_[lead:])) + tuple(zip(ks, kernel))
    ext = dict(loops)
    pos = [B.window_index(sp[d], ks[d], stride[d], dil[d], padding[d]) for d in range(nd)]
    guards = _window_guards(pos, xs[lead:], ext)
    xi = B.plain(bv) + tuple(pos)
    oi = B.plain(bv + sp)
    if is_max:
        c.emit(Kernel(c.name("max"), loops, Load(out, oi), "max=", Load(x, xi), guards=guards))
        if "with_indices" in t:
            c.emit(_argmax_kernel(c.name("arg"), x, out, c.out_n(1), loops, xi, oi, pos, xs[lead:], guards))
        return
    ceil_mode = bool(_arg(a, kw, 4, "ceil_mode", False))
    include_pad = bool(_arg(a, kw, 5, "count_include_pad", True))
    override = _arg(a, kw, 6, "divisor_override")
    del ceil_mode  # the output shape already says how many windows there are
    total = c.tmp(os_)
    c.emit(Kernel(c.name("sum"), loops, Load(total, oi), "+=", Load(x, xi), guards=guards))
    if override:
        div: str | float = float(override)
    else:
        per_dim = []
        for d in range(nd):
            n, k, s, p = xs[lead + d], kernel[d], stride[d], padding[d]
            f = []
            for o in range(os_[lead + d]):
                start = o * s - p
                end = min(start + k, n + p)
                f.append(end - start if include_pad else min(end, n) - max(start, 0))
            per_dim.append(f)
        div = _divisor_table(c, "inv", per_dim, os_[lead:])
    _scale_out(c, total, out, os_, nd, div)


@lowers("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default",
        "aten._adaptive_avg_pool3d.default", "aten.adaptive_avg_pool3d.default",
        "aten.adaptive_avg_pool1d.default", "aten.adaptive_max_pool2d.default",
        "aten.adaptive_max_pool3d.default", "aten.adaptive_max_pool1d.default")
def _adaptive(c: Ctx, a: tuple, kw: dict) -> None:
    """Window ``o`` covers ``[floor(o*I/O), ceil((o+1)*I/O))``; uneven windows split into runs
    of equal size whose start moves affinely; one kernel per combination of runs."""
    t = str(c.node.target)
    x = c.t(a[0])
    xs = c.shape(x)
    out = c.out_n(0)
    os_ = c.shape(out)
    nd = len(a[1]) if isinstance(a[1], (list, tuple)) else 1
    lead = len(xs) - nd
    bv = B.ivars(lead, "b")
    windows = [R.adaptive_windows(xs[lead + d], os_[lead + d]) for d in range(nd)]
    runs = [R.find_runs([(s,) for s, _ in w], [(float(n),) for _, n in w],
                        xs[lead + d] / os_[lead + d], tol=0.0) for d, w in enumerate(windows)]
    combos = list(itertools.product(*runs))
    is_max = "max" in t
    total = out if is_max else c.tmp(os_)
    pieces = []
    for combo in combos:
        sp = [f"s{d}" for d in range(nd)]
        ks = [f"k{d}" for d in range(nd)]
        loops = tuple(zip(bv, xs[:lead])) + tuple((v, r.count) for v, r in zip(sp, combo)) + \
            tuple((k, int(r.payload[0])) for k, r in zip(ks, combo))
        pos = [_p(s, r.shift, r.idx[0]) + Affine.var(k) for s, k, r in zip(sp, ks, combo)]
        xi = B.plain(bv) + tuple(pos)
        oi = B.plain(bv) + tuple(_p(s, r.step, r.start) for s, r in zip(sp, combo))
        pieces.append((loops, xi, oi, pos))
        c.emit(Kernel(c.name("max" if is_max else "sum"), loops, Load(total, oi),
                      "max=" if is_max else "+=", Load(x, xi)))
    if not is_max:
        div = _divisor_table(c, "inv", [[n for _, n in w] for w in windows], os_[lead:])
        _scale_out(c, total, out, os_, nd, div)
        return
    outs = c.lw.out_names(c.node)
    if len(outs) < 2 or outs[1] is None:
        return
    idx = c.out_n(1)
    dst = idx if len(combos) == 1 else c.tmp(os_, "int64")
    for loops, xi, oi, pos in pieces:
        c.emit(_argmax_kernel(c.name("arg"), x, out, dst, loops, xi, oi, pos, xs[lead:], ()))
    if dst != idx:
        c.emit(_copy(c.name("copy"), dst, idx, os_))


# ------------------------------------------------------------------ dtype-specific matmuls


@lowers("aten._int_mm.default")
def _int_mm(c: Ctx, a: tuple, kw: dict) -> None:
    """int8 x int8 -> int32 on the int8 matrix peak."""
    x, y = c.t(a[0]), c.t(a[1])
    matmul_into(c, x, c.shape(x), y, c.shape(y), c.out, c.out_shape, "identity")


@lowers("aten._scaled_mm.default")
def _scaled_mm(c: Ctx, a: tuple, kw: dict) -> None:
    """fp8 GEMM on the fp8 matrix peak, then ``* scale_a * scale_b (+ bias)`` per element,
    rounded to ``out_dtype``."""
    x, y = c.t(a[0]), c.t(a[1])
    sa, sb = c.t(a[2]), c.t(a[3])
    bias = _arg(a, kw, 4, "bias")
    if _arg(a, kw, 5, "scale_result") is not None:
        raise Unsupported("_scaled_mm with scale_result (fp8 output rescaling) is not modelled")
    os_ = c.out_shape
    acc = c.tmp(os_)
    matmul_into(c, x, c.shape(x), y, c.shape(y), acc, os_, "identity")
    vs = B.ivars(2)

    def scale(name: str) -> Load:
        return Load(name, B.broadcast_index(c.shape(name), os_, vs))

    body: Expr = call("mul", call("mul", Load(acc, B.plain(vs)), scale(sa)), scale(sb))
    if bias is not None:
        body = call("add", body, scale(c.t(bias)))
    c.emit(Kernel(c.name("scale"), tuple(zip(vs, os_)), Load(c.out, B.plain(vs)), "=", body))
