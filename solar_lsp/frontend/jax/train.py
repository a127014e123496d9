"""A JAX / Flax entry's training step: ``jax.value_and_grad`` of its loss, traced and lowered
(docs/training.md, "JAX").

The step is ``loss, grads = jax.value_and_grad(loss_fn)(trainable, ...)`` with ``loss_fn`` the
mean (or sum) of the entry's output, traced with ``jax.make_jaxpr`` on ShapeDtypeStructs like
the forward (``trace.py``). Its jaxpr's invars are the parameters (trainable first), then the
inputs; its outputs are the loss, then one gradient per trainable parameter. The existing
lowering and golden run walk it unchanged: a :class:`JaxTrainTraced` *is* a
:class:`~.trace.JaxTraced`.

Which arguments are trained: a Flax ``linen`` module's ``variables["params"]`` leaves, an
``nnx`` module's ``nnx.Param`` variables (batch statistics and other collections are read,
never differentiated); for a plain function, the arguments ``--params`` or the pragma's
``params=(...)`` name, else every floating-point argument after the first (the first is the
data). Inputs never get a gradient.

Phases: JAX tags the transposed (backward) equations' name stack ``transpose(jvp(...))`` and
keeps the traceback of the forward primitive they differentiate, so a backward op gets its
forward line from the same :class:`~.trace.LineMap`. At the top level the jaxpr lists every
primal equation before the first transposed one; everything from that one on is backward
(a custom VJP's backward rule included, whatever its name stack). Equations with no frame
in the file (the loss reduction and its seed) take the entry's own line.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solar_lsp.frontend.errors import EntryError, trace_error
from solar_lsp.frontend.jax.lower import JaxLowered, JaxLowerer, lower_with
from solar_lsp.frontend.jax.trace import JaxTraced, Key, build, trip_pragmas
from solar_lsp.ir.core import Op, Program
from solar_lsp.source.discover import Entry

LOSSES = ("mean", "sum")


@dataclass
class JaxTrainTraced(JaxTraced):
    """A traced training step: outputs are ``[loss, *grads]``; ``grad_of[k]`` is the invar
    index of the parameter whose gradient is output ``k + 1``."""

    loss: str = "mean"
    grad_of: list[int] = field(default_factory=list)


@dataclass
class JaxTrainLowered(JaxLowered):
    """A lowered training step: ``grads`` maps a trainable parameter's IR tensor to its
    gradient's IR tensor; ``loss`` is the loss tensor."""

    grads: dict[str, str] = field(default_factory=dict)
    loss: str | None = None


def _inexact(aval: Any) -> bool:
    import jax.numpy as jnp
    try:
        return bool(jnp.issubdtype(aval.dtype, jnp.inexact))
    except TypeError:  # a PRNG key's extended dtype
        return False


def _order(built: Any, chosen: list[int] | None = None) -> tuple[list[int], int, list[int]]:
    """The step's argument order as indices into the entry's flat arguments, how many of
    them are parameters, and which (positions in the new order) are trained. ``chosen``:
    the arguments a plain function trains (by default every floating-point one after the
    first)."""
    n, args = built.n_params, built.abstract
    leaves = list(range(n))
    if n:
        plain: list[int] = []
    elif chosen is not None:
        plain = sorted(chosen)
    else:  # a plain function: every floating-point argument after the first
        plain = [i for i in range(1, len(args)) if _inexact(args[i])]
    rest = [i for i in range(n, len(args)) if i not in plain]
    order = leaves + plain + rest
    trained = [k for k, i in enumerate(order[:n + len(plain)])
               if (i >= n or built.trainable[i]) and _inexact(args[i])]
    return order, n + len(plain), trained


def chosen_params(built: Any, entry: Entry, params: tuple[str, ...] | None,
                  where: str) -> list[int] | None:
    """The argument indices ``params`` names (``where``: ``--params`` or ``params=``, for the
    error), or None for the default; EntryError for a Flax module, or a name that is not a
    floating-point tensor argument."""
    if params is None:
        return None
    if built.n_params:
        raise EntryError("trace", f"{where} names the trained arguments of a plain function; "
                         f"{entry.name} is a Flax module, which trains its parameters "
                         "(docs/training.md, \"JAX\")")
    names = list(built.input_names)
    out = []
    for p in params:
        if p not in names:
            raise EntryError("trace", f"{where}: {p!r} is not a tensor argument of {entry.name} "
                             f"(tensor arguments: {', '.join(names) or 'none'})")
        i = names.index(p)
        if not _inexact(built.abstract[i]):
            raise EntryError("trace", f"{where}: {p!r} is a {built.abstract[i].dtype} tensor, "
                             "which has no gradient: only floating-point arguments can be trained")
        out.append(i)
    return out


def _reduce(outs: list[Any], loss: str) -> Any:
    """The scalar loss: the mean (or sum) of each floating-point output, added up."""
    import jax.numpy as jnp
    parts = [jnp.mean(o) if loss == "mean" else jnp.sum(o) for o in outs if _inexact(o)]
    if not parts:
        raise EntryError("trace", "the entry has no floating-point output to take a loss of")
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


