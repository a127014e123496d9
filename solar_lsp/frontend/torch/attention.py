"""Lowerings of softmax, of scaled-dot-product attention (kept whole: Q·K^T, the scaled and
masked logits, softmax, P·V; grouped-query heads read their shared K/V head) and of the
triangular masks attention takes (``tril``/``triu``, kept whole).

A causal attention (``is_causal=True``, or a boolean mask that is a ``tril`` by its producers)
carries the mask as an affine guard ``key <= query + d`` on every kernel of the op: the points
above the diagonal are never computed, as a flash kernel skips the blocks there, and the
counts are the lower triangle's (docs/sol-model.md "Causal attention").
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.torch.context import Ctx, lowers
from solar_lsp.ir.core import Affine, Expr, Guard, Index, Kernel, Load, call


@lowers("aten._softmax.default", "aten._log_softmax.default", "aten.softmax.int", "aten.log_softmax.int")
def _softmax(c: Ctx, a: tuple, kw: dict) -> None:
    x = c.t(a[0])
    c.emit(*B.softmax(c.name("sm"), x, c.shape(x), a[1], c.out, c.tmp, log="log" in str(c.node.target)))


@lowers("aten.tril.default", "aten.triu.default")
def _tril(c: Ctx, a: tuple, kw: dict) -> None:
    """``out = where(j - i <= d, x, 0)`` (tril; triu: ``>=``): one comparison per element."""
    x = c.t(a[0])
    d = int(a[1] if len(a) > 1 else kw.get("diagonal", 0))
    shape = c.shape(x)
    vs = B.ivars(len(shape))
    above = Index(Affine.var(vs[-1]) + Affine.var(vs[-2], -1))
    keep = call("le" if "tril" in str(c.node.target) else "ge", above, d)
    c.emit(Kernel(c.name("tri"), tuple(zip(vs, shape)), Load(c.out, B.plain(vs)), "=",
                  call("where", keep, Load(x, B.plain(vs)), 0.0)))


@dataclasses.dataclass(frozen=True)
class Attention:
    """The index space of one attention op: its q/k/v tensors, the extents of its loops
    (batch dims ``b0..``, query ``i``, key ``j``, head dim ``d``, value dim ``e``; grouped-query
    attention adds ``r``: q head h = hk * rep + r reads k/v head hk), the q-side and k-side
    head indices, the output loop order of the q side, the scale and the diagonal of a
    causal mask (None: no mask recognized as a lower triangle)."""

    q: str
    k: str
    v: str
    ext: dict
    qh: tuple
    kh: tuple
    ob: list
    lead: tuple
    scale: float
    diag: int | None
    mask: Any

    def skip(self, ks: list[Kernel], key: str, query: str) -> list[Kernel]:
        """``ks`` with the causal guard ``key <= query + diag`` (unchanged without a mask)."""
        if self.diag is None:
            return ks
        g = Guard(Affine.var(key) + Affine.var(query, -1), None, self.diag + 1)
        return [dataclasses.replace(kk, guards=kk.guards + (g,)) for kk in ks]

    @property
    def scores(self) -> tuple[int, ...]:
        """The shape of the score matrix (the q side's batch dims, Lq, Lk)."""
        return tuple(self.lead) + (self.ext["i"], self.ext["j"])


def attention_of(c: Ctx, q_arg: Any, k_arg: Any, v_arg: Any, mask: Any, causal: bool,
                 scale: Any) -> Attention:
    """The :class:`Attention` of an op reading ``q_arg, k_arg, v_arg`` (fx nodes)."""
    q, k, v = c.t(q_arg), c.t(k_arg), c.t(v_arg)
    qs, ks_, vs_ = c.shape(q), c.shape(k), c.shape(v)
    d = qs[-1]
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(d)
    lq, lk, ev = qs[-2], ks_[-2], vs_[-1]
    lead = qs[:-2]
    bv = B.ivars(len(lead), "b")
    rep = qs[-3] // ks_[-3] if len(lead) >= 1 and len(ks_) >= 3 and ks_[-3] != qs[-3] else 1
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
    # the diagonal above which keys are masked: is_causal (top-left aligned, as torch's) or a
    # boolean mask that is a tril by its producers
    diag = 0 if causal else (_tril_diagonal(mask, (lq, lk)) if mask is not None else None)
    return Attention(q, k, v, ext, qh, kh, ob, tuple(lead), scale, diag, mask)


def sdpa_args(a: tuple, kw: dict) -> tuple[Any, float, bool, Any]:
    """``(attn_mask, dropout_p, is_causal, scale)`` of an SDPA call's arguments (the ATen
    op's and solar's own, which share its order)."""
    mask = a[3] if len(a) > 3 else kw.get("attn_mask")
    dropout = float(a[4] if len(a) > 4 else kw.get("dropout_p", 0.0))
    causal = bool(a[5] if len(a) > 5 else kw.get("is_causal", False))
    scale = a[6] if len(a) > 6 else kw.get("scale")
    return mask, dropout, causal, scale


@lowers("aten.scaled_dot_product_attention.default")
def _sdpa(c: Ctx, a: tuple, kw: dict) -> None:
    mask, _, causal, scale = sdpa_args(a, kw)
    at = attention_of(c, a[0], a[1], a[2], mask, causal, scale)
    emit_attention(c, at, c.out)


@lowers("solar.scaled_dot_product_attention.default")
def _sdpa_train(c: Ctx, a: tuple, kw: dict) -> None:
    """The training step's attention (frontend/torch/attention_backward.py): the output and
    the log-sum-exp of each query's scores, which its backward reads instead of P."""
    mask, dropout, causal, scale = sdpa_args(a, kw)
    if dropout:
        raise Unsupported("attention dropout draws a random mask (dropout_p > 0)")
    at = attention_of(c, a[0], a[1], a[2], mask, causal, scale)
    emit_attention(c, at, c.out_n(0), c.out_n(1))


def emit_attention(c: Ctx, at: Attention, out: str, lse: str | None = None) -> None:
    """Q·Kᵀ, the scaled and masked logits, softmax, P·V into ``out``; with ``lse``, also the
    log-sum-exp of each query's logits (``max + log(sum)``, from the softmax's own row max
    and sum: one log and one add per query)."""
    sshape = at.scores
    s_idx = at.qh + (Affine.var("i"), Affine.var("j"))
    s = score_kernels(c, at, "qk")
    logits = c.tmp(sshape)
    sv = B.ivars(len(sshape))
    c.emit(*at.skip([Kernel(c.name("scale"), tuple(zip(sv, sshape)), Load(logits, B.plain(sv)), "=",
                            logits_expr(c, at, Load(s, B.plain(sv)), sv))], sv[-1], sv[-2]))
    p = c.tmp(sshape, c.dtype(at.q))  # P·V runs at the inputs' precision
    rows: list[str] = []

    def tmp(shape: tuple[int, ...]) -> str:
        rows.append(c.tmp(shape))
        return rows[-1]
    c.emit(*at.skip(B.softmax(c.name("sm"), logits, sshape, -1, p, tmp), sv[-1], sv[-2]))
    c.emit(*at.skip([B.contraction(c.name("pv"), out, at.ob + ["i", "e"], p, s_idx,
                                   at.v, at.kh + (Affine.var("j"), Affine.var("e")), at.ext,
                                   out_idx=at.qh + (Affine.var("i"), Affine.var("e")))], "j", "i"))
    if lse is not None:  # rows[0]: the row max, rows[1]: the row sum (B.softmax's order)
        lv = sv[:-1]
        row = B.plain(lv) + (Affine.of(0),)
        c.emit(Kernel(c.name("lse"), tuple(zip(lv, sshape[:-1])), Load(lse, B.plain(lv)), "=",
                      call("add", Load(rows[0], row), call("log", Load(rows[1], row)))))


def score_kernels(c: Ctx, at: Attention, tag: str) -> str:
    """``S = Q·Kᵀ`` (unscaled) into a new temporary, the causal points only; its name."""
    s = c.tmp(at.scores)
    s_idx = at.qh + (Affine.var("i"), Affine.var("j"))
    c.emit(*at.skip([B.contraction(c.name(tag), s, at.ob + ["i", "j"], at.q,
                                   at.qh + (Affine.var("i"), Affine.var("d")),
                                   at.k, at.kh + (Affine.var("j"), Affine.var("d")), at.ext,
                                   out_idx=s_idx)], "j", "i"))
    return s


def logits_expr(c: Ctx, at: Attention, s: Load, sv: list[str]) -> Expr:
    """``s · scale``, then the mask: a boolean one selects (-inf where False), any other adds."""
    body: Expr = call("mul", s, at.scale)
    if at.mask is None:
        return body
    mname = c.t(at.mask)
    ml = Load(mname, B.broadcast_index(c.shape(mname), at.scores, sv))
    if c.dtype(mname) == "bool":
        return call("where", ml, body, float("-inf"))
    return call("add", body, ml)


# Ops a mask passes through with its zeros kept zeros and its last two dims in place.
_SAME_ZEROS = {"aten._to_copy.default", "aten.clone.default", "aten.alias.default",
               "aten.contiguous.default", "aten.lift_fresh_copy.default"}
_SHAPE_OPS = {"aten.view.default", "aten.reshape.default", "aten._unsafe_view.default",
              "aten.unsqueeze.default", "aten.expand.default"}
# comparison with a scalar c that maps 0 to False: (op, holds for c)
_FALSE_AT_ZERO = {"aten.ne.Scalar": lambda c: c == 0, "aten.eq.Scalar": lambda c: c != 0,
                  "aten.gt.Scalar": lambda c: c >= 0, "aten.ge.Scalar": lambda c: c > 0,
                  "aten.lt.Scalar": lambda c: c <= 0, "aten.le.Scalar": lambda c: c < 0}
_AND = {"aten.logical_and.default", "aten.bitwise_and.Tensor", "aten.mul.Tensor"}
_OR = {"aten.logical_or.default", "aten.bitwise_or.Tensor"}


def _tril_diagonal(node: Any, scores: tuple[int, int]) -> int | None:
    """``d`` when the mask ``node`` (its last two dims ``scores``) is zero (False) wherever
    key > query + d, as its producers show: a ``tril(x, d)`` (whatever x) or an ``eye``, through
    casts, comparisons that keep 0 false, ANDs, ORs, views that keep its last two dims and
    slices of them from 0; else None. Only the zeros above the diagonal matter: the values on and below it
    are still read from the mask."""
    return _diagonal_of(node, 0) if _last2(node) == scores else None


def _diagonal_of(node: Any, depth: int) -> int | None:
    if depth > 16 or not hasattr(node, "target"):
        return None
    t, args = str(node.target), node.args
    if t == "aten.tril.default":
        return int(args[1] if len(args) > 1 else node.kwargs.get("diagonal", 0))
    if t.startswith("aten.eye."):
        return 0
    if t == "aten.slice.Tensor":  # a slice of the last two dims keeps indices if it starts at 0
        dim, rank = (args[1] if len(args) > 1 else 0), len(node.meta["val"].shape)
        start, step = (args[2] if len(args) > 2 else 0), (args[4] if len(args) > 4 else 1)
        if dim % rank >= rank - 2 and (start not in (0, None) or step != 1):
            return None
        return _diagonal_of(args[0], depth + 1)
    if t in _FALSE_AT_ZERO and not (len(args) > 1 and isinstance(args[1], (int, float, bool))
                                    and _FALSE_AT_ZERO[t](args[1])):
        return None
    if t in _SAME_ZEROS or t in _SHAPE_OPS or t in _FALSE_AT_ZERO:
        return _diagonal_of(args[0], depth + 1) if _last2(args[0]) == _last2(node) else None
    if t in _AND:
        found = [_diagonal_of(x, depth + 1) for x in args[:2] if _last2(x) == _last2(node)]
        found = [f for f in found if f is not None]
        return min(found) if found else None
    if t in _OR:  # zero where both are
        found = [_diagonal_of(x, depth + 1) if _last2(x) == _last2(node) else None for x in args[:2]]
        return None if None in found or len(found) < 2 else max(found)
    return None


def _last2(node: Any) -> tuple[int, ...] | None:
    val = getattr(node, "meta", {}).get("val")
    shape = tuple(getattr(val, "shape", ()))
    return tuple(int(s) for s in shape[-2:]) if len(shape) >= 2 else None
