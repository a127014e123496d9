"""Trace a discovered torch entry on meta tensors with torch.export (docs/architecture.md §2).

Nothing here allocates real tensors: the module is built and its inputs are made under
``torch.device("meta")``, and the export runs on those. Each node is mapped to the line of
the analyzed file it comes from (the innermost frame in that file).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import re
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import torch

from solar_lsp.frontend.errors import EntryError, user_line
from solar_lsp.frontend.torch.fake_recurrent import recurrent_shape_rules
from solar_lsp.source.discover import Entry, TensorSpec

# Ops whose IR is known in closed form stay whole (docs/architecture.md §2: decompose selectively).
KEEP_WHOLE = (
    "linear", "matmul", "einsum", "layer_norm", "group_norm", "rms_norm", "instance_norm",
    "scaled_dot_product_attention", "batch_norm", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "silu", "mish", "hardswish",
    "hardsigmoid", "softplus", "elu", "leaky_relu", "gelu", "hardtanh", "logsumexp", "eye",
    # triangular masks: one compare per element (their decomposition builds int64 index grids
    # eager never materializes); the attention lowering recognizes a tril mask (attention.py)
    "tril", "triu",
    # resampling and im2col: lowered in lower_spatial (their decompositions are index gathers)
    "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d",
    "_upsample_nearest_exact2d", "_upsample_nearest_exact3d", "upsample_linear1d",
    "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d", "pixel_shuffle",
    "pixel_unshuffle", "im2col", "col2im",
    # recurrent layers: lowered in lower_recurrent, one loop body per layer and direction
    "lstm", "gru", "rnn_tanh", "rnn_relu",
)


@dataclass
class Traced:
    """An entry exported by torch.export and decomposed (or, in train mode, the joint graph of
    a training step), with what lowering needs to know about its nodes: source lines,
    placeholder kinds and targets, the input specs, the phases."""

    entry: Entry
    path: str
    exported: Any  # torch.export.ExportedProgram, decomposed; train.JointGraph in train mode
    lines: dict[str, int | None] = field(default_factory=dict)  # node name -> line
    kinds: dict[str, str] = field(default_factory=dict)  # placeholder -> input|param|buffer|constant
    targets: dict[str, str] = field(default_factory=dict)  # placeholder -> FQN or input name
    input_specs: list[TensorSpec] = field(default_factory=list)
    # train mode (frontend/torch/train.py): "inference" | "train"; the phase of each node
    # ("forward" | "backward"), the loss node, and each trainable parameter's gradient node
    mode: str = "inference"
    phases: dict[str, str] = field(default_factory=dict)
    loss: str | None = None  # the loss node's name
    loss_kind: str = "mean"  # "mean" | "sum"
    grads: dict[str, str] = field(default_factory=dict)  # parameter FQN -> node name


_MODULE_COUNTER = [0]


def warm_up() -> None:
    """Import torch.export's tracing machinery (about 1 s, once per process) so that it is
    counted as import time, not as the first entry's trace time; workers call it at start."""
    import torch.export._trace  # noqa: F401


def load_module(path: str) -> types.ModuleType:
    """Import the user's file as a fresh module. User code runs here: callers isolate it."""
    path = os.path.realpath(path)
    _MODULE_COUNTER[0] += 1
    name = f"solar_user_{_MODULE_COUNTER[0]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EntryError("import", f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = os.path.dirname(path)
    if folder not in sys.path:  # as `python model.py` does: sibling modules import (also lazily)
        sys.path.insert(0, folder)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    except Exception as exc:  # user code: any failure becomes a message
        sys.modules.pop(name, None)
        raise EntryError("import", f"importing the file failed: {type(exc).__name__}: {exc}",
                         user_line(exc, path)) from exc
    _anchor_user_frames(module, path)
    return module


def _anchor_user_frames(module: types.ModuleType, path: str) -> None:
    """torch.export keeps only ``forward`` frames in stack traces unless a frame is
    registered as an anchor; register every function of the user's file so that an op
    maps to the innermost line in that file (helpers and plain-function entries included)."""
    try:
        from torch.fx import proxy
        anchors = proxy._STACK_TRACE_ANCHORS
    except (ImportError, AttributeError):
        return

    def visit(code: types.CodeType) -> None:
        if os.path.realpath(code.co_filename) != path:
            return
        anchors.add((code.co_filename, code.co_name))
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                visit(const)

    def visit_obj(obj: Any, depth: int = 0) -> None:
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType):
            visit(code)
        elif isinstance(obj, type) and depth < 3:
            for v in vars(obj).values():
                visit_obj(v, depth + 1)

    for v in list(vars(module).values()):
        visit_obj(v)


