"""What a JAX primitive lowering works with: the per-equation context and the registry.

:class:`JCtx` is the view one lowering rule has of its equation (operand handles, output
tensors, helpers that emit kernels and views); :data:`LOWERINGS` maps a jaxpr primitive's
name to its rule, filled by the ``prims_*`` family modules through :func:`lowers`. Both sit
below the lowerer (``lower.py``) and the rules, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.jax.trace import Key, Lit
from solar_lsp.ir.core import Const, Kernel, Load, Op, Program
from solar_lsp.source.pragma import canonical_dtype

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Opaque:
    """A value whose dtype the IR has no type for (complex, PRNG keys and other extended
    dtypes): never a tensor; an equation reading or writing one is listed as unsupported."""

    dtype: str


def known_dtype(dtype: str) -> bool:
    """Whether the IR has a type for this dtype (else the value is :class:`Opaque`)."""
    return canonical_dtype(dtype) is not None


class Lowerer(Protocol):
    """What a lowering rule may ask of the lowerer: the program being built and fresh names."""

    program: Program
    iota_dim: dict[str, int]

    def new_tensor(self, base: str, shape: Shape, dtype: str) -> str: ...

    def op_id_base(self, prim: str) -> str: ...

    def new_op_id(self, prim: str) -> str: ...


class JCtx:
    """What a primitive lowering sees: its equation, operand handles and output tensors."""

    def __init__(self, lw: Lowerer, eqn: Any, ins: list[Any], outs: list[str], key: Key,
                 line: int | None, repeat: int):
        self.lw, self.eqn, self.ins, self.outs = lw, eqn, ins, outs
        self.p = eqn.params
        self.key, self.line, self.repeat = key, line, repeat
        self.kernels: list[Kernel] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.kind = "compute"
        self.call: tuple | None = None
        self.pre_ops: list[Op] = []  # helper ops (views, index arithmetic) run before this one
        self._k = 0

    @property
    def prim(self) -> str:
        return self.eqn.primitive.name

    # -- operands
    def is_lit(self, i: int) -> bool:
        return isinstance(self.ins[i], Lit)

    def lit(self, i: int) -> Any:
        h = self.ins[i]
        if not isinstance(h, Lit):
            raise Unsupported(f"operand {i} must be a constant here")
        return h.value

    def t(self, i: int) -> str:
        h = self.ins[i]
        if isinstance(h, Lit):
            raise Unsupported(f"operand {i} is a literal where a tensor is needed")
        return self.use(h)

    def use(self, name: str) -> str:
        if name not in self.inputs:
            self.inputs.append(name)
        return name

    def operand(self, i: int) -> B.Operand:
        h = self.ins[i]
        if isinstance(h, Lit):
            return float(h.value)
        return (self.t(i), self.shape(h))

    def in_shape(self, i: int) -> Shape:
        h = self.ins[i]
        return () if isinstance(h, Lit) else self.shape(h)

    def in_dtype(self, i: int) -> str:
        h = self.ins[i]
        return h.dtype if isinstance(h, Lit) else self.dtype(h)

    def shape(self, name: str) -> Shape:
        return self.lw.program.tensors[name].shape

    def dtype(self, name: str) -> str:
        return self.lw.program.tensors[name].dtype

    # -- outputs
    def out(self, j: int = 0) -> str:
        name = self.outs[j]
        if name not in self.outputs:
            self.outputs.append(name)
        return name

    def out_shape(self, j: int = 0) -> Shape:
        return self.shape(self.outs[j])

    def out_dtype(self, j: int = 0) -> str:
        return self.dtype(self.outs[j])

    def tmp(self, shape: Shape, dtype: str = "float32") -> str:
        return self.lw.new_tensor(f"{self.lw.op_id_base(self.prim)}_t", tuple(shape), dtype)

    def name(self, tag: str = "") -> str:
        self._k += 1
        return f"{self.prim}_{tag}{self._k}"

    # -- emission
    def emit(self, *ks: Kernel) -> None:
        self.kernels.extend(ks)

    def ew(self, fn: Callable[..., Any], *idx: int, out: int = 0) -> None:
        o = self.out(out)
        ops = [self.operand(i) for i in idx]
        self.emit(B.elementwise(self.name("ew"), o, self.shape(o), ops, fn))

    def fill(self, value: float | Load, out: int = 0) -> None:
        o = self.out(out)
        vs = B.ivars(len(self.shape(o)))
        self.emit(Kernel(self.name("fill"), tuple(zip(vs, self.shape(o))), Load(o, B.plain(vs)), "=",
                         value if isinstance(value, Load) else Const(float(value))))

    def view(self, *callspec: Any, src: str | None = None) -> None:
        self.kind = "view"
        self.call = tuple(callspec)
        if src is not None:
            self.use(src)
        self.out(0)

    def gather(self, callspec: tuple, inputs: Sequence[str], n_out: int = 1) -> None:
        self.kind, self.call = "gather", tuple(callspec)
        for t in inputs:
            self.use(t)
        for j in range(n_out):
            self.out(j)

    def pre_view(self, src: str, shape: Shape, callspec: tuple, dtype: str | None = None) -> str:
        """A view made for this op only (a squeezed index, a sliced operand): a derived
        tensor with no jaxpr variable; the verifier computes its value from ``src``."""
        out = self.lw.new_tensor(f"{self.lw.op_id_base(self.prim)}_v", shape, dtype or self.dtype(src))
        op = Op(id=self.lw.new_op_id(self.prim + "_view"), target=self.prim, line=self.line,
                inputs=[src], outputs=[out], kind="view", call=callspec, repeat=self.repeat)
        self.pre_ops.append(op)
        return out

    def pre_compute(self, kernels: list[Kernel], inputs: list[str], outputs: list[str]) -> None:
        """Index arithmetic this op needs before its composition step (derived tensors)."""
        op = Op(id=self.lw.new_op_id(self.prim + "_idx"), target=self.prim, line=self.line,
                inputs=inputs, outputs=outputs, kernels=kernels, repeat=self.repeat)
        self.pre_ops.append(op)


LOWERINGS: dict[str, Callable[[JCtx], None]] = {}


def lowers(*names: str):
    """Register the decorated function as the lowering rule of these primitives."""
    def deco(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco
