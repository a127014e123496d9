"""Lowerings of the norms (layer, RMS, batch, instance, group): statistics over the
normalised dims, then one normalising pass with the affine folded in where it can be
(the kernels themselves come from norm_kernels)."""

from __future__ import annotations

from typing import Any

import torch

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.torch import norm_kernels as NK
from solar_lsp.frontend.torch.context import Ctx, Shape, lowers
from solar_lsp.ir.core import Affine, Kernel, Load, call


def _vec(c: Ctx, arg: Any, index: tuple[Affine, ...], vars_: tuple[str, ...]) -> NK.Affine1 | None:
    """A weight/bias argument (None when absent) indexed by ``index`` over ``vars_``."""
    return None if arg is None else NK.Affine1(c.t(arg), index, vars_)


def _stat_outputs(c: Ctx, sp: NK.NormSpace, mean: str | None, rstd: str, shape_of: Shape) -> None:
    """native_* variants also return mean and rstd: copy the statistics into them."""
    outs = c.lw.out_names(c.node)
    for i, src in ((1, mean), (2, rstd)):
        if len(outs) <= i or outs[i] is None or src is None or c.shape(outs[i]) != shape_of:
            continue
        dst = c.out_n(i)
        vs = list(sp.stat_vars)  # the leading dims; the normalised ones are kept as size 1
        di = sp.idx(vs) + (Affine.of(0),) * (len(shape_of) - len(vs))
        c.kernels.insert(len(c.kernels) - 1, Kernel(c.name("stat"), sp.sub(vs), Load(dst, di), "=",
                                                    Load(src, sp.idx(vs))))


