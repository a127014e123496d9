"""Scaled-dot-product attention in a training step kept whole, forward and backward
(docs/training.md, "Attention"; issue 19).

On the fake-tensor trace of a training step torch decomposes ``scaled_dot_product_attention``
into its math form (two batched matmuls, a softmax, the mask as a ``where``) in the forward and
in the backward, so a causal mask was counted over the whole score matrix. The trace
(frontend/torch/train.py) routes each call through :class:`AttentionAsOneOp` to solar's own
op pair, defined here with ``torch.library``:

- ``solar::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale,
  enable_gqa) -> (out, lse)``: torch's SDPA and the log-sum-exp of each query's logits, which
  is what a flash kernel keeps for its backward; lowered in attention.py.
- ``solar::scaled_dot_product_attention_backward(grad_out, q, k, v, out, lse, attn_mask,
  dropout_p, is_causal, scale, enable_gqa) -> (dq, dk, dv)``: torch's autograd of SDPA;
  lowered here.

The backward's IR: ``P = exp(logits(Q·Kᵀ) - lse)`` (the recompute, below), ``dV = Pᵀ·dO``,
``dP = dO·Vᵀ``, ``D = rowsum(dO ∘ O)``, ``dS = P ∘ (dP - D) · scale``, ``dQ = dS·K``,
``dK = dSᵀ·Q``, every S²-sized kernel with the causal guard of the forward. Counting rule: the
four products (2x the forward's two) and the softmax backward's vector work; the recompute of
P is emitted as a *part* of the op with ``repeat = 0``: the verifier runs it (the values of dQ,
dK, dV need it), the bounds charge nothing for it (a SOL bound may assume P is available),
and the op's traffic is Q, K, V, O, dO, lse (and the mask) in, dQ, dK, dV out.

Calls the op pair does not cover stay decomposed as before (full-square counts): dropout_p > 0
(a random mask) and an ``attn_mask`` that requires a gradient (the op pair gives it none).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils import flop_counter

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.torch.attention import (
    Attention,
    attention_of,
    logits_expr,
    score_kernels,
    sdpa_args,
)
from solar_lsp.frontend.torch.context import Ctx, lowers
from solar_lsp.ir.core import Affine, Kernel, Load, Op, call
from solar_lsp.ir.validate import validate_kernel

FORWARD = "solar::scaled_dot_product_attention"
BACKWARD = "solar::scaled_dot_product_attention_backward"
Tensor = torch.Tensor


# ------------------------------------------------------------------ the op pair (torch.library)


def _four(t: Tensor) -> Tensor:
    """``t`` as [batch, heads, length, dim] (leading dims folded, missing ones added)."""
    if t.dim() >= 4:
        return t.reshape((-1,) + tuple(t.shape[-3:]))
    return t.reshape((1,) * (4 - t.dim()) + tuple(t.shape))


def _work(t: Tensor) -> torch.dtype:
    """The dtype the golden kernels compute in: fp32 for half-precision inputs (torch's own
    half-precision CPU kernels round P and dS to the input dtype inside the kernel, a rounding
    the verifier's error model, fp32 compute and one rounding of each result, does not
    describe), the input's own dtype otherwise. The results are rounded to the input dtype."""
    return torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else t.dtype


def _flash_args(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None,
                enable_gqa: bool) -> tuple[Tensor, Tensor, Tensor, Tensor | None, int]:
    """The operands of torch's CPU flash-attention kernels: 4-d q, k, v (k/v heads repeated
    for grouped-query attention; half precision computed in fp32, see :func:`_work`), the mask
    as an additive one of the scores' shape, and the heads each k/v head serves."""
    q, k, v = (_four(t).to(_work(query)) for t in (query, key, value))
    rep = q.shape[1] // k.shape[1] if enable_gqa and k.shape[1] != q.shape[1] else 1
    if rep > 1:
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    mask = None
    if attn_mask is not None:
        m = attn_mask.expand(tuple(query.shape[:-1]) + (key.shape[-2],))
        if m.dtype == torch.bool:
            m = torch.zeros(m.shape, dtype=q.dtype).masked_fill(~m, float("-inf"))
        mask = _four(m.to(q.dtype)).contiguous()
    return q.contiguous(), k.contiguous(), v.contiguous(), mask, rep


