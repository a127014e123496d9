"""Output shapes of the recurrent layers kept whole (``aten.lstm/gru/rnn_tanh/rnn_relu.input``)
while tracing on fake tensors (docs/architecture.md §2).

torch.export runs an op it keeps on fake tensors to learn its outputs. For the recurrent ops
FakeTensorMode has no shape rule and runs torch's Python decomposition instead: every cell
of every step of every layer, about 15 fake ops per step, twice per trace (export, then the
re-trace of ``run_decompositions``). A 6-layer LSTM over 512 steps took over a minute that
way. The outputs follow from the shapes alone: ``output`` is ``[T, B, D * H_out]`` (made
time-major, then transposed for ``batch_first``, as ATen's kernel does), ``h_n`` and ``c_n``
have the shapes of ``h_0`` and ``c_0``. :func:`recurrent_shape_rules` installs that rule for
the duration of a trace.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

_OPS = ("lstm", "gru", "rnn_tanh", "rnn_relu")


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise RuntimeError(msg)


def _outputs(fake_mode: Any, func: Any, x: Any, hx: Any, params: Any, has_biases: bool,
             num_layers: int, dropout: float, train: bool, bidirectional: bool,
             batch_first: bool) -> tuple:
    """The fake outputs of one recurrent op, with the checks of ATen's kernel on the states."""
    hs = list(hx) if isinstance(hx, (list, tuple)) else [hx]
    _check(x.dim() == 3, f"{func}: input must have 3 dimensions, got {x.dim()}")
    D = 2 if bidirectional else 1
    T, B = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    h_out = hs[0].shape[-1]
    for h in hs:
        _check(h.dim() == 3 and h.shape[0] == num_layers * D and h.shape[1] == B,
               f"{func}: expected hidden size ({num_layers * D}, {B}, {h.shape[-1]}), "
               f"got {tuple(h.shape)}")
    per = (2 + 2 * bool(has_biases)) * num_layers * D
    _check(len(params) in (per, per + num_layers * D),
           f"{func}: got {len(params)} parameters for {num_layers} layer(s) x {D} direction(s)")
    F = D * h_out
    with fake_mode:
        if batch_first:  # ATen computes time-major and returns the transpose
            out = x.new_empty_strided((B, T, F), (F, B * F, 1))
        else:
            out = x.new_empty((T, B, F))
        states = [x.new_empty(tuple(h.shape)) for h in hs]
    return (out, *states)


RECURRENT_OPS = frozenset(f"aten.{name}.input" for name in _OPS)


def meta_outputs(func: Any, *args: Any) -> tuple:
    """The outputs of one recurrent op (``aten.lstm.input`` ...) on meta tensors, by the same
    shape rule (the meta tracer of frontend/torch/metatrace.py has no fake mode)."""
    return _outputs(contextlib.nullcontext(), func, *args)


def _on_fake(op: Any, slow: Any) -> Any:
    """A Python-dispatcher kernel for ``op``: the shape rule on fake tensors, else ``slow``."""
    def kernel(*args: Any, **kwargs: Any) -> Any:
        x = args[0] if args else kwargs.get("input")
        mode = getattr(x, "fake_mode", None)
        if mode is None:
            return slow(*args, **kwargs)
        outs = _outputs(mode, op, *args, **kwargs)
        if torch.is_grad_enabled() and any(getattr(t, "requires_grad", False)
                                           for t in [x, *args[2]]):
            for t in outs:  # as autograd marks them (fresh leaves: no graph to keep)
                t.requires_grad_(True)
        return outs
    return kernel


@contextlib.contextmanager
def recurrent_shape_rules() -> Iterator[None]:
    """While the block runs, the recurrent ops' outputs on fake tensors come from their shapes
    instead of their decomposition run step by step; nothing else changes. Two places run that
    decomposition: FakeTensorMode (it has no rule for these ops) and, under torch.export's
    Python dispatcher, the ops' own Autograd kernels."""
    try:
        from torch._C import DispatchKey
        from torch._decomp import meta_table
        from torch._subclasses import fake_impls
        table = fake_impls.op_implementations_dict
    except (ImportError, AttributeError):  # another torch: the slow path gives the same shapes
        yield
        return
    added, replaced = [], []
    for name in _OPS:
        op = getattr(torch.ops.aten, name).input
        if op not in table and op not in meta_table:
            # in meta_table, FakeTensorMode skips the decomposition and asks the rule table
            meta_table[op] = _outputs
            table[op] = _outputs
            added.append(op)
        kernels = getattr(op, "py_kernels", {})
        for key in (DispatchKey.Autograd, DispatchKey.CompositeImplicitAutograd):
            if key in kernels:
                replaced.append((op, key, kernels[key]))
                kernels[key] = _on_fake(op, kernels[key])
        getattr(op, "_dispatch_cache", {}).clear()
    try:
        yield
    finally:
        for op, key, slow in replaced:
            op.py_kernels[key] = slow
        for op in added:
            table.pop(op, None)
            meta_table.pop(op, None)
        for name in _OPS:
            getattr(getattr(torch.ops.aten, name).input, "_dispatch_cache", {}).clear()
