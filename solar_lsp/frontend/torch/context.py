"""What every torch lowering shares: the per-op context it emits kernels through, the
per-entry lowering state, and the op table lowerings register into.

Family modules (elementwise, reductions, contractions, ...) import this module and never
the driver (``lower.py``), which imports them so that they register.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported, UnsupportedOp
from solar_lsp.frontend.torch.trace import Traced
from solar_lsp.ir.core import Expr, Kernel, Program, TensorType

Shape = tuple[int, ...]


def dtype_name(dt: torch.dtype) -> str:
    """The IR's name for a torch dtype (``torch.float32`` -> ``"float32"``)."""
    return str(dt).replace("torch.", "")


class Ctx:
    """What a lowering sees: its node, tensor names, shapes, and ways to emit kernels."""

    def __init__(self, lw: LowerState, node: Any):
        self.lw = lw
        self.node = node
        self.kernels: list[Kernel] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self._k = 0
        self.kind = "compute"
        self.call: tuple | None = None

    # -- tensors
    def t(self, arg: Any) -> str:
        """Tensor name of an fx node argument."""
        if not hasattr(arg, "name"):
            raise Unsupported(f"expected a tensor argument, got {type(arg).__name__}")
        name = self.lw.env[arg.name]
        if isinstance(name, (tuple, list)):
            raise Unsupported("tuple-valued argument")
        if name is None:
            raise Unsupported(f"input {arg.name} was not lowered")
        if arg.name.startswith("__tmp_"):
            return name
        if name not in self.inputs:
            self.inputs.append(name)
        return name

    def shape(self, name: str) -> Shape:
        return self.lw.program.tensors[name].shape

    def dtype(self, name: str) -> str:
        return self.lw.program.tensors[name].dtype

    def operand(self, arg: Any) -> B.Operand:
        if hasattr(arg, "name"):
            n = self.t(arg)
            return (n, self.shape(n))
        if isinstance(arg, (int, float, bool)):
            return arg
        raise Unsupported(f"unsupported operand {arg!r}")

    @property
    def out(self) -> str:
        return self.out_n(0)

    def out_n(self, i: int) -> str:
        name = self.lw.out_names(self.node)[i]
        if name not in self.outputs:
            self.outputs.append(name)
        return name

    @property
    def out_shape(self) -> Shape:
        return self.shape(self.out)

    def tmp(self, shape: Shape, dtype: str = "float32") -> str:
        return self.lw.new_tensor(f"{self.node.name}_t", tuple(shape), dtype)

    def name(self, tag: str = "") -> str:
        self._k += 1
        return f"{self.node.name}_{tag}{self._k}"

    def emit(self, *ks: Kernel) -> None:
        self.kernels.extend(ks)

    def ew(self, fn: Callable[..., Expr], *args: Any, out: str | None = None) -> None:
        out = out or self.out
        ops = [self.operand(a) for a in args]
        self.emit(B.elementwise(self.name("ew"), out, self.shape(out), ops, fn))

    def view(self, *callspec: Any) -> None:
        self.kind = "view"
        self.call = tuple(callspec)


class LowerState:
    """What one entry's lowering accumulates: the program, fx node -> tensor names, the
    unsupported ops."""

    def __init__(self, traced: Traced):
        self.traced = traced
        self.program = Program(name=traced.entry.name)
        self.env: dict[str, Any] = {}
        self.unsupported: list[UnsupportedOp] = []
        self.counter = 0
        self.node_of_tensor: dict[str, str] = {}

    def new_tensor(self, base: str, shape: Shape, dtype: str) -> str:
        name = base
        while name in self.program.tensors:
            self.counter += 1
            name = f"{base}{self.counter}"
        self.program.tensors[name] = TensorType(tuple(int(s) for s in shape), dtype)
        return name

    def out_names(self, node: Any) -> list[str]:
        val = self.env.get(node.name)
        return list(val) if isinstance(val, (list, tuple)) else [val]

    def define_outputs(self, node: Any) -> None:
        """An IR tensor per tensor output; a complex one gets none (the IR has no complex
        dtype), so its consumers are reported instead of analyzed with a wrong type."""
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and not val.is_complex():
            self.env[node.name] = self.new_tensor(node.name, tuple(val.shape), dtype_name(val.dtype))
            self.node_of_tensor[self.env[node.name]] = node.name
        elif isinstance(val, (list, tuple)):
            names = []
            for i, v in enumerate(val):
                if isinstance(v, torch.Tensor) and not v.is_complex():
                    n = self.new_tensor(f"{node.name}_{i}", tuple(v.shape), dtype_name(v.dtype))
                    self.node_of_tensor[n] = node.name
                    names.append(n)
                else:
                    names.append(None)
            self.env[node.name] = names
        else:
            self.env[node.name] = None


# ------------------------------------------------------------------ the op table

LOWERINGS: dict[str, Callable[[Ctx, tuple, dict], None]] = {}


def lowers(*names: str):
    """Decorator registering a lowering for the named ATen overloads."""
    def deco(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco


class TmpRef:
    """Stands for an op-internal temporary where a builder expects an fx node."""

    def __init__(self, name: str):
        self.name = name


def node_for(c: Ctx, tensor: str) -> TmpRef:
    """An fx-node stand-in for a temporary, so ``c.ew`` can read it as an operand."""
    c.lw.env.setdefault(f"__tmp_{tensor}", tensor)
    return TmpRef(f"__tmp_{tensor}")
