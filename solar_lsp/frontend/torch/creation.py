"""Lowerings of tensor creation: constant fills, ranges, identity and triangular masks, random
draws (an op that writes its output; verification takes its values from torch), and
allocations that write nothing."""

from __future__ import annotations

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.torch.context import Ctx, lowers
from solar_lsp.ir.core import Affine, Const, Index, Kernel, Load, call


@lowers("aten.full.default", "aten.zeros.default", "aten.ones.default", "aten.full_like.default",
        "aten.zeros_like.default", "aten.ones_like.default", "aten.scalar_tensor.default",
        "aten.new_zeros.default", "aten.new_ones.default", "aten.new_full.default")
def _full(c: Ctx, a: tuple, kw: dict) -> None:
    t = str(c.node.target)
    if "zeros" in t:
        v = 0.0
    elif "ones" in t:
        v = 1.0
    elif "scalar_tensor" in t:
        v = float(a[0])
    elif "new_full" in t:  # new_full(self, size, fill_value)
        v = float(a[2] if len(a) > 2 else kw.get("fill_value"))
    else:
        v = float(a[1] if len(a) > 1 else kw.get("fill_value"))
    c.ew(lambda: Const(v))


@lowers("aten.fill.Scalar", "aten.fill.Tensor")
def _fill(c: Ctx, a: tuple, kw: dict) -> None:
    """Every element becomes the value (a number, or the one element of a 0-d tensor)."""
    if hasattr(a[1], "name"):
        c.ew(lambda v: v, a[1])
    else:
        c.ew(lambda: Const(float(a[1])))


@lowers("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(c: Ctx, a: tuple, kw: dict) -> None:
    nums = [x for x in a if isinstance(x, (int, float))]
    start, step = (0, 1)
    if len(nums) >= 2:
        start = nums[0]
    if len(nums) >= 3:
        step = nums[2]
    c.emit(Kernel(c.name("arange"), (("i0", c.out_shape[0]),), Load(c.out, (Affine.var("i0"),)), "=",
                  call("add", float(start), call("mul", Index(Affine.var("i0")), float(step)))))


@lowers("aten.eye.default", "aten.eye.m")
def _eye(c: Ctx, a: tuple, kw: dict) -> None:
    """Kept whole: its decomposition builds a uint16 arange the CPU cannot run."""
    n, m = c.out_shape
    c.emit(Kernel(c.name("eye"), (("i0", n), ("i1", m)), Load(c.out, (Affine.var("i0"), Affine.var("i1"))), "=",
                  call("where", call("eq", Index(Affine.var("i0")), Index(Affine.var("i1"))), 1.0, 0.0)))


# Random draws inside the model (h0 = torch.randn(...) in a forward): the op writes its
# output (its bytes count) and does no arithmetic of its own: the generator's work (Philox
# rounds, Box-Muller's log/sqrt/cos for randn) is not counted, so the bound stays a lower
# bound. Its kernel writes a placeholder 0; verification checks its shape and dtype and feeds
# torch's drawn values to the ops after it (verify/op_check.py, docs/sol-model.md).
RANDOM_TARGETS = ("aten.rand.default", "aten.randn.default", "aten.rand_like.default",
                  "aten.randn_like.default")


@lowers(*RANDOM_TARGETS)
def _random(c: Ctx, a: tuple, kw: dict) -> None:
    c.emit(B.elementwise(c.name("random"), c.out, c.shape(c.out), [], lambda: Const(0.0)))


@lowers("aten.empty.memory_format", "aten.empty_like.default", "aten.empty_strided.default",
        "aten.empty.default")
def _empty(c: Ctx, a: tuple, kw: dict) -> None:
    c.out  # noqa: B018 - registers the output; empty allocates without writing
    c.kind = "alloc"


@lowers("aten.tril.default", "aten.triu.default")
def _tri(c: Ctx, a: tuple, kw: dict) -> None:
    diag = a[1] if len(a) > 1 else 0
    x = c.t(a[0])
    shp = c.shape(x)
    vs = B.ivars(len(shp))
    i, j = vs[-2], vs[-1]
    keep = call("le", Index(Affine.var(j)), Index(Affine.var(i) + diag)) if "tril" in str(c.node.target) \
        else call("ge", Index(Affine.var(j)), Index(Affine.var(i) + diag))
    c.emit(Kernel(c.name("tri"), tuple(zip(vs, shp)), Load(c.out, B.plain(vs)), "=",
                  call("where", keep, Load(x, B.plain(vs)), 0.0)))
