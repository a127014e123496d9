"""Trace one training step of a torch entry: its forward, the loss, and the backward of the
loss with respect to every trainable parameter, as one joint fx graph (docs/training.md,
"PyTorch").

``torch.func.functional_call`` runs the model with its parameters as graph inputs, the loss
reduces the output (``mean`` or ``sum``), and ``torch.autograd.grad`` differentiates it;
``make_fx`` records both on fake tensors with the same decomposition table as the inference
trace. Forward nodes keep their source line from ``stack_trace``; a backward node carries the
``seq_nr`` of the forward node it differentiates and gets that node's line. The loss and its
backward belong to the entry's own line.

Frozen parameters (``requires_grad=False``) and the inputs get no gradient. BatchNorm in
training normalizes with the batch statistics; its running-statistics update (which changes
neither the loss nor a gradient) is left out.
"""

from __future__ import annotations

import contextlib
import io
import os
import types
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx.traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import make_fx
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from solar_lsp.frontend.errors import EntryError, Lowered, trace_error
from solar_lsp.frontend.torch.attention_backward import AttentionAsOneOp
from solar_lsp.frontend.torch.trace import Traced, argument_names, build, decomp_table, line_of
from solar_lsp.source.discover import Entry, TensorSpec

LOSSES = ("mean", "sum")


@dataclass
class JointGraph:
    """What readers of ``Traced.exported`` need from the joint graph: the graph module, its
    graph, and its constants (none: parameters and buffers are graph inputs)."""

    graph_module: torch.fx.GraphModule
    constants: dict = field(default_factory=dict)

    @property
    def graph(self) -> torch.fx.Graph:
        return self.graph_module.graph


