"""Lowerings of softmax and of scaled-dot-product attention (kept whole: Q·K^T, the scaled
and masked logits, softmax, P·V; grouped-query heads read their shared K/V head)."""

from __future__ import annotations

import math

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.torch.context import Ctx, lowers
from solar_lsp.ir.core import Affine, Expr, Index, Kernel, Load, call


@lowers("aten._softmax.default", "aten._log_softmax.default", "aten.softmax.int", "aten.log_softmax.int")
def _softmax(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    c.emit(*B.softmax(c.name("sm"), x, c.shape(x), a[1], c.out, c.tmp, log="log" in str(c.node.target)))

@lowers("aten.scaled_dot_product_attention.default")
def _sdpa(c: Ctx, a: tuple, kw: dict) -> None:
    q, k, v = c.t(a[0]), c.t(a[1]), c.t(a[2])
    qs, ks_, vs_ = c.shape(q), c.shape(k), c.shape(v)
    mask = a[3] if len(a) > 3 else kw.get("attn_mask")
    causal = bool(a[5] if len(a) > 5 else kw.get("is_causal", False))
    scale = kw.get("scale", a[6] if len(a) > 6 else None)
    d = qs[-1]
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(d)
    lq, lk, ev = qs[-2], ks_[-2], vs_[-1]
    lead = qs[:-2]
    nb = len(lead)
    bv = B.ivars(nb, "b")
    # grouped-query attention: q head h = hk * rep + r reads k/v head hk
    rep = 1
    if nb >= 1 and ks_[-3] != qs[-3] if len(ks_) >= 3 else False:
        rep = qs[-3] // ks_[-3]
    ext = dict(zip(bv, lead)) | {"i": lq, "j": lk, "d": d, "e": ev}
    if rep > 1:
        ext[bv[-1]] = ks_[-3]
        ext["r"] = rep
        qh = B.plain(bv[:-1]) + (Affine.var(bv[-1], rep) + Affine.var("r"),)
        kh = B.plain(bv)
        ob = bv[:-1] + [bv[-1], "r"]
    else:
        qh = kh = B.plain(bv)
        ob = list(bv)
    sshape = tuple(lead) + (lq, lk)
    s = c.tmp(sshape)
    so = ob
    s_idx = qh + (Affine.var("i"), Affine.var("j"))
    c.emit(B.contraction(c.name("qk"), s, so + ["i", "j"], q, qh + (Affine.var("i"), Affine.var("d")),
                         k, kh + (Affine.var("j"), Affine.var("d")), ext, out_idx=s_idx))
    logits = c.tmp(sshape)
    sv = B.ivars(len(sshape))
    body: Expr = call("mul", Load(s, B.plain(sv)), scale)
    if mask is not None:
        mname = c.t(mask)
        ml = Load(mname, B.broadcast_index(c.shape(mname), sshape, sv))
        if c.dtype(mname) == "bool":
            body = call("where", ml, body, float("-inf"))
        else:
            body = call("add", body, ml)
    if causal:
        body = call("where", call("le", Index(Affine.var(sv[-1])), Index(Affine.var(sv[-2]))), body, float("-inf"))
    c.emit(Kernel(c.name("scale"), tuple(zip(sv, sshape)), Load(logits, B.plain(sv)), "=", body))
    p = c.tmp(sshape, c.dtype(q))  # P·V runs at the inputs' precision
    c.emit(*B.softmax(c.name("sm"), logits, sshape, -1, p, c.tmp))
    c.emit(B.contraction(c.name("pv"), c.out, so + ["i", "e"], p, s_idx,
                         v, kh + (Affine.var("j"), Affine.var("e")), ext,
                         out_idx=qh + (Affine.var("i"), Affine.var("e"))))