@torch.library.custom_op(FORWARD, mutates_args=())
def attention_op(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None,
                 dropout_p: float, is_causal: bool, scale: float | None,
                 enable_gqa: bool) -> tuple[Tensor, Tensor]:
    """torch's attention output and the log-sum-exp of each query's scaled, masked logits
    (fp32), from its CPU flash-attention kernel."""
    q, k, v, mask, _ = _flash_args(query, key, value, attn_mask, enable_gqa)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, dropout_p, is_causal, attn_mask=mask, scale=scale)
    shape = tuple(query.shape[:-1])
    out = out.reshape(shape + (value.shape[-1],)).to(query.dtype).contiguous()
    return out, lse.reshape(shape).float().contiguous()


@attention_op.register_fake
def _attention_fake(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    out = query.new_empty(tuple(query.shape[:-1]) + (value.shape[-1],))
    return out, query.new_empty(tuple(query.shape[:-1]), dtype=torch.float32)


@torch.library.custom_op(BACKWARD, mutates_args=())
def attention_backward_op(grad_out: Tensor, query: Tensor, key: Tensor, value: Tensor, out: Tensor,
                          lse: Tensor, attn_mask: Tensor | None, dropout_p: float, is_causal: bool,
                          scale: float | None, enable_gqa: bool) -> tuple[Tensor, Tensor, Tensor]:
    """dQ, dK, dV for the output gradient ``grad_out``: torch's CPU flash-attention backward
    kernel (grouped-query k/v gradients summed over the heads that share them)."""
    q, k, v, mask, rep = _flash_args(query, key, value, attn_mask, enable_gqa)
    lse4 = _four(lse.unsqueeze(-1)).squeeze(-1).to(torch.float64 if q.dtype == torch.float64 else torch.float32)
    g4, o4 = (_four(t).to(q.dtype).contiguous() for t in (grad_out, out))
    dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
        g4, q, k, v, o4, lse4.contiguous(), dropout_p, is_causal, attn_mask=mask, scale=scale)
    if rep > 1:
        dk = dk.unflatten(1, (-1, rep)).sum(2)
        dv = dv.unflatten(1, (-1, rep)).sum(2)
    return tuple(g.reshape(t.shape).to(t.dtype).contiguous() for g, t in ((dq, query), (dk, key), (dv, value)))


@attention_backward_op.register_fake
def _attention_backward_fake(grad_out, query, key, value, out, lse, attn_mask, dropout_p,
                             is_causal, scale, enable_gqa):
    return tuple(torch.empty_like(t, memory_format=torch.contiguous_format) for t in (query, key, value))


def _setup_context(ctx: Any, inputs: tuple, output: tuple) -> None:
    query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa = inputs
    out, lse = output
    ctx.save_for_backward(query, key, value, out, lse, attn_mask)
    ctx.args = (dropout_p, is_causal, scale, enable_gqa)
    ctx.mark_non_differentiable(lse)
    ctx.set_materialize_grads(False)  # no zeros for the unused lse gradient in the graph


def _backward(ctx: Any, grad_out: Tensor, _grad_lse: Any) -> tuple:
    query, key, value, out, lse, attn_mask = ctx.saved_tensors
    if grad_out is None:  # the output feeds no loss term
        return (None,) * 8
    dq, dk, dv = attention_backward_op(grad_out, query, key, value, out, lse, attn_mask, *ctx.args)
    return dq, dk, dv, None, None, None, None, None


attention_op.register_autograd(_backward, setup_context=_setup_context)


_SDPA_PARAMS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_SDPA_DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None,
                  "enable_gqa": False}


def one_op_args(args: tuple, kwargs: dict) -> tuple | None:
    """The op pair's arguments for an ``F.scaled_dot_product_attention`` call, or None where
    the pair does not cover it (dropout, a mask that needs a gradient, unknown arguments)."""
    if len(args) > len(_SDPA_PARAMS) or set(kwargs) - set(_SDPA_PARAMS):
        return None
    bound = dict(_SDPA_DEFAULTS) | dict(zip(_SDPA_PARAMS, args)) | kwargs
    if any(p not in bound for p in _SDPA_PARAMS[:3]):
        return None
    q, k, v, mask = (bound[p] for p in _SDPA_PARAMS[:4])
    if not all(isinstance(t, Tensor) and t.dtype.is_floating_point for t in (q, k, v)):
        return None
    if float(bound["dropout_p"]) > 0 or (isinstance(mask, Tensor) and mask.requires_grad):
        return None
    scale = None if bound["scale"] is None else float(bound["scale"])
    return (q, k, v, mask, 0.0, bool(bound["is_causal"]), scale, bool(bound["enable_gqa"]))


