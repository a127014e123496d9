"""Planted bugs in the lowerings, each a plausible mistake that verification must catch
(issue 16). ``benchmarks/mutations.py`` runs them; ``tests/test_mutations.py`` runs one per class.

A mutant is planted by monkeypatching only, never by editing a source file: it wraps a
registered lowering (``LOWERINGS`` of the torch or JAX frontend) and rewrites the kernels it
emitted or the arguments it sees, or it wraps the counter (``bounds.einsum_graph``) or the
JAX lowering's result. Every wrapper records whether it changed anything: a mutant that
changed nothing on its model was not planted, and is reported as such rather than scored.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from solar_lsp.bounds import einsum_graph
from solar_lsp.frontend.jax.prims import LOWERINGS as JAX_LOWERINGS  # the table, filled
from solar_lsp.frontend.torch.lower import LOWERINGS as TORCH_LOWERINGS  # the table, filled
from solar_lsp.ir.core import Affine, Call, Const, Expr, Guard, Index, Kernel, Load

CLASSES = ("index", "bound", "axis", "scale", "tolerance", "count", "identity", "coverage")


class Patches:
    """Monkeypatches applied by one mutant, undone in reverse order; ``changed`` is set by
    a wrapper the first time it actually alters something."""

    def __init__(self) -> None:
        self.undo: list[Callable[[], None]] = []
        self.changed = False

    def setitem(self, d: dict, key: Any, value: Any) -> None:
        had, old = key in d, d.get(key)
        d[key] = value
        self.undo.append(lambda: d.__setitem__(key, old) if had else d.pop(key, None))

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        old = getattr(obj, name)
        setattr(obj, name, value)
        self.undo.append(lambda: setattr(obj, name, old))

    def restore(self) -> None:
        for u in reversed(self.undo):
            u()
        self.undo.clear()


@dataclass
class Mutant:
    """One planted bug: its class, the model it runs on and how it is planted."""

    name: str
    cls: str
    model: str
    what: str
    plant: Callable[[Patches], None]
    fast: bool = False  # one per class runs in CI (tests/test_mutations.py)


@contextmanager
def planted(m: Mutant) -> Iterator[Patches]:
    """The mutant's patches, for the duration of the block."""
    p = Patches()
    try:
        m.plant(p)
        yield p
    finally:
        p.restore()


# ------------------------------------------------------------------ rewriting kernels


