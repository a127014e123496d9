"""Lower a decomposed torch.export graph into an Affine Loop IR program.

One table (``LOWERINGS``, in context.py) maps each ATen op to a lowering; the family modules
imported here fill it (elementwise, creation, reductions, contractions, attention, norms,
copies, views, indexing, spatial, recurrent). This module is the driver that walks the
exported graph. An op without a lowering is never dropped: it is listed in ``unsupported``
with its line and reason.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from solar_lsp.frontend.errors import Lowered, Unsupported, UnsupportedOp
from solar_lsp.frontend.loops import reroll
from solar_lsp.frontend.torch import (  # noqa: F401 - importing a family registers its lowerings
    attention,
    contractions,
    copies,
    creation,
    elementwise,
    lower_index,
    lower_recurrent,
    lower_spatial,
    norms,
    reductions,
    views,
)
from solar_lsp.frontend.torch.context import LOWERINGS, Ctx, LowerState, dtype_name
from solar_lsp.frontend.torch.elementwise import BITWISE
from solar_lsp.frontend.torch.trace import Traced
from solar_lsp.ir.core import Op
from solar_lsp.ir.validate import IRValidationError, validate_kernel

# what callers import from here (the op tables and helpers live in the family modules)
__all__ = ["BITWISE", "DRIVER_OPS", "LOWERINGS", "NOT_LOWERED", "complex_dtype", "dtype_name", "lower"]

# Core ATen ops (torch.Tag.core) handled by the driver itself rather than by LOWERINGS:
# split pieces become slice views at their getitem; symbolic sizes carry no work.
DRIVER_OPS: frozenset[str] = frozenset({
    "split_with_sizes", "split", "unbind", "chunk",
    "sym_size", "sym_numel", "sym_stride", "sym_storage_offset",
})

# Core ATen ops left without a lowering on purpose, with the reason; an entry that uses one
# lists it in ``unsupported``. docs/coverage.md carries the same list; the test
# tests/test_ops_extra.py fails when a core op is neither lowered nor listed here.
NOT_LOWERED: dict[str, str] = {
    "randperm": "a random permutation: no deterministic result to verify against torch",
    "native_dropout": "training-mode dropout draws a random mask (eval dropout is lowered as an alias)",
    "_fft_r2c": "FFTs produce complex tensors; the IR has no complex dtype",
    "_fft_c2r": "FFTs read complex tensors; the IR has no complex dtype",
    "_local_scalar_dense": "Tensor.item(): the value leaves the graph for the host",
    "grid_sampler_2d": "sampling positions are data (a gather with data-dependent bilinear weights)",
    "_cdist_forward": "p-norm pairwise distances: not lowered yet (p=2 needs the matmul identity)",
    "_pdist_forward": "p-norm pairwise distances of the condensed upper triangle: not lowered yet",
    "resize_": "in-place storage resize: functionalized graphs from torch.export do not carry it",
}


def lower(traced: Traced) -> Lowered:
    """Lower every node of a traced entry into one IR program, listing what it could not."""
    lw = LowerState(traced)
    prog = lw.program
    ep = traced.exported
    graph = ep.graph
    for node in graph.nodes:
        if node.op == "placeholder":
            lw.define_outputs(node)
            kind = traced.kinds.get(node.name, "input")
            if lw.env[node.name] is not None:  # a complex input has no IR tensor
                (prog.inputs if kind == "input" else prog.params).append(lw.env[node.name])
                if kind == "param" and traced.mode != "train":
                    prog.weights.append(lw.env[node.name])
        elif node.op == "get_attr":
            lw.define_outputs(node)
            if lw.env[node.name] is not None:
                prog.params.append(lw.env[node.name])
        elif node.op == "output":
            for o in node.args[0]:
                if hasattr(o, "name") and isinstance(lw.env.get(o.name), str):
                    prog.outputs.append(lw.env[o.name])
        elif node.op == "call_function":
            _lower_node(lw, node)
    # a Python loop's T unrolled steps become one body run T times (frontend/loops.py)
    return reroll(Lowered(prog, lw.unsupported, lw.node_of_tensor))


def _lower_node(lw: LowerState, node: Any) -> None:
    line = lw.traced.lines.get(node.name)
    if node.target is operator.getitem:
        _getitem(lw, node, line)
        return
    name = str(node.target)
    if _handled_without_lowering(lw, node, name, line):
        return
    c = _run_lowering(lw, node, name, line)
    if c is not None:
        _record_op(lw, node, name, line, c)


def _getitem(lw: LowerState, node: Any, line: int | None) -> None:
    """A piece of a split, or one output of a multi-output op."""
    src = lw.env.get(node.args[0].name)
    if isinstance(src, tuple) and src and src[0] == "__split__":
        views.split_view(lw, node, line)
    elif isinstance(src, (list, tuple)) and node.args[1] < len(src):
        lw.env[node.name] = src[node.args[1]]
    else:
        lw.env[node.name] = None


def _handled_without_lowering(lw: LowerState, node: Any, name: str, line: int | None) -> bool:
    """Symbolic sizes, complex tensors, data-dependent shapes and splits: dealt with (or
    reported) here, never passed to a lowering."""
    if name.startswith("aten.sym_") or name.startswith("aten._assert"):
        lw.env[node.name] = None
        return True
    cdt = complex_dtype(node)
    if cdt is not None:  # its real outputs (view_as_real, abs) stay typed for their consumers
        lw.define_outputs(node)
        lw.unsupported.append(UnsupportedOp(name, line, f"complex dtype {cdt} has no lowering"))
        return True
    reason = lower_index.data_dependent(node)  # nonzero, boolean masks: no static shape
    if reason is not None:
        lw.env[node.name] = None
        if reason:
            lw.unsupported.append(UnsupportedOp(name, line, reason))
        return True
    if name in ("aten.split_with_sizes.default", "aten.split.Tensor", "aten.unbind.int",
                "aten.chunk.default"):
        lw.env[node.name] = ("__split__", node)
        return True
    return False


def _run_lowering(lw: LowerState, node: Any, name: str, line: int | None) -> Ctx | None:
    """Run the op's lowering and validate its kernels; None (the op reported) when there is
    no lowering, it refuses the op, or it fails."""
    lw.define_outputs(node)
    fn = LOWERINGS.get(name)
    if fn is None:
        why = NOT_LOWERED.get(name.split(".")[1]) if name.startswith("aten.") else None
        lw.unsupported.append(UnsupportedOp(name, line, f"not lowered: {why}" if why else "no lowering for this op yet"))
        return None
    c = Ctx(lw, node)
    try:
        fn(c, tuple(node.args), dict(node.kwargs))
    except Unsupported as exc:
        lw.unsupported.append(UnsupportedOp(name, line, str(exc)))
        return None
    except Exception as exc:  # a lowering bug must not lose the rest of the entry
        lw.unsupported.append(UnsupportedOp(name, line, f"lowering failed: {type(exc).__name__}: {exc}"))
        return None
    for o in lw.out_names(node):
        if o is not None and o not in c.outputs and c.kind in ("view", "gather", "alloc"):
            c.outputs.append(o)
    try:
        for k in c.kernels:
            validate_kernel(k, lw.program.tensors)
    except IRValidationError as exc:  # a lowering bug: report it, keep the rest of the entry
        lw.unsupported.append(UnsupportedOp(name, line, f"lowering produced invalid IR: {exc}"))
        return None
    return c


def _record_op(lw: LowerState, node: Any, name: str, line: int | None, c: Ctx) -> None:
    """Append the lowered op to the program (a view also records its base and extent)."""
    op = Op(id=node.name, target=name, line=line, inputs=c.inputs, outputs=c.outputs,
            kernels=c.kernels, kind=c.kind, call=c.call,
            phase=lw.traced.phases.get(node.name, "forward"))
    if c.kind == "view":
        lw.program.views[c.outputs[0]] = c.inputs[0]
        base = c.inputs[0]
        uniq = lw.program.unique_numel(base)
        if c.call and c.call[0] in ("slice", "select", "diagonal"):
            uniq = min(uniq, lw.program.tensors[c.outputs[0]].numel)
        lw.program.unique[c.outputs[0]] = uniq
    lw.program.ops.append(op)


def complex_dtype(node: Any) -> str | None:
    """The complex dtype an fx node produces or reads, if any (e.g. ``"complex64"``)."""
    def vals(x: Any):
        if isinstance(x, (list, tuple)):
            for y in x:
                yield from vals(y)
        elif isinstance(x, torch.Tensor):
            yield x
        elif hasattr(x, "meta"):
            yield from vals(x.meta.get("val"))
    for v in vals([node, list(node.args), list(node.kwargs.values())]):
        if v.is_complex():
            return dtype_name(v.dtype)
    return None

