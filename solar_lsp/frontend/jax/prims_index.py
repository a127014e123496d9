"""Indexing and sorting JAX primitives: dynamic slices and updates, ``gather``/``scatter``,
``sort`` and ``top_k``. Data-dependent ones are composition steps whose semantics and counts
live in ``ir/calls_index.py`` (the same calls the torch lowering uses)."""

from __future__ import annotations

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.jax.context import JCtx, Shape, lowers
from solar_lsp.frontend.jax.prims_views import slice_chain
from solar_lsp.ir.core import Affine, Const, Expr, Index, Kernel, Load, call


def _dynamic_index(c: JCtx, x_shape: Shape, starts: list, sizes: list[int],
                   only_dynamic: bool) -> tuple[dict[int, str], list[int]]:
    """Index tensors for the dims sliced at a traced start (clamped as XLA clamps), shaped
    as an open mesh over those dims (they must be adjacent). Returns dim -> index tensor,
    and the static starts (clamped) of the other dims."""
    dyn = [d for d in range(len(x_shape)) if sizes[d] < x_shape[d]
           and (not only_dynamic or not isinstance(starts[d], (int, float)))]
    if dyn and dyn != list(range(dyn[0], dyn[-1] + 1)):
        raise Unsupported("dynamic slicing of non-adjacent dims")
    static = [0 if isinstance(s, str) else max(0, min(int(s), n - k))
              for s, n, k in zip(starts, x_shape, sizes)]
    tensors: dict[int, str] = {}
    kernels, inputs = [], []
    for i, d in enumerate(dyn):
        shape = tuple(sizes[d] if j == i else 1 for j in range(len(dyn)))
        name = c.lw.new_tensor(f"{c.prim}_i", shape, "int32")
        vs = B.ivars(len(shape))
        hi = float(x_shape[d] - sizes[d])
        if isinstance(starts[d], str):
            c.use(starts[d])
            start: Expr = call("max", call("min", Load(starts[d], ()), hi), 0.0)
            inputs.append(starts[d])
        else:
            start = Const(float(static[d]))
        kernels.append(Kernel(c.name("idx"), tuple(zip(vs, shape)), Load(name, B.plain(vs)), "=",
                              call("add", start, Index(Affine.var(vs[i])))))
        tensors[d] = name
    if kernels:
        c.pre_compute(kernels, list(dict.fromkeys(inputs)), list(tensors.values()))
    return tensors, static


def _starts(c: JCtx, first: int) -> list:
    return [int(c.lit(i)) if c.is_lit(i) else c.ins[i] for i in range(first, len(c.ins))]


@lowers("dynamic_slice")
def _dynamic_slice(c: JCtx) -> None:
    x = c.t(0)
    xs = c.shape(x)
    sizes = [int(s) for s in c.p["slice_sizes"]]
    starts = _starts(c, 1)
    dyn_dims = [d for d in range(len(xs)) if isinstance(starts[d], str) and sizes[d] < xs[d]]
    static = [max(0, min(s, n - k)) if isinstance(s, int) else 0 for s, n, k in zip(starts, xs, sizes)]
    if not dyn_dims:  # every start is known: a view
        slice_chain(c, x, static, [s + k for s, k in zip(static, sizes)], [1] * len(xs))
        return
    # static partial dims first as views, then the dynamic block as an index
    cur = x
    shape = list(xs)
    for d in range(len(xs)):
        if d not in dyn_dims and sizes[d] < xs[d]:
            shape[d] = sizes[d]
            cur = c.pre_view(cur, tuple(shape), ("slice", d, static[d], static[d] + sizes[d], 1))
    idx, _ = _dynamic_index(c, tuple(shape), starts, sizes, only_dynamic=True)
    ins, slots = _with_index_slots([cur], idx, len(xs))
    c.inputs = []
    c.gather(("index", 0, slots), ins)


@lowers("dynamic_update_slice")
def _dynamic_update_slice(c: JCtx) -> None:
    x, u = c.t(0), c.t(1)
    xs, us = c.shape(x), c.shape(u)
    starts = _starts(c, 2)
    if all(isinstance(s, int) or us[d] == xs[d] for d, s in enumerate(starts)):
        st = [max(0, min(s, n - k)) if isinstance(s, int) else 0 for s, n, k in zip(starts, xs, us)]
        c.ew(lambda v: v, 0)
        vs = B.ivars(len(xs))
        oi = tuple(Affine.var(v) + s for v, s in zip(vs, st))
        c.emit(Kernel(c.name("upd"), tuple(zip(vs, us)), Load(c.out(), oi), "=", Load(u, B.plain(vs))))
        return
    idx, _ = _dynamic_index(c, xs, starts, list(us), only_dynamic=False)
    ins, slots = _with_index_slots([x, u], idx, len(xs))
    c.inputs = []
    c.gather(("index_put", 0, slots, 1, False), ins)


def _with_index_slots(ins: list, idx: dict, rank: int) -> tuple[list, tuple]:
    """``ins`` followed by the index tensor of each indexed dim, and per dim the position of
    its index among them (None: the dim is not indexed), as the gather call expects."""
    ins = list(ins)
    slots = []
    for d in range(rank):
        if d in idx:
            ins.append(idx[d])
            slots.append(len(ins) - 1)
        else:
            slots.append(None)
    return ins, tuple(slots)


