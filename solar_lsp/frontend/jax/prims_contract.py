"""Contracting JAX primitives: ``dot_general`` (matmul, batched, GEMV, outer product) and
``conv_general_dilated`` (grouped, strided, dilated and transposed convolutions)."""

from __future__ import annotations

import dataclasses

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.jax.context import JCtx, lowers
from solar_lsp.ir.core import Affine, Guard, Kernel, Load, call


@lowers("dot_general")
def _dot_general(c: JCtx) -> None:
    (lc, rc), (lb, rb) = c.p["dimension_numbers"]
    x, y = c.t(0), c.t(1)
    xs, ys = c.shape(x), c.shape(y)
    xi: list[str | None] = [None] * len(xs)
    yi: list[str | None] = [None] * len(ys)
    ext: dict[str, int] = {}
    bvars, kvars, mvars, nvars = [], [], [], []
    for i, (a, b) in enumerate(zip(lb, rb)):
        v = f"b{i}"
        ext[v], xi[a], yi[b] = xs[a], v, v
        bvars.append(v)
    for i, (a, b) in enumerate(zip(lc, rc)):
        v = f"k{i}"
        ext[v], xi[a], yi[b] = xs[a], v, v
        kvars.append(v)
    for d in range(len(xs)):
        if xi[d] is None:
            v = f"m{len(mvars)}"
            ext[v], xi[d] = xs[d], v
            mvars.append(v)
    for d in range(len(ys)):
        if yi[d] is None:
            v = f"n{len(nvars)}"
            ext[v], yi[d] = ys[d], v
            nvars.append(v)
    out_vars = bvars + mvars + nvars
    xa = tuple(Affine.var(v) for v in xi)
    ya = tuple(Affine.var(v) for v in yi)
    o = c.out()
    if not kvars:  # an outer product: no reduction, elementwise multiplies
        c.emit(Kernel(c.name("outer"), tuple((v, ext[v]) for v in out_vars), Load(o, B.plain(out_vars)),
                      "=", call("mul", Load(x, xa), Load(y, ya))))
        return
    k = B.contraction(c.name("dot"), o, out_vars, x, xa, y, ya, ext)
    if not mvars or not nvars:  # matrix-vector: GEMV on the vector units (docs/sol-model.md)
        k = dataclasses.replace(k, unit="vector")
    c.emit(k)


@lowers("conv_general_dilated")
def _conv(c: JCtx) -> None:
    p = c.p
    BG = int(p["batch_group_count"])  # > 1: a grouped conv's weight gradient (XLA semantics)
    if BG != 1 and (int(p["feature_group_count"]) != 1 or any(int(d) != 1 for d in p["lhs_dilation"] or ())):
        raise Unsupported("convolution with batch_group_count > 1 and feature groups or input dilation")
    dn = p["dimension_numbers"]
    ls, rs, os_spec = tuple(dn.lhs_spec), tuple(dn.rhs_spec), tuple(dn.out_spec)
    x, w = c.t(0), c.t(1)
    xs, ws = c.shape(x), c.shape(w)
    o = c.out()
    osh = c.shape(o)
    nd = len(xs) - 2
    G = int(p["feature_group_count"])
    strides = [int(s) for s in p["window_strides"]]
    pads = [(int(a), int(b)) for a, b in p["padding"]]
    ldil = [int(d) for d in (p["lhs_dilation"] or (1,) * nd)]
    rdil = [int(d) for d in (p["rhs_dilation"] or (1,) * nd)]
    transposed = any(d != 1 for d in ldil)
    if transposed and any(s != 1 for s in strides):
        raise Unsupported("convolution with both input dilation and window strides")
    cin, cout = xs[ls[1]], ws[rs[0]]
    # batch groups: output feature group g reads the g-th contiguous slice of the batch
    nb = xs[ls[0]] // BG
    cg_in, cg_out = cin // G, cout // (G * BG)
    ext = {"n": nb, "g": G * BG, "o": cg_out, "c": cg_in}
    xi: list[Affine] = [Affine.of(0)] * len(xs)
    wi: list[Affine] = [Affine.of(0)] * len(ws)
    oi: list[Affine] = [Affine.of(0)] * len(osh)
    xi[ls[0]] = Affine.var("g", nb) + Affine.var("n") if BG > 1 else Affine.var("n")
    xi[ls[1]] = Affine.var("c") if BG > 1 else Affine.var("g", cg_in) + Affine.var("c")
    wi[rs[0]], wi[rs[1]] = Affine.var("g", cg_out) + Affine.var("o"), Affine.var("c")
    oi[os_spec[0]], oi[os_spec[1]] = Affine.var("n"), Affine.var("g", cg_out) + Affine.var("o")
    guards = []
    sp = [f"s{d}" for d in range(nd)]
    ks = [f"k{d}" for d in range(nd)]
    for d in range(nd):
        ext[ks[d]] = ws[rs[2 + d]]
        wi[rs[2 + d]] = Affine.var(ks[d])
        if not transposed:
            ext[sp[d]] = osh[os_spec[2 + d]]
            e = Affine.var(sp[d], strides[d]) + Affine.var(ks[d], rdil[d]) + (-pads[d][0])
            xi[ls[2 + d]] = e
            oi[os_spec[2 + d]] = Affine.var(sp[d])
            lo, hi = e.bounds(ext)
            if lo < 0 or hi >= xs[ls[2 + d]]:
                guards.append(Guard(e, 0, xs[ls[2 + d]]))
        else:  # input dilation: scatter form over the real input points (no zero products)
            ext[sp[d]] = xs[ls[2 + d]]
            xi[ls[2 + d]] = Affine.var(sp[d])
            e = Affine.var(sp[d], ldil[d]) + Affine.var(ks[d], -rdil[d]) + pads[d][0]
            oi[os_spec[2 + d]] = e
            lo, hi = e.bounds(ext)
            if lo < 0 or hi >= osh[os_spec[2 + d]]:
                guards.append(Guard(e, 0, osh[os_spec[2 + d]]))
    outv = ["n", "g", "o"] + sp + (ks if transposed else [])
    if transposed:  # scatter form: zero the output first, then accumulate onto it
        c.fill(0.0)
    c.emit(B.contraction(c.name("conv"), o, outv, x, tuple(xi), w, tuple(wi), ext,
                         init="keep" if transposed else "identity",
                         guards=guards, out_idx=tuple(oi)))