def rewrite(e: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """``e`` with every node (children first) replaced by ``fn(node)`` where that is not None."""
    if isinstance(e, Call):
        e = Call(e.fn, tuple(rewrite(a, fn) for a in e.args))
    r = fn(e)
    return e if r is None else r


def on_expr(fn: Callable[[Expr], Expr | None], when: Callable[[Kernel], bool] = lambda k: True):
    """A kernel rewrite applying ``fn`` to the statement of the kernels ``when`` accepts."""
    def go(c: Any, ks: list[Kernel]) -> list[Kernel]:
        return [dataclasses.replace(k, expr=rewrite(k.expr, fn)) if when(k) else k for k in ks]
    return go


def shrink(var: str, by: int = 1, when: Callable[[Kernel], bool] = lambda k: True, half: bool = False):
    """A kernel rewrite running loop ``var`` over ``by`` fewer values (or half of them)."""
    def go(c: Any, ks: list[Kernel]) -> list[Kernel]:
        out = []
        for k in ks:
            if when(k) and var in k.extents:
                k = dataclasses.replace(k, loops=tuple(
                    (v, (n // 2 if half else n - by) if v == var else n) for v, n in k.loops))
            out.append(k)
        return out
    return go


def shift_read(tensor: Callable[[Any], str], dim: int, delta: int,
               when: Callable[[Kernel], bool] = lambda k: True):
    """A kernel rewrite reading ``tensor`` at index + ``delta`` along ``dim`` (a guard on
    the old index moves with it, so every read stays in bounds)."""
    def go(c: Any, ks: list[Kernel]) -> list[Kernel]:
        name = tensor(c)
        return [_shift_kernel(k, name, dim, delta) if when(k) else k for k in ks]
    return go


def _shift_kernel(k: Kernel, name: str, dim: int, delta: int) -> Kernel:
    old: list[Affine] = []

    def fix(e: Expr) -> Expr | None:
        if isinstance(e, Load) and e.tensor == name and len(e.index) > dim:
            old.append(e.index[dim])
            idx = list(e.index)
            idx[dim] = idx[dim] + delta
            return Load(e.tensor, tuple(idx))
        return None
    expr = rewrite(k.expr, fix)
    guards = tuple(Guard(g.expr + delta, g.lo, g.hi) if g.expr in old else g for g in k.guards)
    return dataclasses.replace(k, expr=expr, guards=guards)


def load_to_const(tensor: Callable[[Any], str], value: float):
    """A kernel rewrite reading the constant ``value`` wherever ``tensor`` was read."""
    def go(c: Any, ks: list[Kernel]) -> list[Kernel]:
        name = tensor(c)
        return on_expr(lambda e: Const(value) if isinstance(e, Load) and e.tensor == name else None)(c, ks)
    return go


def layer_norm_eps(c: Any) -> float:
    """A ``layer_norm`` node's epsilon: its fifth argument, or torch's default 1e-5 when the
    trace left the default out."""
    args = c.node.args
    return float(args[4] if len(args) > 4 else c.node.kwargs.get("eps", 1e-5))


def arg_tensor(i: int) -> Callable[[Any], str]:
    """The IR name of the torch node's ``i``-th argument."""
    return lambda c: c.lw.env[c.node.args[i].name]


def drop_const_term(fn: str, value: Callable[[Any], float] | None = None):
    """A kernel rewrite replacing ``fn(x, const)`` by ``x`` (the constant one of ``value``)."""
    def go(c: Any, ks: list[Kernel]) -> list[Kernel]:
        want = value(c) if value else None

        def fix(e: Expr) -> Expr | None:
            if isinstance(e, Call) and e.fn == fn and isinstance(e.args[1], Const):
                if want is None or math.isclose(e.args[1].value, want, rel_tol=1e-9):
                    return e.args[0]
            return None
        return on_expr(fix)(c, ks)
    return go


def matrix(k: Kernel) -> bool:
    return k.unit == "matrix"


def last(ks_pred: str) -> Callable[[Kernel], bool]:
    """Kernels whose name contains ``ks_pred``."""
    return lambda k: ks_pred in k.name


# ------------------------------------------------------------------ planting


def in_lowering(targets: list[str], post=None, args=None, jax: bool = False):
    """Plant: wrap the lowering of ``targets``; ``args(c, a, kw)`` may change what it sees,
    ``post(c, kernels)`` what it emitted."""
    table = JAX_LOWERINGS if jax else TORCH_LOWERINGS

    def plant(p: Patches) -> None:
        for t in targets:
            orig = table[t]

            def mutated(c, *rest, _orig=orig):
                if args is not None:
                    params = dict(getattr(c, "p", {}) or {}) if jax else None
                    new = args(c, *rest)
                    p.changed |= new != tuple(rest) or (jax and c.p != params)
                    rest = new
                _orig(c, *rest)
                if post is not None:
                    before = list(c.kernels)
                    c.kernels[:] = post(c, before)
                    p.changed |= c.kernels != before
            p.setitem(table, t, mutated)
    return plant


def in_counter(fn: Callable[..., einsum_graph.Counts]):
    """Plant: wrap the counter, so every count the pipeline takes goes through
    ``fn(kernel, counts, count)`` (``count`` counts another kernel the same way)."""
    def plant(p: Patches) -> None:
        orig = einsum_graph.count_kernel

        def counted(k, *a, **kw):
            got = orig(k, *a, **kw)
            new = fn(k, got, lambda k2: orig(k2, *a, **kw))
            p.changed |= new != got
            return new
        p.setattr(einsum_graph, "count_kernel", counted)
    return plant


def free_function(name: str):
    """Plant: the counter takes ``name`` for a free selection (no FLOP, no transcendental)."""
    def plant(p: Patches) -> None:
        p.setattr(einsum_graph, "FREE_FUNCS", frozenset(einsum_graph.FREE_FUNCS | {name}))
        table = dict(einsum_graph.SCALAR_FUNCS)
        table[name] = (table[name][0], False)
        p.setattr(einsum_graph, "SCALAR_FUNCS", table)
        p.setattr(einsum_graph, "SFU_COST", {k: v for k, v in einsum_graph.SFU_COST.items() if k != name})
        p.changed = True  # checked by the counts differing from the reference
    return plant


def scan_one_trip_short(p: Patches) -> None:
    """Plant: the JAX lowering counts every scan body T-1 times instead of T."""
    from solar_lsp.pipeline import analyze_jax
    orig = analyze_jax.lower

    def lowered(*a, **kw):
        out = orig(*a, **kw)
        by_id = {op.id: op for op in out.program.ops}
        for loop in out.loops:
            if loop.kind == "scan" and loop.trips > 1:
                for item in _body_ids(loop):
                    op = by_id[item]
                    op.repeat = op.repeat // loop.trips * (loop.trips - 1)
                    p.changed = True
        return out
    p.setattr(analyze_jax, "lower", lowered)


def exp_before_max(p: Patches) -> None:
    """Plant: a JAX softmax's ``exp(x - max)`` lowered as ``exp(x) * exp(-max)``: the
    exponential taken before the max is subtracted (softmax without its max subtraction; the
    same values in exact arithmetic), its ``exp(x)`` held in an op-internal float32 buffer."""
    from solar_lsp.ir.core import TensorType
    from solar_lsp.pipeline import analyze_jax
    orig = analyze_jax.lower

    def lowered(*a, **kw):
        out = orig(*a, **kw)
        prog = out.program
        writer = {t: op for op in prog.ops for t in op.outputs}
        for op in prog.ops:
            sub = writer.get(op.inputs[0]) if op.target == "exp" and len(op.kernels) == 1 else None
            if sub is None or sub.target != "sub" or len(sub.kernels) != 1:
                continue
            k = sub.kernels[0]
            x, m = k.expr.args
            buf = op.outputs[0] + "_unshifted"
            prog.tensors[buf] = TensorType(prog.tensors[op.outputs[0]].shape, "float32")
            first = dataclasses.replace(k, name=buf, out=Load(buf, k.out.index), expr=Call("exp", (x,)))
            then = dataclasses.replace(k, name=op.kernels[0].name, out=Load(op.outputs[0], k.out.index),
                                       expr=Call("mul", (Load(buf, k.out.index), Call("exp", (Call("neg", (m,)),)))))
            op.inputs, op.kernels = list(sub.inputs), [first, then]
            p.changed = True
        return out
    p.setattr(analyze_jax, "lower", lowered)


def _body_ids(loop: Any) -> list[str]:
    out = []
    for item in loop.body:
        out.extend(_body_ids(item) if hasattr(item, "body") else [item])
    return out


# ------------------------------------------------------------------ particular rewrites


def peel_first(c: Any, ks: list[Kernel]) -> list[Kernel]:
    """A sum written as ``out = x[first]`` then ``out += x[rest]``: the same values, one
    combine fewer per output."""
    out = []
    for k in ks:
        red = k.reduce_vars
        if k.op != "+=" or len(red) != 1:
            out.append(k)
            continue
        r = red[0]
        first = dataclasses.replace(k, loops=tuple((v, n) for v, n in k.loops if v != r), op="=",
                                    expr=_at(k.expr, r, 0, keep=False))
        rest = dataclasses.replace(k, name=k.name + "_rest", init="keep",
                                   loops=tuple((v, n - 1 if v == r else n) for v, n in k.loops),
                                   expr=_at(k.expr, r, 1, keep=True))
        out += [first, rest]
    return out


def _at(e: Expr, v: str, value: int, keep: bool) -> Expr:
    """``e`` with loop variable ``v`` read at ``value`` (``keep``: at ``v + value``)."""
    return rewrite(e, lambda x: Load(x.tensor, tuple(_subst(a, v, value, keep) for a in x.index))
                   if isinstance(x, Load) else None)


def _subst(a: Affine, v: str, value: int, keep: bool = False) -> Affine:
    """``a`` with ``v`` replaced by ``value`` (``keep``: by ``v + value``)."""
    c = dict(a.terms).get(v, 0)
    if not c:
        return a
    rest = Affine(tuple((x, y) for x, y in a.terms if x != v), a.const)
    return rest + (Affine.var(v, c) + c * value if keep else Affine.of(c * value))


def no_max_subtraction(c: Any, ks: list[Kernel]) -> list[Kernel]:
    """Softmax as ``exp(x) / sum(exp(x))``: the max kernel gone, nothing subtracted."""
    mx = [k for k in ks if k.op == "max="]
    if not mx:
        return ks
    m = mx[0].out.tensor

    def fix(e: Expr) -> Expr | None:
        if isinstance(e, Call) and e.fn == "sub" and isinstance(e.args[1], Load) and e.args[1].tensor == m:
            return e.args[0]
        return None
    return [dataclasses.replace(k, expr=rewrite(k.expr, fix)) for k in ks if k.op != "max="]


def transpose_weight(c: Any, ks: list[Kernel]) -> list[Kernel]:
    """``x @ W`` where ``x @ W^T`` was meant (a square weight: same shapes)."""
    w = arg_tensor(1)(c)
    return on_expr(lambda e: Load(e.tensor, tuple(reversed(e.index)))
                   if isinstance(e, Load) and e.tensor == w else None)(c, ks)


def diagonal_off_by_one(c: Any, ks: list[Kernel]) -> list[Kernel]:
    """The triangle's diagonal one place off (the compared index plus one)."""
    def fix(e: Expr) -> Expr | None:
        if isinstance(e, Call) and e.fn in ("le", "lt", "ge", "gt") and isinstance(e.args[0], Index):
            return Call(e.fn, (Index(e.args[0].expr + 1),) + e.args[1:])
        return None
    return on_expr(fix)(c, ks)


def mask_off_by_one(c: Any, ks: list[Kernel]) -> list[Kernel]:
    """Causal attention that lets each query see one key past itself (the mask guard's
    bound, or the compared index where the mask is a ``where``)."""
    if not any(g.lo is None and g.hi is not None for k in ks for g in k.guards):
        return diagonal_off_by_one(c, ks)
    out = []
    for k in ks:
        gs = tuple(Guard(g.expr, g.lo, g.hi + 1) if g.lo is None and g.hi is not None else g
                   for g in k.guards)
        out.append(dataclasses.replace(k, guards=gs))
    return out


def pad_guard_short(c: Any, ks: list[Kernel]) -> list[Kernel]:
    """A padding guard that drops the input's last row (``< H - 1`` for ``< H``)."""
    out = []
    for k in ks:
        gs = list(k.guards)
        if gs and gs[0].hi is not None:
            gs[0] = Guard(gs[0].expr, gs[0].lo, gs[0].hi - 1)
        out.append(dataclasses.replace(k, guards=tuple(gs)))
    return out


def unbiased_variance(c: Any, ks: list[Kernel]) -> list[Kernel]:
    """Layer norm's variance divided by n - 1 instead of n."""
    n = c.shape(arg_tensor(0)(c))[-1]

    def fix(e: Expr) -> Expr | None:
        if isinstance(e, Const) and math.isclose(e.value, 1.0 / n, rel_tol=1e-12):
            return Const(1.0 / (n - 1))
        return None
    return on_expr(fix, lambda k: any(isinstance(x, Call) and x.fn == "rsqrt" for x in _nodes(k.expr)))(c, ks)


def _nodes(e: Expr) -> list[Expr]:
    out = [e]
    if isinstance(e, Call):
        for a in e.args:
            out += _nodes(a)
    return out


def other_dim(pos: int, jax_axes: bool = False):
    """Argument rewrite: reduce over the other axis of a square 2-D input."""
    def go(c, *rest):
        if jax_axes:
            c.p = {**c.p, "axes": tuple(1 - d for d in c.p["axes"])}
            return ()
        a, kw = rest
        a = list(a)
        d = a[pos]
        a[pos] = [1 - x % 2 for x in d] if isinstance(d, (list, tuple)) else 1 - d % 2
        return (tuple(a), kw)
    return go


def kw_set(**vals):
    """Argument rewrite: call the lowering with these keyword arguments."""
    def go(c, a, kw):
        return (a, {**kw, **{k: (v(c) if callable(v) else v) for k, v in vals.items()}})
    return go


def gelu_tanh(c, a, kw):
    """Exact GELU lowered as its tanh approximation."""
    return (tuple(a[:1]), {**kw, "approximate": "tanh"})


def v_head_scale(c) -> float:
    return 1.0 / math.sqrt(c.shape(arg_tensor(2)(c))[-1])


def combine_uncounted(k: Kernel, got: einsum_graph.Counts, count) -> einsum_graph.Counts:
    """A reduction counted as if it were a plain assignment: its combine drops out."""
    if k.op == "=" or k.unit == "matrix":
        return got
    return dataclasses.replace(got, vector_flops=count(dataclasses.replace(k, op="=")).vector_flops)


def flops_as_macs(k: Kernel, got: einsum_graph.Counts, count) -> einsum_graph.Counts:
    return dataclasses.replace(got, tensor_flops=got.macs) if k.unit == "matrix" else got


# ------------------------------------------------------------------ the suite

BN = ["aten._native_batch_norm_legit_no_training.default", "aten.batch_norm.default"]
SOFTMAX = ["aten._softmax.default", "aten.softmax.int"]
CONV = ["aten.conv2d.default", "aten.convolution.default"]
SDPA = ["aten.scaled_dot_product_attention.default"]


def _suite() -> list[Mutant]:
    M = Mutant
    return [
        # index: an off-by-one in an index
        M("conv-input-shift", "index", "conv", "conv reads the input one row down (guard moved with it)",
          in_lowering(CONV, post=shift_read(arg_tensor(0), 2, 1, matrix)), fast=True),
        M("cumsum-reads-prev", "index", "cumsum", "cumsum adds x[v] where x[v+1] is meant",
          in_lowering(["aten.cumsum.default"], post=shift_read(arg_tensor(0), 1, -1, last("scan2")))),
        M("tril-diagonal", "index", "tril", "tril keeps one diagonal fewer",
          in_lowering(["aten.tril.default"], post=diagonal_off_by_one)),
        M("causal-mask", "index", "sdpa_causal", "causal attention sees one key past the query",
          in_lowering(SDPA, post=mask_off_by_one)),
        M("jax-conv-input-shift", "index", "jax_conv", "JAX conv reads the input one row down",
          in_lowering(["conv_general_dilated"], post=shift_read(lambda c: c.t(0), 2, 1, matrix), jax=True)),
        # bound: loop range -1 on an output dim
        M("linear-out-cols", "bound", "linear_sq", "linear never writes its last output column",
          in_lowering(["aten.linear.default"], post=shrink("n", when=matrix)), fast=True),
        M("sum-out-rows", "bound", "sum_sq", "sum never writes its last output",
          in_lowering(["aten.sum.dim_IntList"], post=shrink("i0"))),
        M("softmax-out-rows", "bound", "softmax_sq", "softmax never normalises its last row",
          in_lowering(SOFTMAX, post=shrink("i0", when=last("_div")))),
        M("layernorm-out-rows", "bound", "layernorm", "layer norm never writes its last row",
          in_lowering(["aten.layer_norm.default"], post=shrink("i0", when=last("out")))),
        M("conv-out-channels", "bound", "conv", "conv never accumulates its last output channel",
          in_lowering(CONV, post=shrink("o", when=matrix))),
        M("jax-dot-out-rows", "bound", "jax_dot", "JAX dot never writes its last row",
          in_lowering(["dot_general"], post=shrink("m0"), jax=True)),
        # axis: the wrong axis
        M("sum-wrong-axis", "axis", "sum_sq", "sum(dim=1) reduces dim 0 (square input)",
          in_lowering(["aten.sum.dim_IntList"], args=other_dim(1)), fast=True),
        M("mean-wrong-axis", "axis", "mean_sq", "mean(dim=1) reduces dim 0 (square input)",
          in_lowering(["aten.mean.dim"], args=other_dim(1))),
        M("softmax-wrong-axis", "axis", "softmax_sq", "softmax over dim 0 instead of -1",
          in_lowering(SOFTMAX, args=other_dim(1))),
        M("linear-weight-transposed", "axis", "linear_sq", "square linear multiplies by W, not W^T",
          in_lowering(["aten.linear.default"], post=transpose_weight)),
        M("jax-sum-wrong-axis", "axis", "jax_sum_sq", "JAX reduce_sum over the other axis",
          in_lowering(["reduce_sum"], args=other_dim(0, jax_axes=True), jax=True)),
        # scale
        M("sdpa-v-head-scale", "scale", "sdpa_vdim", "attention scaled by 1/sqrt(v's head dim), 16 != 32",
          in_lowering(SDPA, args=kw_set(scale=v_head_scale)), fast=True),
        M("mean-no-1/n", "scale", "mean_sq", "mean without its 1/n",
          in_lowering(["aten.mean.dim"], post=drop_const_term("div"))),
        M("layernorm-unbiased", "scale", "layernorm", "layer norm's variance over n-1",
          in_lowering(["aten.layer_norm.default"], post=unbiased_variance)),
        M("jax-mean-no-1/n", "scale", "jax_mean", "JAX mean without its division",
          in_lowering(["div"], post=drop_const_term("div"), jax=True)),
        # tolerance: wrong by less than a loose tolerance
        M("bf16-matmul-half-K", "tolerance", "matmul_bf16_1024", "bf16 matmul sums half of K = 1024",
          in_lowering(["aten.matmul.default"], post=shrink("k", half=True)), fast=True),
        M("bf16-matmul-drop-last-k", "tolerance", "matmul_bf16_1024", "bf16 matmul drops the last of K = 1024",
          in_lowering(["aten.matmul.default"], post=shrink("k"))),
        M("gelu-tanh-bf16", "tolerance", "gelu_bf16", "exact GELU lowered as the tanh approximation (bf16)",
          in_lowering(["aten.gelu.default"], args=gelu_tanh)),
        M("gelu-tanh-f32", "tolerance", "gelu_f32", "exact GELU lowered as the tanh approximation (fp32)",
          in_lowering(["aten.gelu.default"], args=gelu_tanh)),
        M("jax-bf16-dot-half-K", "tolerance", "jax_dot_bf16_1024", "JAX bf16 dot sums half of K = 1024",
          in_lowering(["dot_general"], post=shrink("k0", half=True), jax=True)),
        # count-only: the values are right, the counts are not
        M("combine-uncounted", "count", "sum_sq", "a reduction's combine not counted (the counter)",
          in_counter(combine_uncounted), fast=True),
        M("combine-peeled", "count", "sum_sq", "sum peels its first element into a copy (one combine fewer)",
          in_lowering(["aten.sum.dim_IntList"], post=peel_first)),
        M("tensor-flops-are-macs", "count", "linear_sq", "tensor FLOPs counted as MACs",
          in_counter(flops_as_macs)),
        M("exp-free", "count", "softmax_sq", "exp counted free", free_function("exp")),
        M("sigmoid-free", "count", "sigmoid", "sigmoid counted free", free_function("sigmoid")),
        M("erf-free", "count", "gelu_f32", "erf counted free", free_function("erf")),
        M("jax-scan-T-1", "count", "jax_rnn_scan", "JAX scan body counted T-1 times", scan_one_trip_short),
        # identity parameters: a default of ones or zeros hides a dropped operand
        M("bn-no-running-mean", "identity", "batchnorm", "batch norm ignores running_mean",
          in_lowering(BN, post=load_to_const(arg_tensor(3), 0.0)), fast=True),
        M("bn-no-running-var", "identity", "batchnorm", "batch norm ignores running_var",
          in_lowering(BN, post=load_to_const(arg_tensor(4), 1.0))),
        M("bn-no-eps", "identity", "batchnorm", "batch norm without epsilon",
          in_lowering(BN, post=drop_const_term("add", lambda c: float(c.node.args[-1])))),
        M("layernorm-no-weight", "identity", "layernorm", "layer norm drops its weight",
          in_lowering(["aten.layer_norm.default"], post=load_to_const(arg_tensor(2), 1.0))),
        M("layernorm-no-eps", "identity", "layernorm", "layer norm without epsilon",
          in_lowering(["aten.layer_norm.default"], post=drop_const_term("add", layer_norm_eps))),
        M("rmsnorm-no-weight", "identity", "rmsnorm", "RMS norm drops its weight",
          in_lowering(["aten.rms_norm.default"], post=load_to_const(arg_tensor(2), 1.0))),
        M("groupnorm-no-bias", "identity", "groupnorm", "group norm drops its bias",
          in_lowering(["aten.group_norm.default"], post=load_to_const(arg_tensor(3), 0.0))),
        # coverage: wrong only where sampling rarely looks
        M("relu-dim0-short", "coverage", "relu", "relu never writes its last row",
          in_lowering(["aten.relu.default"], post=shrink("i0")), fast=True),
        M("conv-pad-guard-1024", "coverage", "conv_1024", "conv padding guard drops the last input row (1024²)",
          in_lowering(CONV, post=pad_guard_short)),
        M("sum-drops-last-4096", "coverage", "sum_4096", "sum over 4096 drops its last element",
          in_lowering(["aten.sum.dim_IntList"], post=shrink("i1"))),
        M("softmax-no-max", "coverage", "softmax_sq", "softmax without the max subtraction",
          in_lowering(SOFTMAX, post=no_max_subtraction)),
        M("sdpa-no-max", "coverage", "sdpa_vdim", "attention without the max subtraction",
          in_lowering(SDPA, post=no_max_subtraction)),
        M("jax-softmax-no-max", "coverage", "jax_softmax", "JAX softmax's exp taken before the max is subtracted",
          exp_before_max),
    ]


MUTANTS: list[Mutant] = _suite()
MODELS_USED = sorted({m.model for m in MUTANTS})