_SDPA = torch._C._nn.scaled_dot_product_attention  # what F.scaled_dot_product_attention is


def _routed(*args: Any, **kwargs: Any) -> Tensor:
    call_args = one_op_args(args, kwargs)
    return attention_op(*call_args)[0] if call_args is not None else _SDPA(*args, **kwargs)


class AttentionAsOneOp(TorchFunctionMode):
    """``F.scaled_dot_product_attention`` as solar's op pair during a training-step trace
    (the calls :func:`one_op_args` covers; the others run as they are). A torch function
    mode does not see the calls torch's own Python functions make while it handles another
    (``nn.MultiheadAttention`` calls SDPA from ``F.multi_head_attention_forward``), so for
    the duration ``torch.nn.functional.scaled_dot_product_attention`` is routed too."""

    def __enter__(self) -> AttentionAsOneOp:
        self._before = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = _routed
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        F.scaled_dot_product_attention = self._before
        super().__exit__(*exc)

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func is _SDPA:
            return _routed(*args, **kwargs)
        return func(*args, **kwargs)


# ------------------------------------------------------------------ FlopCounterMode formulas


def _bhld(shape: Any) -> tuple[int, int, int, int]:
    """(batch, heads, length, dim) of an attention operand's shape (extra leading dims folded)."""
    s = tuple(int(x) for x in shape)
    lead = math.prod(s[:-3]) if len(s) > 3 else 1
    return lead, (s[-3] if len(s) >= 3 else 1), s[-2], s[-1]