def _spec_tensor(spec: TensorSpec, device: str) -> Any:
    if spec.scalar is not None or spec.dtype in ("int", "float"):
        return spec.scalar
    dtype = getattr(torch, spec.dtype)
    if dtype.is_floating_point:
        return torch.randn(spec.shape, dtype=dtype, device=device) if device != "meta" else torch.empty(
            spec.shape, dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.rand(spec.shape, device=device) > 0.5 if device != "meta" else torch.empty(
            spec.shape, dtype=dtype, device=device)
    if device == "meta":
        return torch.empty(spec.shape, dtype=dtype, device=device)
    return torch.randint(0, 8, spec.shape, dtype=dtype, device=device)


def _function_module(fn: Any) -> torch.nn.Module:
    """Wrap a function so that it *is* the forward: export then records its own frames."""
    cls = type(f"solar_fn_{getattr(fn, '__name__', 'fn')}", (torch.nn.Module,),
               {"forward": staticmethod(fn)})
    return cls()


def build(module: types.ModuleType, entry: Entry, path: str, device: str = "meta",
          seed: int = 0) -> tuple[torch.nn.Module, tuple]:
    """Instantiate the entry's module and inputs on ``device`` ("meta" for analysis)."""
    path = os.path.realpath(path)
    torch.manual_seed(seed)
    dev = torch.device(device)
    try:
        with dev:
            if entry.kind == "model":
                init = getattr(module, "get_init_inputs", lambda: [])()
                obj = getattr(module, entry.name)
                model = obj(*init)
                inputs = module.get_inputs()
            else:
                obj = getattr(module, entry.name)
                if entry.kind == "module" or isinstance(obj, type):
                    model = obj(*entry.init_args, **dict(entry.init_kwargs))
                else:
                    model = _function_module(obj)
                inputs = [_spec_tensor(s, device) for s in entry.inputs or ()]
    except Exception as exc:
        raise EntryError("build", f"building the entry failed: {type(exc).__name__}: {exc}",
                         user_line(exc, path)) from exc
    if not isinstance(model, torch.nn.Module):
        raise EntryError("build", f"{entry.name} did not produce a torch.nn.Module")
    model.eval()
    if device == "meta":
        model = model.to("meta") if any(p.device.type != "meta" for p in model.parameters()) else model
        inputs = [t.to("meta") if isinstance(t, torch.Tensor) else t for t in inputs]
    return model, tuple(inputs)


def decomp_table() -> dict:
    """torch.export's core ATen decompositions, less the ops kept whole (``KEEP_WHOLE``)."""
    table = torch.export.default_decompositions()
    for name in KEEP_WHOLE:
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            table.pop(getattr(packet, overload), None)
    return table


_decomp_table = decomp_table  # the former name (tests/test_ops_extra.py imports it)


# torch logs a traceback for every failed meta kernel; the entry's error says it once
logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def line_of(stack_trace: str | None, path: str) -> int | None:
    """The innermost frame of ``stack_trace`` that lies in ``path``."""
    if not stack_trace:
        return None
    line = None
    for file, ln in _FRAME.findall(stack_trace):
        if file == path or os.path.realpath(file) == path:
            line = int(ln)
    return line


def trace(module: types.ModuleType, entry: Entry, path: str) -> Traced:
    """Export an entry on meta tensors (no real compute) and decompose it to core ATen; a
    failure is an EntryError pointing at the user's line."""
    path = os.path.realpath(path)
    model, inputs = build(module, entry, path, "meta")
    tensor_inputs = tuple(inputs)
    try:
        # tensors the forward creates (torch.zeros(...)) must be meta too
        with contextlib.redirect_stdout(io.StringIO()), torch.device("meta"), recurrent_shape_rules():
            ep = torch.export.export(model, tensor_inputs, strict=False)
            ep = ep.run_decompositions(decomp_table())
    except Exception as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        kind = type(exc).__name__
        hint = ""
        if "data-dependent" in str(exc).lower() or "guard" in str(exc).lower():
            hint = (" (control flow depends on tensor values; make it static, or opt in to the "
                    "LLM frontend)")
        raise EntryError("trace", f"torch.export could not trace {entry.name}: {kind}: {msg}{hint}",
                         user_line(exc, path)) from exc
    traced = Traced(entry=entry, path=path, exported=ep)
    sig = ep.graph_signature
    for spec in sig.input_specs:
        name = spec.arg.name if hasattr(spec.arg, "name") else None
        if name is None:
            continue
        kind = spec.kind.name.lower()
        traced.kinds[name] = {"user_input": "input", "parameter": "param", "buffer": "buffer",
                              "constant_tensor": "constant"}.get(kind, kind)
        traced.targets[name] = spec.target or name
    for node in ep.graph.nodes:
        traced.lines[node.name] = line_of(node.meta.get("stack_trace"), path)
    specs = []
    for ph, t in zip([n for n in ep.graph.nodes if n.op == "placeholder"
                      and traced.kinds.get(n.name) == "input"], tensor_inputs):
        if isinstance(t, torch.Tensor):
            specs.append(TensorSpec(ph.name, str(t.dtype).replace("torch.", ""), tuple(t.shape)))
    traced.input_specs = specs
    return traced
