"""Trace an inference entry on meta tensors, functionalized, without torch.export
(docs/architecture.md §2, "torch").

In torch 2.13 ``torch.export``, ``make_fx`` and even ``FakeTensorMode()`` import
``torch._dynamo`` (about 2 s of a cold start, with sympy and FSDP). This tracer needs none of
them: the model and its inputs are already meta tensors, so every op runs its meta kernel and
only shapes, dtypes and strides are computed. A dispatch mode (:class:`_Recorder`) sits where
make_fx's proxy mode sits, under torch's Python functionalization, and writes each ATen op it
sees into an fx graph. It applies the same decompositions export applies: the core ATen
table (python decompositions) and the CompositeImplicitAutograd decompositions, except for
the ops the caller keeps whole, which stay one node, exactly as ``run_decompositions`` keeps
the ops removed from its table.

What the graph means, as export's does:

- placeholders: parameters (``p_<fqn>``), buffers (``b_<fqn>``), tensor attributes of the
  modules that are neither (``c_<fqn>``), tensors the forward makes from Python data
  (``c_lifted_tensor_<i>``), then the forward's tensor arguments (by their names);
- outputs: first the new value of every input the forward changes (an in-place update of a
  buffer, an argument or a tensor attribute, in input order), then the forward's outputs;
- a tensor attribute the forward *reassigns* (``self.hidden = ...``) is a state: the forward
  reads its value at the call and replaces it, so its new value is an output like an updated
  buffer, and an in-place change of the old tensor before the reassignment is not.

A forward this tracer cannot take (a data-dependent branch: ``.item()`` has no value on meta
tensors; a nested input) raises; the caller then falls back to torch.export, whose error
message says what to do.
"""

from __future__ import annotations

import contextlib
import operator
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from solar_lsp.frontend.torch import lazy_shapes
from solar_lsp.frontend.torch.fake_recurrent import RECURRENT_OPS, meta_outputs

_DATA_FACTORIES = (torch.tensor, torch.as_tensor, torch.asarray)


@dataclass
class MetaProgram:
    """What readers of ``Traced.exported`` need: the graph module, its graph, and the values
    of its tensor constants (``target -> tensor``; a tensor attribute of the model keeps its
    meta value here, the CPU model has the real one)."""

    graph_module: torch.fx.GraphModule
    constants: dict[str, Any] = field(default_factory=dict)
    replayed: int = 0  # op calls whose nodes were replayed from an identical earlier call

    @property
    def graph(self) -> torch.fx.Graph:
        return self.graph_module.graph


@dataclass
class Inputs:
    """The graph's inputs: each placeholder's kind (input|param|buffer|constant) and target
    (FQN, lifted constant name or argument name), the argument placeholders in order."""

    kinds: dict[str, str] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)
    arguments: list[torch.fx.Node] = field(default_factory=list)


class Refused(RuntimeError):
    """The meta tracer cannot take this entry (the caller uses torch.export instead)."""


def split_table(table: dict) -> tuple[list, dict]:
    """The CompositeImplicitAutograd ops kept whole, and the python decompositions, of an
    export decomposition table (``torch.export.default_decompositions()`` less some ops),
    split as ``ExportedProgram.run_decompositions`` splits it."""
    from torch._export.utils import _special_op_to_preserve_cia
    from torch.export.exported_program import _split_decomp_table_to_cia_and_python_decomp

    cia, python = _split_decomp_table_to_cia_and_python_decomp(dict(table))
    return [op for op, fn in cia.items() if fn is _special_op_to_preserve_cia], python


@contextlib.contextmanager
def keep_whole(ops: list) -> Iterator[None]:
    """While the block runs, ``ops`` (CompositeImplicitAutograd ops) reach the recorder as
    themselves instead of their decomposition: export's own override, with an autograd
    kernel that runs the op below autograd (export's would alias every output)."""
    from torch._export.utils import _special_op_to_preserve_cia
    from torch.export.exported_program import (
        _AUTOGRAD_ALIAS_BACKEND_KEYS_TO_OVERRIDE,
        _override_composite_implicit_decomp,
    )

    added = []
    for op in ops:
        for key in _AUTOGRAD_ALIAS_BACKEND_KEYS_TO_OVERRIDE:
            if key not in op.py_kernels:
                op.py_impl(key)(_below_autograd(op))
                added.append((op, key))
    try:
        with _override_composite_implicit_decomp({op: _special_op_to_preserve_cia for op in ops}):
            yield
    finally:
        for op, key in added:
            op.py_kernels.pop(key, None)
        for op in ops:
            op._dispatch_cache.clear()