def step_function(fn: Callable, order: list[int], trained: list[int], loss: str) -> Callable:
    """``step(*args_in_order) -> [loss, *grads]``: the value and gradient of the reduced
    output of ``fn`` (which takes the arguments in their original order)."""
    import jax

    def step(*xs: Any) -> list[Any]:
        def loss_fn(tr: list[Any]) -> Any:
            new = list(xs)
            for k, v in zip(trained, tr):
                new[k] = v
            orig: list[Any] = [None] * len(new)
            for k, i in enumerate(order):
                orig[i] = new[k]
            return _reduce(list(fn(*orig)), loss)
        value, grads = jax.value_and_grad(loss_fn)([xs[k] for k in trained])
        return [value, *grads]
    return step


def trace_train(module: types.ModuleType, entry: Entry, path: str, loss: str = "mean",
                params: tuple[str, ...] | None = None) -> JaxTrainTraced:
    """``make_jaxpr`` of the entry's training step on ShapeDtypeStructs (nothing allocated).
    ``params`` (``--params``) names the arguments a plain function trains, in place of its
    pragma's ``params=`` and of the default (every floating-point argument after the first)."""
    import jax
    if loss not in LOSSES:
        raise EntryError("trace", f"unknown loss {loss!r} (expected one of {', '.join(LOSSES)})")
    path = os.path.realpath(path)
    built = build(module, entry, path)
    own = getattr(entry, "params", None)
    chosen = chosen_params(built, entry, params if params is not None else own,
                           "--params" if params is not None else "params=")
    order, n_params, trained = _order(built, chosen)
    step = step_function(built.fn, order, trained, loss)
    abstract = [built.abstract[i] for i in order]
    try:
        closed = jax.make_jaxpr(step)(*abstract)
    except EntryError:
        raise
    except Exception as exc:
        raise trace_error(exc, f"jax.value_and_grad could not trace {entry.name}'s training step",
                          path) from exc
    names = list(built.param_names) + list(built.input_names)
    names = [names[i] if i < len(names) else f"arg{i}" for i in order]
    moved = {built.input_names[i - built.n_params] for i in order[built.n_params:n_params]}

    def real(seed: int) -> list[Any]:
        vals = built.real(seed)
        return [vals[i] for i in order]
    return JaxTrainTraced(entry=entry, path=path, closed=closed, n_params=n_params,
                          param_names=names[:n_params], input_names=names[n_params:],
                          input_specs=[s for s in built.specs if s.name not in moved],
                          trips=trip_pragmas(path), real_args=real, loss=loss, grad_of=trained)


class TrainLowerer(JaxLowerer):
    """The JAX lowerer with phases: ops of backward equations get ``phase="backward"``."""

    def __init__(self, traced: JaxTrainTraced, score: Callable[[Program, list[Op]], float] | None = None):
        super().__init__(traced, score)
        self.phase = "forward"
        self.first_backward = _first_backward(traced.closed.jaxpr)

    def run(self, args: list[Any]) -> list[Any]:
        closed = self.traced.closed
        consts = [self.const(c, ("const", i)) for i, c in enumerate(closed.consts)]
        return self.block(closed.jaxpr, consts, list(args), (), self.traced.entry.line, 1)

    def dispatch(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        saved = self.phase
        top = len(key) == 1 and isinstance(key[0], int)
        if is_transposed(eqn) or (top and key[0] >= self.first_backward):
            self.phase = "backward"
        try:
            return super().dispatch(eqn, ins, key, line, repeat)
        finally:
            self.phase = saved

    def add_op(self, op: Op) -> None:
        op.phase = self.phase
        super().add_op(op)


def is_transposed(eqn: Any) -> bool:
    """Whether JAX made this equation by transposing a forward one (its name stack)."""
    return "transpose(" in str(getattr(eqn.source_info, "name_stack", ""))


def _first_backward(jaxpr: Any) -> int:
    for i, eqn in enumerate(jaxpr.eqns):
        if is_transposed(eqn):
            return i
    return len(jaxpr.eqns)


def lower_train(traced: JaxTrainTraced,
                score: Callable[[Program, list[Op]], float] | None = None) -> JaxTrainLowered:
    """The IR program of a training step: forward and backward ops (``Op.phase``), the loss
    and the gradient of every trainable parameter as outputs, and the parameter→gradient map."""
    lw = TrainLowerer(traced, score)
    lw.out = JaxTrainLowered(lw.program)
    outs = lower_with(lw)
    out = lw.out
    out.loss = outs[0] if outs and isinstance(outs[0], str) else None
    invar = {key[1]: t for t, key in out.tensor_key.items() if len(key) == 2 and key[0] == "in"}
    for k, h in zip(traced.grad_of, outs[1:]):
        param = invar.get(k)
        if param is not None and isinstance(h, str):
            out.grads[param] = h
        elif param is not None:
            out.notes.append({"line": traced.entry.line, "kind": "train", "note": (
                f"the gradient of {param} is the constant {getattr(h, 'value', h)}: it has no op")})
    if not traced.grad_of:
        out.notes.append({"line": traced.entry.line, "kind": "train", "note": (
            "no trainable parameter: the step is the forward and the loss only "
            "(docs/training.md, \"JAX\")")})
    return out