@flop_counter.register_flop_formula(torch.ops.solar.scaled_dot_product_attention)
def _forward_flops(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """torch's formula for the fused attention kernels (Q·Kᵀ and P·V)."""
    return int(flop_counter.sdpa_flop_count(_bhld(query_shape), _bhld(key_shape), _bhld(value_shape)))


@flop_counter.register_flop_formula(torch.ops.solar.scaled_dot_product_attention_backward)
def _backward_flops(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None,
                    **kwargs) -> int:
    """The four products of the backward as torch's bmm formula counts them (what
    FlopCounterMode counts for the math backend's autograd): dP = dO·Vᵀ, dV = Pᵀ·dO,
    dQ = dS·K, dK = dSᵀ·Q. torch's ``sdpa_backward_flop_count`` adds a fifth, the recompute
    of Q·Kᵀ, which the counting rule leaves out."""
    b, h, sq, dq = _bhld(query_shape)
    sk, dv = _bhld(key_shape)[2], _bhld(value_shape)[3]
    n = b * h
    return int(flop_counter.bmm_flop((n, sq, dv), (n, dv, sk)) + flop_counter.bmm_flop((n, sk, sq), (n, sq, dv))
               + flop_counter.bmm_flop((n, sq, sk), (n, sk, dq)) + flop_counter.bmm_flop((n, dq, sq), (n, sq, sk)))


# ------------------------------------------------------------------ the backward's lowering

RECOMPUTE_NOTE = ("the recompute of P = exp(logits - lse) for the attention backward: run by the "
                  "verifier, not charged (repeat 0; docs/training.md, Attention)")


@lowers("solar.scaled_dot_product_attention_backward.default")
def _sdpa_backward(c: Ctx, a: tuple, kw: dict) -> None:
    """dQ, dK, dV (outputs 0, 1, 2) from dO, Q, K, V, O and lse (docs/training.md, Attention)."""
    keys = ("grad_out", "query", "key", "value", "out", "lse", "attn_mask", "dropout_p",
            "is_causal", "scale", "enable_gqa")
    arg = dict(zip(keys, a)) | kw
    mask, dropout, causal, scale = sdpa_args(tuple(arg.get(k) for k in keys[1:4]), {
        k: arg[k] for k in keys[6:] if k in arg})
    if dropout:
        raise Unsupported("attention dropout draws a random mask (dropout_p > 0)")
    at = attention_of(c, arg["query"], arg["key"], arg["value"], mask, causal, scale)
    p = _recompute(c, at, c.t(arg["lse"]))
    _gradients(c, at, p, c.t(arg["grad_out"]), c.t(arg["out"]))


def _recompute(c: Ctx, at: Attention, lse: str) -> str:
    """P = exp(logits(Q·Kᵀ) - lse), emitted as a part of the op that runs 0 times (the
    verifier executes it once; the bounds charge nothing); the name of P."""
    first = len(c.kernels)
    s = score_kernels(c, at, "rqk")
    sshape = at.scores
    sv = B.ivars(len(sshape))
    p = c.tmp(sshape, c.dtype(at.q))  # the products run at the inputs' precision
    row = Load(lse, B.plain(sv[:-1]))
    c.emit(*at.skip([Kernel(c.name("rp"), tuple(zip(sv, sshape)), Load(p, B.plain(sv)), "=",
                            call("exp", call("sub", logits_expr(c, at, Load(s, B.plain(sv)), sv), row)))],
                    sv[-1], sv[-2]))
    kernels = c.kernels[first:]
    del c.kernels[first:]
    lw, node = c.lw, c.node
    for k in kernels:
        validate_kernel(k, lw.program.tensors)
    lw.program.ops.append(Op(id=f"{node.name}_recompute", target=str(node.target),
                             line=lw.traced.lines.get(node.name), inputs=[], outputs=[],
                             kernels=kernels, call=("part", node.name, "recompute"), repeat=0,
                             phase=lw.traced.phases.get(node.name, "forward"), note=RECOMPUTE_NOTE))
    return p


def _gradients(c: Ctx, at: Attention, p: str, g: str, o: str) -> None:
    """dV = Pᵀ·dO, dP = dO·Vᵀ, D = rowsum(dO ∘ O), dS = P ∘ (dP - D) · scale, dQ = dS·K,
    dK = dSᵀ·Q into the op's outputs 0 (dQ), 1 (dK), 2 (dv)."""
    dq, dk, dv = c.out_n(0), c.out_n(1), c.out_n(2)
    i, j, d, e = (Affine.var(x) for x in "ijde")
    sshape = at.scores
    s_idx = at.qh + (i, j)
    kv_vars = [x for x in at.ob if x != "r"]
    c.emit(*at.skip([B.contraction(c.name("dv"), dv, kv_vars + ["j", "e"], p, s_idx, g, at.qh + (i, e),
                                   at.ext, out_idx=at.kh + (j, e))], "j", "i"))
    dp = c.tmp(sshape)
    c.emit(*at.skip([B.contraction(c.name("dp"), dp, at.ob + ["i", "j"], g, at.qh + (i, e),
                                   at.v, at.kh + (j, e), at.ext, out_idx=s_idx)], "j", "i"))
    rows = c.tmp(sshape[:-1])
    loops = tuple((x, at.ext[x]) for x in at.ob + ["i", "e"])
    c.emit(Kernel(c.name("rowdot"), loops, Load(rows, at.qh + (i,)), "+=",
                  call("mul", Load(g, at.qh + (i, e)), Load(o, at.qh + (i, e)))))
    ds = c.tmp(sshape, c.dtype(at.q))
    sv = B.ivars(len(sshape))
    c.emit(*at.skip([Kernel(c.name("ds"), tuple(zip(sv, sshape)), Load(ds, B.plain(sv)), "=",
                            call("mul", call("mul", Load(p, B.plain(sv)),
                                             call("sub", Load(dp, B.plain(sv)), Load(rows, B.plain(sv[:-1])))),
                                 at.scale))], sv[-1], sv[-2]))
    c.emit(*at.skip([B.contraction(c.name("dq"), dq, at.ob + ["i", "d"], ds, s_idx, at.k, at.kh + (j, d),
                                   at.ext, out_idx=at.qh + (i, d))], "j", "i"))
    c.emit(*at.skip([B.contraction(c.name("dk"), dk, kv_vars + ["j", "d"], ds, s_idx, at.q, at.qh + (i, d),
                                   at.ext, out_idx=at.kh + (j, d))], "j", "i"))