def _below_autograd(op: Any) -> Callable:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        with torch._C._AutoDispatchBelowAutograd():
            return op(*args, **kwargs)
    return kernel


def _stack() -> str:
    """The Python stack as fx's ``stack_trace`` writes it (file and line of each frame)."""
    frame, parts = sys._getframe(2), []
    while frame is not None:
        code = frame.f_code
        parts.append(f'  File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}')
        frame = frame.f_back
    return "\n".join(reversed(parts))


#: an op called again with the same inputs' metadata, arguments and Python stack replays the
#: nodes its first call recorded (``_Recorder._replay``); False: every call is traced anew
REPLAY = True
# arguments an op's replay key may hold (hashable, compared by value and type)
_PLAIN = (int, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format)


@dataclass
class _Recording:
    """What one top-level call of an op wrote: its nodes in order, which of its tensor
    arguments (by position) each outside node it read was, and its outputs (meta tensors
    only): the index of each one's node, with its shape, strides and dtype."""

    nodes: list[torch.fx.Node]
    inputs: dict[torch.fx.Node, int]
    spec: Any
    outs: list[tuple]


class _Recorder(TorchDispatchMode):
    """Writes every ATen op that reaches it into ``graph``; runs it on the meta tensors.

    Tracing an op costs about a millisecond (functionalization, its decomposition, meta
    kernels), and a Python loop over time steps or a stack of identical layers calls the same
    ops hundreds of times. So the first call of an op with given input metadata, arguments
    and Python stack is traced; a later identical call replays the nodes that call recorded
    (their copies, reading the new call's tensors) without running anything
    (docs/architecture.md §2, "Repeated ops"). The graph is the same node for node."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:  # no torch._dynamo.disable wrapper (it imports dynamo)
        return False

    def __init__(self, graph: torch.fx.Graph, table: dict):
        super().__init__()
        # ordered as make_fx's proxy mode: under functionalization, above everything else
        self._mode_key = torch._C._TorchDispatchModeKey.PROXY
        self.tracer = types.SimpleNamespace(tensor_tracker=_Tracker(self))  # read by functionalization
        self.graph, self.table = graph, table
        self.nodes: dict[int, tuple[torch.Tensor, torch.fx.Node]] = {}
        self.lifted: dict[str, Any] = {}  # lifted constant name -> value
        self.before: torch.fx.Node | None = None  # lifted constants go before this placeholder
        self.next_real: torch.Tensor | None = None  # the CPU value of the tensor being lifted
        self.depth = 0  # decompositions being run
        self.memo: dict[tuple, _Recording | None] = {}  # replay key -> its first call's nodes
        self.created: list[torch.fx.Node] | None = None  # nodes of the call being recorded
        self.replayed = 0  # calls replayed (tests and benchmarks read it)

    def bind(self, t: torch.Tensor, node: torch.fx.Node) -> None:
        self.nodes[id(t)] = (t, node)

    def node_of(self, t: torch.Tensor) -> torch.fx.Node:
        hit = self.nodes.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        return self._lift(t)

    def _lift(self, t: torch.Tensor) -> torch.fx.Node:
        """A tensor from outside the graph (one the forward made from Python data)."""
        name = f"lifted_tensor_{len(self.lifted)}"
        real, self.next_real = self.next_real, None
        anchor = self.before or next((n for n in self.graph.nodes if n.op != "placeholder"), None)
        ctx = self.graph.inserting_before(anchor) if anchor is not None else contextlib.nullcontext()
        with ctx:
            node = self.graph.placeholder("c_" + name)
        node.meta["val"] = t
        fits = real is not None and real.shape == t.shape and real.dtype == t.dtype
        self.lifted[name] = real if fits else t
        self.bind(t, node)
        return node

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        key = self._key(func, args, kwargs) if REPLAY and self.depth == 0 else None
        if key is None:
            return self._dispatch(func, args, kwargs)
        done = self.memo.get(key)
        if done is not None:
            self.replayed += 1
            return self._replay(done, args, kwargs)
        self.created, lifted = [], len(self.lifted)
        try:
            out = self._dispatch(func, args, kwargs)
        finally:
            created, self.created = self.created, None
        self.memo[key] = self._recording(created, args, kwargs, out) if len(self.lifted) == lifted else None
        return out

    def _key(self, func: Any, args: tuple, kwargs: dict) -> tuple | None:
        """What a call's nodes depend on: the op, each tensor argument's metadata (and which
        arguments are the same tensor or node), every other argument by type and value, grad mode and
        the Python stack (the nodes' source lines). None for a call never replayed: an op that
        mutates or returns a view (functionalization tracks those), an argument of another
        kind or a tensor not on meta (a CPU tensor's results depend on its values), a tensor
        made from Python data (its value is lifted)."""
        schema = func._schema
        if self.next_real is not None or schema.is_mutable or any(r.alias_info is not None for r in schema.returns):
            return None
        leaves, spec = pytree.tree_flatten((args, kwargs))
        parts: list[tuple] = []
        same: dict[int, int] = {}
        for x in leaves:
            if isinstance(x, torch.Tensor):
                if type(x) not in (torch.Tensor, torch.nn.Parameter) or x.device.type != "meta":
                    return None  # (a CPU tensor's results depend on its values)
                # (not its storage offset: x[t] of a loop's step t is x at its own offset, and
                # no functional op's meta kernel or decomposition reads the offset)
                bound = self.nodes.get(id(x))
                who = id(bound[1]) if bound is not None and bound[0] is x else -id(x)
                parts.append((same.setdefault(who, len(same)), tuple(x.shape), x.stride(),
                              x.dtype, x.device.type, x.requires_grad))
            elif type(x) is float:
                parts.append((float, x.hex()))  # -0.0 and 0.0 differ; nan is itself
            elif type(x) in _PLAIN:
                parts.append((type(x), x))
            else:
                return None
        return (func, spec, tuple(parts), torch.is_grad_enabled(), _stack())

    def _recording(self, nodes: list, args: tuple, kwargs: dict, out: Any) -> _Recording | None:
        """The replayable form of a call that wrote ``nodes``; None when its nodes read a node
        other than its arguments' or an output is not a fresh meta tensor of its own nodes (a
        value such as ``.item()``'s or a CPU tensor depends on more than the key)."""
        at = {n: i for i, n in enumerate(nodes)}
        inputs: dict[torch.fx.Node, int] = {}
        for i, t in enumerate(x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)):
            hit = self.nodes.get(id(t))
            if hit is not None and hit[0] is t:
                inputs.setdefault(hit[1], i)
        if any(a not in at and a not in inputs for n in nodes for a in n.all_input_nodes):
            return None
        leaves, spec = pytree.tree_flatten(out)
        outs: list[tuple] = []
        for t in leaves:
            if not isinstance(t, torch.Tensor) or t.device.type != "meta":
                return None
            hit = self.nodes.get(id(t))
            if hit is None or hit[0] is not t or hit[1] not in at or t.storage_offset() != 0:
                return None
            outs.append((at[hit[1]], tuple(t.shape), t.stride(), t.dtype))
        return _Recording(nodes, inputs, spec, outs)

    def _replay(self, done: _Recording, args: tuple, kwargs: dict) -> Any:
        """Copies of ``done``'s nodes reading this call's tensors, and fresh meta outputs."""
        tensors = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        env = {old: self.node_of(tensors[i]) for old, i in done.inputs.items()}
        for n in done.nodes:
            env[n] = self.graph.node_copy(n, env.__getitem__)
            val = n.meta.get("val")
            env[n].meta["val"] = _fresh(val) if isinstance(val, torch.Tensor) else \
                pytree.tree_map_only(torch.Tensor, _fresh, val)
        leaves = []
        for o in done.outs:
            node = env[done.nodes[o[0]]]
            t = torch.empty_strided(o[1], o[2], dtype=o[3], device="meta")
            node.meta["val"] = t
            self.bind(t, node)
            leaves.append(t)
        return pytree.tree_unflatten(leaves, done.spec)

    def _dispatch(self, func: Any, args: tuple, kwargs: dict) -> Any:
        if func is torch.ops.aten.lift_fresh.default:  # as make_fx: the constant stays intact
            func = torch.ops.aten.lift_fresh_copy.default
        if func is torch.ops.aten.detach.default and self.depth:
            # functionalization detaches the result of a factory a decomposition calls
            # (zeros_like -> full_like): no node, as in export's graph
            out = func(*args, **kwargs)
            self.bind(out, self.node_of(args[0]))
            return out
        # decompositions run without autograd, as export's re-trace runs them
        if func in self.table:
            out = self._decompose(self.table[func], args, kwargs)
            if out is not NotImplemented:
                return out
        if func._can_decompose():  # CompositeImplicitAutograd: the ops kept whole refuse
            out = self._decompose(func.decompose, args, kwargs)
            if out is not NotImplemented:
                return out
        out = meta_outputs(func, *args, **kwargs) if str(func) in RECURRENT_OPS else func(*args, **kwargs)
        leaves = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        if not leaves:  # sizes, devices: nothing to record
            return out
        if func is torch.ops.aten._local_scalar_dense.default:
            raise Refused("a tensor's value is read on the host (.item() or a branch on a tensor)")
        node = self.graph.create_node(
            "call_function", func, pytree.tree_map_only(torch.Tensor, self.node_of, args),
            pytree.tree_map_only(torch.Tensor, self.node_of, kwargs), name=func.overloadpacket.__name__)
        self._annotate(node, out)
        if isinstance(out, torch.Tensor):
            self.bind(out, node)
        elif isinstance(out, (list, tuple)):
            for i, t in enumerate(out):
                if isinstance(t, torch.Tensor):
                    item = self.graph.create_node("call_function", operator.getitem, (node, i), name="getitem")
                    self._annotate(item, t)
                    self.bind(t, item)
        return out

    def _decompose(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        self.depth += 1
        try:
            with self, torch.no_grad():
                return fn(*args, **kwargs)
        finally:
            self.depth -= 1

    def _annotate(self, node: torch.fx.Node, val: Any) -> None:
        node.meta["val"] = val
        node.meta["stack_trace"] = _stack()
        if self.created is not None:
            self.created.append(node)


def _fresh(t: torch.Tensor) -> torch.Tensor:
    """A meta tensor of ``t``'s metadata (a replayed node's value of its own); a view of an
    inner step keeps ``t`` itself."""
    if t.storage_offset() or t.device.type != "meta":
        return t
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


class _Tracker:
    """What functionalization asks the proxy mode (``tracer.tensor_tracker[t].proxy.node``)."""

    def __init__(self, rec: _Recorder):
        self.rec = rec

    def __getitem__(self, t: torch.Tensor) -> Any:
        hit = self.rec.nodes.get(id(t))
        if hit is None or hit[0] is not t:
            raise KeyError("not traced")
        return types.SimpleNamespace(proxy=types.SimpleNamespace(node=hit[1]))


_WRAPPED: dict[str, Any] = {"modules": -1, "functions": ()}


def _dynamo_disabled() -> tuple:
    """The functions torch wraps in ``torch._disable_dynamo`` (the elementwise references its
    decompositions and meta kernels run, FunctionalTensorMode's and FlopCounterMode's
    dispatch): the wrapper's first call imports torch._dynamo (about 2 s) to build the real
    wrapper. Found among the live functions (about 0.1 s), again only when torch modules were
    imported since (a module defines its wrappers at import; numba's many modules do not)."""
    import gc

    import torch._decomp  # noqa: F401  (the references and decompositions, defined at import)
    import torch._refs  # noqa: F401

    torch_modules = sum(1 for name in list(sys.modules) if name.startswith("torch"))
    if _WRAPPED["modules"] != torch_modules:  # only torch's modules define these wrappers
        code = FunctionalTensorMode.__dict__["__torch_dispatch__"].__code__  # the wrapper's code
        at = code.co_freevars.index("fn") if "fn" in code.co_freevars else None
        _WRAPPED["functions"] = () if at is None else tuple(
            f.__closure__[at].cell_contents for f in gc.get_objects()
            if type(f) is types.FunctionType and f.__code__ is code)
        _WRAPPED["modules"] = torch_modules
    return _WRAPPED["functions"]


def warm_up() -> None:
    """Find the ``torch._disable_dynamo`` wrappers now, not during the first trace, and put
    the sympy-free stand-in for symbolic_shapes in place (lazy_shapes.py)."""
    lazy_shapes.install()
    _dynamo_disabled()


@contextlib.contextmanager
def without_dynamo_import() -> Iterator[None]:
    """For the block, each ``torch._disable_dynamo`` wrapper finds its cache filled with the
    function itself, so that it does not import torch._dynamo. Nothing is compiled here, so
    the wrapper has nothing to disable; the caches are cleared after, so that a later
    torch.compile in the process (``solar headroom --compile``) gets the real wrappers."""
    done = []
    for raw in _dynamo_disabled():
        if getattr(raw, "__dynamo_disable", None) is None:
            setattr(raw, "__dynamo_disable", raw)
            done.append(raw)
    try:
        yield
    finally:
        for raw in done:
            if getattr(raw, "__dynamo_disable", None) is raw:
                delattr(raw, "__dynamo_disable")


class _KeepData(TorchFunctionMode):
    """Keeps the CPU value of a tensor the forward makes from Python data (``torch.tensor``)
    under the meta device, for the recorder to lift with its value."""

    def __init__(self, recorder: _Recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func in _DATA_FACTORIES:
            try:
                from torch.utils._python_dispatch import _disable_current_modes
                with _disable_current_modes():
                    self.recorder.next_real = func(*args, **{**kwargs, "device": "cpu"})
            except Exception:  # the value stays unknown; verification says so
                self.recorder.next_real = None
        return func(*args, **kwargs)


def _sanitize(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "_", name).lower()


def _state_name(fqn: str) -> str:
    """A placeholder name from an FQN, as export makes it (``self_attn.in_proj_bias`` ->
    ``attn_in_proj_bias``: export drops a leading ``self_``)."""
    for prefix in ("L__self___", "self_"):
        if fqn.startswith(prefix):
            fqn = fqn[len(prefix):]
            break
    return _sanitize(fqn)


def tensor_attributes(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's tensor attributes that are neither parameters nor buffers, by FQN."""
    out: dict[str, torch.Tensor] = {}
    for prefix, mod in model.named_modules():
        for key, value in vars(mod).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter) \
                    and key not in mod._parameters and key not in mod._buffers:
                out[f"{prefix}.{key}" if prefix else key] = value
    return out


def trace_meta(model: torch.nn.Module, inputs: tuple, names: list[str], whole: list,
               table: dict) -> tuple[MetaProgram, Inputs]:
    """The functional ATen graph of ``model(*inputs)`` on meta tensors: ``names`` are the
    forward's names of its tensor arguments, ``whole`` the CompositeImplicitAutograd ops kept
    whole and ``table`` the python decompositions (:func:`split_table`)."""
    if any(not isinstance(t, torch.Tensor) and any(isinstance(x, torch.Tensor) for x in pytree.tree_leaves(t))
           for t in inputs):
        raise Refused("a nested input")
    lazy_shapes.install()
    graph = torch.fx.Graph()
    rec = _Recorder(graph, table)
    info = Inputs()
    state = {"param": dict(model.named_parameters()), "buffer": dict(model.named_buffers()),
             "constant": tensor_attributes(model)}
    flat: list[torch.Tensor] = []
    for kind, prefix in (("param", "p_"), ("buffer", "b_"), ("constant", "c_")):
        for fqn, t in state[kind].items():
            node = graph.placeholder(prefix + _state_name(fqn))
            info.kinds[node.name], info.targets[node.name] = kind, fqn
            flat.append(_bound(rec, node, t))
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    for name, t in zip(names, tensors):
        node = graph.placeholder(_sanitize(name))
        info.kinds[node.name], info.targets[node.name] = "input", name
        info.arguments.append(node)
        flat.append(_bound(rec, node, t))
    rec.before = info.arguments[0] if info.arguments else None
    with without_dynamo_import(), \
            enable_python_dispatcher(), keep_whole(whole), rec, FunctionalTensorMode(export=True), \
            _KeepData(rec):
        outs = _run_functional(model, inputs, state, flat)
        out_nodes = [rec.node_of(o) if isinstance(o, torch.Tensor) else o for o in outs]
    graph.output(tuple(out_nodes))
    graph.eliminate_dead_code()
    for name in rec.lifted:
        info.kinds["c_" + name], info.targets["c_" + name] = "constant", name
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    return MetaProgram(gm, {**state["constant"], **rec.lifted}, rec.replayed), info


def _bound(rec: _Recorder, node: torch.fx.Node, t: torch.Tensor) -> torch.Tensor:
    node.meta["val"] = t
    rec.bind(t, node)
    return t


def _run_functional(model: torch.nn.Module, inputs: tuple, state: dict, flat: list) -> list:
    """Run the forward on functional wrappers of ``flat`` (parameters, buffers, tensor
    attributes, tensor arguments, in that order); the changed inputs' new values, then the
    flattened outputs, as meta tensors."""
    exclude = torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize))
    with exclude:
        fun = [FunctionalTensor.to_functional(t) for t in flat]
        n_p, n_b = len(state["param"]), len(state["buffer"])
        p = dict(zip(state["param"], fun[:n_p]))
        b = dict(zip(state["buffer"], fun[n_p:n_p + n_b]))
        attrs = list(state["constant"])
        c = dict(zip(attrs, fun[n_p + n_b:n_p + n_b + len(attrs)]))
        it = iter(fun[n_p + n_b + len(attrs):])
        args = tuple(next(it) if isinstance(t, torch.Tensor) else t for t in inputs)
        with _attributes(model, c) as after:
            out = torch.func.functional_call(model, {**p, **b}, args)
        changed = []
        for i, f in enumerate(fun):
            fqn = attrs[i - n_p - n_b] if n_p + n_b <= i < n_p + n_b + len(attrs) else None
            if fqn is not None and after.get(fqn) is not f:  # reassigned: the state's new value
                if isinstance(after.get(fqn), torch.Tensor):
                    changed.append(_unwrap(after[fqn]))
                continue
            torch._sync(f)
            if torch._functionalize_has_data_mutation(f.elem):
                changed.append(_unwrap(f))
        return changed + [_unwrap(o) for o in pytree.tree_leaves(out)]


def _unwrap(t: Any) -> Any:
    if isinstance(t, FunctionalTensor):
        torch._sync(t)
        return torch._from_functional_tensor(t.elem)
    return t


@contextlib.contextmanager
def _attributes(model: torch.nn.Module, values: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Set the model's tensor attributes to ``values`` for the block; the dict it yields
    holds their values after the block (a forward may reassign them); the originals are put
    back."""
    after: dict[str, Any] = {}
    owners = {fqn: _owner(model, fqn) for fqn in values}
    originals = {fqn: getattr(mod, leaf) for fqn, (mod, leaf) in owners.items()}
    try:
        for fqn, (mod, leaf) in owners.items():
            setattr(mod, leaf, values[fqn])
        yield after
        for fqn, (mod, leaf) in owners.items():
            after[fqn] = getattr(mod, leaf, None)
    finally:
        for fqn, (mod, leaf) in owners.items():
            setattr(mod, leaf, originals[fqn])


def attribute(model: torch.nn.Module, fqn: str) -> Any:
    """The model's attribute at ``fqn`` (``"block.mask"``), or None."""
    try:
        mod, leaf = _owner(model, fqn)
        return getattr(mod, leaf, None)
    except AttributeError:
        return None


def _owner(model: torch.nn.Module, fqn: str) -> tuple[torch.nn.Module, str]:
    *path, leaf = fqn.split(".")
    mod = model
    for part in path:
        mod = getattr(mod, part)
    return mod, leaf