def _squeezed_index(c: JCtx, i: int) -> str:
    idx = c.t(i)
    s = c.shape(idx)
    if not s or s[-1] != 1:
        raise Unsupported(f"gather/scatter indices of shape {s} (expected a trailing dim of 1)")
    return c.pre_view(idx, tuple(s[:-1]), ("reshape", tuple(s[:-1])))


@lowers("gather")
def _gather(c: JCtx) -> None:
    dn = c.p["dimension_numbers"]
    x = c.t(0)
    xs, is_ = c.shape(x), c.shape(c.t(1))
    os_ = c.out_shape()
    sizes = tuple(int(s) for s in c.p["slice_sizes"])
    smap, coll = tuple(dn.start_index_map), tuple(dn.collapsed_slice_dims)
    obd = tuple(getattr(dn, "operand_batching_dims", ()))
    ibd = tuple(getattr(dn, "start_indices_batching_dims", ()))
    offs = tuple(dn.offset_dims)
    if len(smap) != 1 or coll != smap or not is_ or is_[-1] != 1:
        raise Unsupported(f"gather form not recognised ({dn})")
    a = smap[0]
    nb = len(is_) - 1
    if not obd and sizes == xs[:a] + (1,) + xs[a + 1:] \
            and os_ == xs[:a] + is_[:-1] + xs[a + 1:] \
            and offs == tuple(range(a)) + tuple(range(a + nb, len(os_))):
        idx = _squeezed_index(c, 1)  # jnp.take / x[idx]: rows along axis a
        c.inputs = []
        slots = tuple(1 if d == a else None for d in range(len(xs)))
        c.gather(("index", 0, slots), [x, idx])
        return
    others = tuple(d for d in range(len(xs)) if d != a)
    if obd == others and ibd == others and not offs and sizes == (1,) * len(xs) \
            and len(is_) == len(xs) + 1 and os_ == is_[:-1]:
        idx = _squeezed_index(c, 1)  # take_along_axis
        c.inputs = []
        c.gather(("gather", a), [x, idx])
        return
    raise Unsupported(f"gather form not recognised ({dn}, slice_sizes={sizes})")


@lowers("scatter-add", "scatter_add", "scatter")
def _scatter(c: JCtx) -> None:
    dn = c.p["dimension_numbers"]
    x, u = c.t(0), c.t(2)
    xs, is_, us = c.shape(x), c.shape(c.t(1)), c.shape(u)
    sd, ins_ = tuple(dn.scatter_dims_to_operand_dims), tuple(dn.inserted_window_dims)
    if getattr(dn, "operand_batching_dims", ()) and len(sd) == 1:
        _scatter_along_axis(c, sd[0])
        return
    if len(sd) != 1 or ins_ != sd or not is_ or is_[-1] != 1:
        raise Unsupported(f"scatter form not recognised ({dn})")
    a = sd[0]
    if us != xs[:a] + is_[:-1] + xs[a + 1:]:
        raise Unsupported(f"scatter updates of shape {us} for operand {xs} and indices {is_}")
    idx = _squeezed_index(c, 1)
    c.inputs = []
    slots = tuple(2 if d == a else None for d in range(len(xs)))
    c.gather(("index_put", 0, slots, 1, c.prim != "scatter"), [x, u, idx])


def _scatter_along_axis(c: JCtx, a: int) -> None:
    """The form of the transpose of a ``take_along_axis`` gather (the backward of ``top_k``
    or of ``jnp.take_along_axis``): ``out[..., idx[..., j, ...], ...] += u[..., j, ...]`` along
    axis ``a``, every other dim a batch dim of operand, indices and updates alike; torch's
    ``scatter_add`` (``scatter`` for the plain primitive) along ``a``."""
    dn = c.p["dimension_numbers"]
    x, u = c.t(0), c.t(2)
    xs, is_, us = c.shape(x), c.shape(c.t(1)), c.shape(u)
    others = tuple(d for d in range(len(xs)) if d != a)
    if tuple(dn.operand_batching_dims) != others or tuple(dn.scatter_indices_batching_dims) != others \
            or tuple(dn.inserted_window_dims) != (a,) or tuple(dn.update_window_dims) \
            or len(is_) != len(xs) + 1 or is_[-1] != 1 or us != is_[:-1]:
        raise Unsupported(f"scatter form not recognised ({dn})")
    idx = _squeezed_index(c, 1)
    c.inputs = []
    c.gather(("scatter", 0, 2, 1, a, None if c.prim == "scatter" else "sum", True, None), [x, u, idx])


@lowers("sort")
def _sort(c: JCtx) -> None:
    dim = int(c.p["dimension"])
    n = len(c.ins)
    x = c.t(0)
    if n == 1:
        c.gather(("sort", dim, False, True), [x])
        return
    if n == 2 and int(c.p["num_keys"]) == 1 and c.lw.iota_dim.get(c.ins[1]) == dim:
        c.gather(("sort", dim, False, True), [x, c.t(1)], n_out=2)  # argsort: values, order
        return
    raise Unsupported("sort of several operands other than (keys, iota)")


@lowers("top_k")
def _top_k(c: JCtx) -> None:
    x = c.t(0)
    axis = int(c.p.get("axis", len(c.shape(x)) - 1))
    c.gather(("topk", int(c.p["k"]), axis % len(c.shape(x)), True, True), [x], n_out=2)