def trace_train(module: types.ModuleType, entry: Entry, path: str, loss: str = "mean") -> Traced:
    """One training step of ``entry`` traced on fake tensors (no real compute): a Traced whose
    graph holds the forward, the loss (``mean`` or ``sum`` of the output) and the gradient of
    every trainable parameter, with ``phases``, ``loss`` and ``grads`` filled in."""
    if loss not in LOSSES:
        raise EntryError("trace", f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")
    path = os.path.realpath(path)
    model, inputs = build(module, entry, path, "meta")
    gm, graded = _trace_step(model, inputs, entry, path, loss, "meta")
    traced = Traced(entry=entry, path=path, exported=JointGraph(gm), mode="train")
    traced.loss_kind = loss
    params, buffers = dict(model.named_parameters()), dict(model.named_buffers())
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    _placeholders(traced, gm, params, buffers, tensors, argument_names(model, inputs))
    _phases_and_lines(traced, gm, path, entry.line)
    outs = [a for a in gm.graph.output_node().args[0] if isinstance(a, torch.fx.Node)]
    traced.loss = outs[0].name
    traced.grads = {fqn: node.name for fqn, node in zip(graded, outs[1:])}
    return traced


def _trace_step(model: torch.nn.Module, inputs: tuple, entry: Entry, path: str, loss: str,
                device: str) -> tuple[torch.fx.GraphModule, list[str]]:
    """make_fx of the step on fake tensors; the graph and the names of the parameters that
    got a gradient, in the order of the graph's outputs after the loss."""
    model.train()
    _batch_statistics_only(model)
    trainable = [k for k, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        raise EntryError("trace", f"{entry.name} has no trainable parameter: a training step "
                         "has nothing to differentiate")
    params = {k: p.detach().requires_grad_(p.requires_grad) for k, p in model.named_parameters()}
    buffers = dict(model.named_buffers())
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    graded: list[str] = []
    step = _step_fn(model, inputs, trainable, loss, graded)
    try:  # a tensor the forward makes from Python values (torch.tensor(2.0)) becomes a constant
        with contextlib.redirect_stdout(io.StringIO()), fx_traceback.preserve_node_meta(), \
                torch.device(device):
            gm = make_fx(step, tracing_mode="fake", record_stack_traces=True,
                         _allow_non_fake_inputs=True,
                         decomposition_table=_train_table())(params, buffers, *tensors)
    except EntryError:
        raise
    except Exception as exc:
        raise trace_error(exc, f"tracing the training step of {entry.name} failed", path) from exc
    _out_of_place(gm)
    return gm, graded


def _out_of_place(gm: torch.fx.GraphModule) -> None:
    """Rewrite each in-place op (``sigmoid_``, ``add_``: the meta trace of an LSTM has them)
    as its out-of-place form, and point the later readers of the tensor it overwrote at its
    result. An op that writes into a view or into a graph input is left as it is (its base
    would change too): it stays unlowered and is reported."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    for node in list(gm.graph.nodes):
        pure = _pure_form(node)
        target = node.args[0] if node.args else None
        if pure is None or not isinstance(target, torch.fx.Node) or target.op == "placeholder" \
                or _is_view(target):
            continue
        node.target = pure
        target.replace_all_uses_with(
            node, delete_user_cb=lambda user, at=order[node]: order.get(user, -1) > at)
    gm.graph.lint()
    gm.recompile()


def _pure_form(node: torch.fx.Node) -> Any:
    """The out-of-place overload of an in-place ATen op (``aten.add_.Tensor`` ->
    ``aten.add.Tensor``), or None."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return None
    name = target._schema.name.split("::")[-1]
    args = target._schema.arguments
    if not name.endswith("_") or name.endswith("__") or not args or args[0].alias_info is None \
            or not args[0].alias_info.is_write:
        return None
    packet = getattr(torch.ops.aten, name[:-1], None)
    return getattr(packet, target._overloadname, None) if packet is not None else None


def _is_view(node: torch.fx.Node) -> bool:
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return False
    rets = target._schema.returns
    return bool(rets) and rets[0].alias_info is not None and not rets[0].alias_info.is_write


def real_constants(traced: Traced, model: torch.nn.Module, inputs: tuple) -> dict[str, torch.Tensor]:
    """The values of the joint graph's tensor constants (its ``get_attr`` nodes), which the
    meta trace cannot hold: the step traced again on the real (CPU) ``model``, whose
    constants come in the same order. Empty when the graph has none."""
    gm = traced.exported.graph_module
    names = list(dict.fromkeys(n.target for n in gm.graph.nodes if n.op == "get_attr"))
    if not any(getattr(gm, t).device.type == "meta" for t in names
               if isinstance(getattr(gm, t, None), torch.Tensor)):
        return {}
    real, _ = _trace_step(model, inputs, traced.entry, traced.path, traced.loss_kind, "cpu")
    got = list(dict.fromkeys(n.target for n in real.graph.nodes if n.op == "get_attr"))
    if len(got) != len(names):
        raise EntryError("verify", "the step's constants differ between the meta and CPU traces")
    return {t: getattr(real, g) for t, g in zip(names, got)}


def _train_table() -> dict:
    """The inference trace's decompositions, with training-mode dropout kept whole: it is
    reported as one op that draws a random mask, not as its in-place decomposition."""
    table = decomp_table()
    for overload in torch.ops.aten.native_dropout.overloads():
        table.pop(getattr(torch.ops.aten.native_dropout, overload), None)
    return table


def _step_fn(model: torch.nn.Module, inputs: tuple, trainable: list[str], loss: str,
             graded: list[str]) -> Any:
    """The function make_fx traces: forward, loss, gradients (``graded`` gets the names of
    the parameters that have one: an unused parameter has none)."""
    from torch._functorch._aot_autograd.logging_utils import setup_stacktrace_preservation_hooks

    def step(params: dict, buffers: dict, *tensors: torch.Tensor) -> tuple:
        it = iter(tensors)
        args = tuple(next(it) if isinstance(t, torch.Tensor) else t for t in inputs)
        with _DropoutAsOneOp(), AttentionAsOneOp():  # attention: one op each way (issue 19)
            out = torch.func.functional_call(model, {**params, **buffers}, args)
        with fx_traceback.annotate({"solar": "loss"}):
            value = _reduce(out, loss)
        setup_stacktrace_preservation_hooks([value.grad_fn])
        grads = torch.autograd.grad(value, [params[k] for k in trainable], allow_unused=True)
        graded.clear()
        graded.extend(k for k, g in zip(trainable, grads) if g is not None)
        return (value, *[g for g in grads if g is not None])
    return step


class _DropoutAsOneOp(TorchFunctionMode):
    """Training-mode dropout as ``aten.native_dropout`` (kept whole), whose random mask is
    reported as one unsupported op; on the CPU and meta devices torch would otherwise
    decompose it into an in-place ``bernoulli_`` and ``div_``."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func is torch.nn.functional.dropout:
            x = args[0] if args else kwargs["input"]
            p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
            training = args[2] if len(args) > 2 else kwargs.get("training", True)
            if training and p > 0:
                return torch.ops.aten.native_dropout(x, float(p), True)[0]
        return func(*args, **kwargs)


def _reduce(out: Any, loss: str) -> torch.Tensor:
    """The scalar loss: ``mean`` (or ``sum``) of every float output that depends on a
    parameter, added together when the entry returns several."""
    leaves = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)
              and t.dtype.is_floating_point and t.requires_grad]
    if not leaves:
        raise EntryError("trace", "the entry's output does not depend on a trainable parameter "
                         "(no float output with a gradient): there is no loss to differentiate")
    total = None
    for t in leaves:
        r = t.mean() if loss == "mean" else t.sum()
        total = r if total is None else total + r
    return total


def _batch_statistics_only(model: torch.nn.Module) -> None:
    """BatchNorm layers normalize with the batch statistics and keep no running ones, so the
    step has no in-place update of a buffer (docs/training.md, "PyTorch")."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.track_running_stats = False
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None


def _placeholders(traced: Traced, gm: torch.fx.GraphModule, params: dict, buffers: dict,
                  tensors: list, names: list[str]) -> None:
    """Kinds and targets of the graph's inputs (make_fx flattens its arguments in order),
    and the input specs (named as the forward names its tensor arguments)."""
    kinds = ["param"] * len(params) + ["buffer"] * len(buffers) + ["input"] * len(tensors)
    targets = list(params) + list(buffers) + [f"input{i}" for i in range(len(tensors))]
    leaves = pytree.tree_leaves((params, buffers, *tensors))
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(leaves) != len(phs) or len(kinds) != len(phs):
        raise EntryError("trace", "the training step's graph inputs do not match its arguments")
    for node, kind, target in zip(phs, kinds, targets):
        traced.kinds[node.name] = kind
        traced.targets[node.name] = target
    traced.input_specs = [TensorSpec(name, str(t.dtype).replace("torch.", ""), tuple(t.shape))
                          for name, t in zip(names, tensors)]


def _phases_and_lines(traced: Traced, gm: torch.fx.GraphModule, path: str, entry_line: int) -> None:
    """Each node's phase (everything after the loss is backward) and line (a backward node:
    the line of the forward node with its ``seq_nr``; the loss: the entry's line)."""
    nodes = list(gm.graph.nodes)
    loss_at = max((i for i, n in enumerate(nodes) if _is_loss(n)), default=None)
    if loss_at is None:
        raise EntryError("trace", "the loss was not found in the training step's graph")
    by_seq: dict[int, int] = {}
    for i, node in enumerate(nodes):
        if node.op == "output":
            traced.phases[node.name] = "backward"
            continue
        backward = i > loss_at
        traced.phases[node.name] = "backward" if backward else "forward"
        seq = node.meta.get("seq_nr")
        if not backward:
            line = entry_line if _is_loss(node) else line_of(node.meta.get("stack_trace"), path)
            if line is not None and isinstance(seq, int) and seq >= 0:
                by_seq.setdefault(seq, line)
        else:
            line = by_seq.get(seq, entry_line) if isinstance(seq, int) else entry_line
        traced.lines[node.name] = line


def _is_loss(node: torch.fx.Node) -> bool:
    custom = node.meta.get("custom")
    return isinstance(custom, dict) and custom.get("solar") == "loss"


def grad_tensors(traced: Traced, lowered: Lowered) -> dict[str, str]:
    """Each trainable parameter's IR tensor name -> its gradient's IR tensor name (the
    argument of the optimizer update). The program's outputs are the loss, then the
    gradients in the order of ``traced.grads``."""
    tensor_of: dict[str, str] = {}
    for tensor, node in lowered.node_of_tensor.items():
        tensor_of.setdefault(node, tensor)
    node_of_param = {t: n for n, t in traced.targets.items() if traced.kinds.get(n) == "param"}
    outs = lowered.program.outputs
    if len(outs) != len(traced.grads) + 1:
        raise EntryError("lower", "the training step's outputs were not all lowered")
    out: dict[str, str] = {}
    for fqn, g in zip(traced.grads, outs[1:]):
        p = tensor_of.get(node_of_param.get(fqn, ""))
        if p is not None:
            out[p] = g
    return out