@lowers("aten.layer_norm.default", "aten.native_layer_norm.default")
def _layer_norm(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    nd = len(a[1])
    w = a[2] if len(a) > 2 else kw.get("weight")
    b = a[3] if len(a) > 3 else kw.get("bias")
    eps = float(a[4] if len(a) > 4 else kw.get("eps", 1e-5))
    _row_norm(c, x, xs, nd, w, b, eps, rms=False)


@lowers("aten.rms_norm.default")
def _rms_norm(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    xs = c.shape(x)
    nd = len(a[1])
    w = a[2] if len(a) > 2 else kw.get("weight")
    eps = a[3] if len(a) > 3 else kw.get("eps")
    if eps is None:
        eps = torch.finfo(getattr(torch, c.dtype(x))).eps
    _row_norm(c, x, xs, nd, w, None, float(eps), rms=True)


def _row_norm(c: Ctx, x: str, xs: Shape, nd: int, w: Any, b: Any, eps: float, rms: bool) -> None:
    """Layer / RMS norm: statistics per leading index over the last ``nd`` dims; the affine
    runs along the normalised dims (no folding: it would be as large as x)."""
    vs = B.ivars(len(xs))
    lead, norm = tuple(vs[:len(xs) - nd]), tuple(vs[len(xs) - nd:])
    sp = NK.NormSpace(tuple(zip(vs, xs)), B.plain(vs), lead)
    ks, mean, rstd, _ = NK.statistics(lambda s: c.name(s), sp, x, c.tmp, eps, rms=rms)
    c.emit(*ks)
    c.emit(*NK.normalize_out(lambda s: c.name(s), sp, x, c.out_n(0), B.plain(vs), mean, rstd,
                             _vec(c, w, B.plain(norm), norm), _vec(c, b, B.plain(norm), norm), c.tmp))
    _stat_outputs(c, sp, mean, rstd, tuple(s if d < len(xs) - nd else 1 for d, s in enumerate(xs)))


@lowers("aten._native_batch_norm_legit_no_training.default", "aten.batch_norm.default",
        "aten._native_batch_norm_legit.default", "aten.native_batch_norm.default",
        "aten._native_batch_norm_legit.no_stats", "aten._native_batch_norm_legit_functional.default")
def _batch_norm(c: Ctx, a: tuple, kw: dict) -> None:
    """Batch statistics per channel in training (and the running-stat updates of the
    functional variant), running statistics in eval; both fold into a per-channel
    scale and shift."""
    t = str(c.node.target)
    x = c.t(a[0])
    xs = c.shape(x)
    w, b = a[1], a[2]
    if "no_stats" in t:
        rm = rv = None
        training, momentum, eps = bool(a[3]), float(a[4]), float(a[5])
    elif "no_training" in t:
        rm, rv, training, momentum, eps = a[3], a[4], False, float(a[5]), float(a[6])
    else:
        rm, rv, training, momentum, eps = a[3], a[4], bool(a[5]), float(a[6]), float(a[7])
    vs = B.ivars(len(xs))
    ch = (Affine.var(vs[1]),)
    sp = NK.NormSpace(tuple(zip(vs, xs)), B.plain(vs), (vs[1],))
    name = lambda s: c.name(s)  # noqa: E731
    out = c.out_n(0)
    if training or rm is None:
        outs = c.lw.out_names(c.node)
        keep = [i for i in (1, 2) if len(outs) > i and outs[i] is not None
                and c.shape(outs[i]) == (xs[1],)]
        ks, mean, rstd, q = NK.statistics(name, sp, x, c.tmp, eps,
                                          mean_out=c.out_n(1) if 1 in keep else None,
                                          rstd_out=c.out_n(2) if 2 in keep else None)
        c.emit(*ks)
        if "functional" in t and rm is not None and len(outs) > 4:
            n = sp.n
            unbiased = call("mul", call("sub", call("div", Load(q, ch), float(n)),
                                        call("mul", Load(mean, ch), Load(mean, ch))),
                            float(n) / max(n - 1, 1))
            for i, run, new in ((3, rm, Load(mean, ch)), (4, rv, unbiased)):
                c.emit(Kernel(c.name("running"), ((vs[1], xs[1]),), Load(c.out_n(i), ch), "=",
                              call("add", call("mul", Load(c.t(run), ch), 1.0 - momentum),
                                   call("mul", new, momentum))))
    else:
        mean = c.t(rm)
        rstd = c.tmp((xs[1],))
        c.emit(Kernel(c.name("rstd"), ((vs[1], xs[1]),), Load(rstd, ch), "=",
                      call("rsqrt", call("add", Load(c.t(rv), ch), eps))))
    c.emit(*NK.normalize_out(name, sp, x, out, B.plain(vs), mean, rstd,
                             _vec(c, w, ch, (vs[1],)), _vec(c, b, ch, (vs[1],)), c.tmp))


@lowers("aten.instance_norm.default")
def _instance_norm(c: Ctx, a: tuple, kw: dict) -> None:
    """Statistics per (sample, channel) over the spatial dims (or the running statistics
    when ``use_input_stats`` is off); the affine folds per (sample, channel)."""
    x = c.t(a[0])
    xs = c.shape(x)
    w, b, rm, rv, use_stats, eps = a[1], a[2], a[3], a[4], bool(a[5]), float(a[7])
    vs = B.ivars(len(xs))
    ch = (Affine.var(vs[1]),)
    name = lambda s: c.name(s)  # noqa: E731
    if not use_stats and rm is not None:
        sp = NK.NormSpace(tuple(zip(vs, xs)), B.plain(vs), (vs[1],))
        mean, rstd = c.t(rm), c.tmp((xs[1],))
        c.emit(Kernel(c.name("rstd"), ((vs[1], xs[1]),), Load(rstd, ch), "=",
                      call("rsqrt", call("add", Load(c.t(rv), ch), eps))))
    else:
        sp = NK.NormSpace(tuple(zip(vs, xs)), B.plain(vs), (vs[0], vs[1]))
        ks, mean, rstd, _ = NK.statistics(name, sp, x, c.tmp, eps)
        c.emit(*ks)
    c.emit(*NK.normalize_out(name, sp, x, c.out, B.plain(vs), mean, rstd,
                             _vec(c, w, ch, (vs[1],)), _vec(c, b, ch, (vs[1],)), c.tmp))


@lowers("aten.group_norm.default", "aten.native_group_norm.default")
def _group_norm(c: Ctx, a: tuple, kw: dict) -> None:
    """Statistics per (sample, group); the affine folds per (sample, channel)."""
    x = c.t(a[0])
    xs = c.shape(x)
    t = str(c.node.target)
    if "native" in t:
        w, b, groups, eps = a[1], a[2], int(a[6]), float(a[7])
    else:
        groups = int(a[1])
        w = a[2] if len(a) > 2 else kw.get("weight")
        b = a[3] if len(a) > 3 else kw.get("bias")
        eps = float(a[4] if len(a) > 4 else kw.get("eps", 1e-5))
    n, ch = xs[0], xs[1]
    cg = ch // groups
    spv = [f"s{d}" for d in range(len(xs) - 2)]
    loops = (("n", n), ("g", groups), ("c", cg)) + tuple(zip(spv, xs[2:]))
    xi = (Affine.var("n"), Affine.var("g", cg) + Affine.var("c")) + B.plain(spv)
    sp = NK.NormSpace(loops, xi, ("n", "g"))
    name = lambda s: c.name(s)  # noqa: E731
    outs = c.lw.out_names(c.node)
    keep = {i: c.out_n(i) for i in (1, 2) if len(outs) > i and outs[i] is not None
            and c.shape(outs[i]) == (n, groups)}
    ks, mean, rstd, _ = NK.statistics(name, sp, x, c.tmp, eps, mean_out=keep.get(1), rstd_out=keep.get(2))
    c.emit(*ks)
    chi = (Affine.var("g", cg) + Affine.var("c"),)
    c.emit(*NK.normalize_out(name, sp, x, c.out_n(0), xi, mean, rstd, _vec(c, w, chi, ("g", "c")),
                             _vec(c, b, chi, ("g", "c")), c.tmp))
