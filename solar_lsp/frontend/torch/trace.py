"""Trace a discovered torch entry on meta tensors (docs/architecture.md §2).

Nothing here allocates real tensors: the module is built and its inputs are made under
``torch.device("meta")``, and the trace runs on those. The meta tracer
(frontend/torch/metatrace.py) records the functional ATen graph without torch.export, whose
import of torch._dynamo would cost about 2 s of every cold start; torch.export stays the
fallback for what it refuses. Each node is mapped to the line of the analyzed file it comes
from (the innermost frame in that file).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import logging
import os
import re
import types
from dataclasses import dataclass, field
from typing import Any

import torch

from solar_lsp.frontend.errors import EntryError, realpath, user_line
from solar_lsp.frontend.torch import metatrace
from solar_lsp.frontend.torch.build import build, load_module  # noqa: F401 (re-exported)
from solar_lsp.frontend.torch.devices import device_map
from solar_lsp.frontend.torch.fake_recurrent import recurrent_shape_rules
from solar_lsp.frontend.torch.metatrace import MetaProgram, attribute, split_table, trace_meta
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
    """An entry traced to a functional core-ATen graph (or, in train mode, the joint graph of
    a training step), with what lowering needs to know about its nodes: source lines,
    placeholder kinds and targets, the input specs, the phases."""

    entry: Entry
    path: str
    # metatrace.MetaProgram (torch.export.ExportedProgram when export traced it, decomposed);
    # train.JointGraph in train mode. Each has .graph, .graph_module and .constants
    exported: Any
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
    notes: list[dict] = field(default_factory=list)  # for EntryReport.notes (GPU devices asked)


def warm_up() -> None:
    """Build the decomposition tables the tracer uses, once per process, so that it counts
    as start-up time, not as the first entry's trace time; workers call it at start. It
    imports neither torch.export's tracer nor torch._dynamo, nor sympy (lazy_shapes.py)."""
    _tables()
    metatrace.warm_up()


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
        if file == path or realpath(file) == path:
            line = int(ln)
    return line


def trace(module: types.ModuleType, entry: Entry, path: str) -> Traced:
    """Trace an entry on meta tensors (no real compute) into a functional graph of core ATen
    ops (frontend/torch/metatrace.py); torch.export when that tracer cannot take the entry.
    A failure is an EntryError pointing at the user's line."""
    path = os.path.realpath(path)
    notes: list[dict] = []
    model, inputs = build(module, entry, path, "meta", notes=notes)
    devices = device_map("meta", path)  # a forward that asks for cuda gets meta tensors
    try:
        with devices:
            traced = _trace_meta(entry, path, model, inputs)
    except Exception:  # export takes what the meta tracer refuses, or says why it cannot
        model, inputs = build(module, entry, path, "meta")
        with devices:
            traced = _trace_export(entry, path, model, inputs)
    for note in notes + devices.notes():
        if note not in traced.notes:
            traced.notes.append(note)
    return traced


@functools.lru_cache(maxsize=1)
def _tables() -> tuple[list, dict]:
    """The ops kept whole and the python decompositions (computed once per process)."""
    return split_table(decomp_table())


def _trace_meta(entry: Entry, path: str, model: torch.nn.Module, inputs: tuple) -> Traced:
    whole, table = _tables()
    names = argument_names(model, inputs)
    with contextlib.redirect_stdout(io.StringIO()), torch.device("meta"):
        program, info = trace_meta(model, inputs, names, whole, table)
    traced = Traced(entry=entry, path=path, exported=program, kinds=info.kinds, targets=info.targets)
    for node in program.graph.nodes:
        traced.lines[node.name] = line_of(node.meta.get("stack_trace"), path)
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    traced.input_specs = [TensorSpec(ph.name, str(t.dtype).replace("torch.", ""), tuple(t.shape))
                          for ph, t in zip(info.arguments, tensors)]
    return traced


def argument_names(model: torch.nn.Module, inputs: tuple) -> list[str]:
    """The forward's names of its tensor arguments (``input<i>`` where it has none)."""
    try:
        names = [p.name for p in inspect.signature(model.forward).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names += [f"input{i}" for i in range(len(names), len(inputs))]
    return [n for n, t in zip(names, inputs) if isinstance(t, torch.Tensor)]


def constant_values(traced: Traced, model: torch.nn.Module, inputs: tuple) -> dict[str, Any]:
    """The real values of an inference graph's tensor constants, by target, for ``model``
    and ``inputs`` built on the CPU: a tensor attribute of the model from the model, a tensor
    the forward made from Python data from the trace (torch.export's graph: from an export of
    the CPU model). A value that stays unknown is left out."""
    program = traced.exported
    if isinstance(program, MetaProgram):
        out: dict[str, Any] = {}
        for target, value in program.constants.items():
            if isinstance(value, torch.Tensor) and value.device.type == "meta":
                value = attribute(model, target)
            if value is not None:
                out[target] = value
        return out
    tensors = tuple(t for t in inputs if isinstance(t, torch.Tensor))
    try:
        with torch.no_grad():
            return dict(torch.export.export(model, tensors, strict=False).constants)
    except Exception:  # the value stays unknown; the caller says so
        return {}


def _trace_export(entry: Entry, path: str, model: torch.nn.Module, inputs: tuple) -> Traced:
    """The former tracer: torch.export on meta tensors, decomposed to core ATen (it imports
    torch._dynamo, about 2 s, the first time)."""
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
