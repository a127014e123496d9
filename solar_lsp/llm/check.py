"""Check an agent's IR answer before anything uses it: parse, validate, execute, compare.

Whole entry: the golden values come from running the user's entry eagerly on the CPU (seeded
inputs, as the tracer's verifier builds them); the IR program runs op by op with numba and
its outputs are compared with the entry's. Per node: the op runs on the golden inputs of its
fx node (the Interpreter replay of :mod:`solar_lsp.verify.check_torch`) and is checked by the same
``check_op`` as tracer output. Every failure says what to fix, for the next round.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from dataclasses import dataclass, field

import numpy as np
import torch

from solar_lsp.frontend.errors import EntryError
from solar_lsp.frontend.torch.lower import dtype_name
from solar_lsp.frontend.torch.trace import build
from solar_lsp.ir.core import Op, Program, TensorType
from solar_lsp.ir.text import IRSyntaxError, parse_program
from solar_lsp.ir.validate import IRValidationError, validate_program
from solar_lsp.llm.prompt import EntryTask, NodeTask, ttype
from solar_lsp.source.discover import Entry
from solar_lsp.verify.core import SAMPLES, as_float64
from solar_lsp.verify.op_check import check_op
from solar_lsp.verify.propagate import compare_outputs, program_unit, run_ops


class GoldenError(Exception):
    """The original program could not be run to produce reference values."""


@dataclass
class Check:
    """The verdict on one answer: accepted (with its program or op), or why not."""

    ok: bool
    reason: str = ""  # what the next round is told, when not ok
    kind: str = ""  # invalid | mismatch | unverifiable
    fatal: bool = False  # no answer can pass (too large to execute): stop asking
    program: Program | None = None
    op: Op | None = None  # per node: the accepted op, renamed to its node
    detail: dict = field(default_factory=dict)


def _invalid(msg: str) -> Check:
    return Check(False, f"invalid IR: {msg}", "invalid")


def _parse(text: str) -> Program | Check:
    if not isinstance(text, str) or not text.strip():
        return _invalid("the `ir` argument is empty")
    try:
        p = parse_program(text)
        validate_program(p)
    except IRSyntaxError as exc:
        return _invalid(str(exc))
    except IRValidationError as exc:
        return _invalid(str(exc))
    return p


# ---------------------------------------------------------------------------- whole entry


@dataclass
class EntryGolden:
    """The eager run of an entry: the task it states, its inputs, params and outputs."""

    task: EntryTask
    arrays: dict[str, np.ndarray]  # inputs and params by IR name
    outputs: list[np.ndarray]
    eager_flops: int  # what torch's FlopCounterMode counted in the eager run (numpy is invisible)


def _ttype(t: torch.Tensor) -> TensorType:
    return TensorType(tuple(int(s) for s in t.shape), dtype_name(t.dtype))


def _flat_outputs(out: object) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)) and out and all(isinstance(t, torch.Tensor) for t in out):
        return list(out)
    raise GoldenError(f"the entry returns {type(out).__name__}, not a tensor or a tuple of tensors")


def _input_names(model: torch.nn.Module, entry: Entry, n: int) -> list[str]:
    if entry.inputs is not None and len(entry.inputs) == n:
        return [s.name for s in entry.inputs]
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params][:n]
    except (TypeError, ValueError):
        names = []
    if len(names) == n and len(set(names)) == n and all(s.isidentifier() for s in names):
        return names
    return [f"in{i}" for i in range(n)]


def entry_golden(module: types.ModuleType, entry: Entry, path: str, source: str, error: str,
                 budget_bytes: int) -> EntryGolden:
    """Run the entry eagerly on the CPU (seed 0) and state the task the agent gets."""
    from torch.utils.flop_counter import FlopCounterMode
    try:
        model, inputs = build(module, entry, path, device="cpu", seed=0)
    except EntryError as exc:
        raise GoldenError(f"building the entry on the CPU failed: {exc}") from exc
    need = sum(t.numel() * (t.element_size() + 8) for t in
               [*(x for x in inputs if isinstance(x, torch.Tensor)),
                *model.state_dict(keep_vars=True).values()])
    if need > budget_bytes:
        raise GoldenError(f"the eager reference run needs {need / 1e9:.1f} GB, over the "
                          f"{budget_bytes / 1e9:.1f} GB budget: analyze smaller shapes")
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as fc:
            out = model(*inputs)
    except Exception as exc:  # user code raising on real tensors
        raise GoldenError(f"running the entry eagerly failed: {type(exc).__name__}: {exc}") from exc
    outs = _flat_outputs(out)
    names = _input_names(model, entry, len(inputs))
    arrays: dict[str, np.ndarray] = {}
    tin: list[tuple[str, TensorType]] = []
    scalars: list[tuple[str, object]] = []
    for name, x in zip(names, inputs):
        if isinstance(x, torch.Tensor):
            tin.append((name, _ttype(x)))
            arrays[name] = as_float64(x)
        else:
            scalars.append((name, x))
    pnames = {n for n, _ in model.named_parameters()}
    params: list[tuple[str, str, TensorType]] = []
    for fqn, t in model.state_dict(keep_vars=True).items():
        ir_name = ("p_" if fqn in pnames else "b_") + fqn.replace(".", "_")
        params.append((ir_name, fqn, _ttype(t)))
        arrays[ir_name] = as_float64(t)
    how = (f"{entry.name}(*get_init_inputs())(*get_inputs())" if entry.kind == "model"
           else f"{entry.name}({', '.join(names)})")
    task = EntryTask(name=entry.name, path=path, source=source, error=error, inputs=tin,
                     params=params, outputs=[_ttype(t) for t in outs], scalars=scalars, call=how)
    return EntryGolden(task, arrays, [as_float64(t) for t in outs], int(fc.get_total_flops()))


def _writer(p: Program, tensor: str) -> str:
    """'op X, kernel Y' for the last writer of ``tensor``."""
    for op in reversed(p.ops):
        for k in reversed(op.kernels):
            if k.out.tensor == tensor:
                return f"op `{op.id}`, kernel `{k.name}`"
        if tensor in op.outputs:
            return f"op `{op.id}`"
    return "no op (it is never written)"


def _interface(p: Program, task: EntryTask, nout: int) -> str:
    """Why the program's inputs, params and outputs are not the entry's ('' when they are)."""
    want_in = [n for n, _ in task.inputs]
    if p.inputs != want_in:
        return f"program inputs are {p.inputs}; they must be exactly {want_in}, in this order"
    types_ = {n: t for n, t in task.inputs} | {n: t for n, _, t in task.params}
    for n in p.params:
        if n not in types_ or n in want_in:
            return f"param {n!r} is not one of the module's weights ({', '.join(types_) or 'none'})"
    for n in p.inputs + p.params:
        if p.tensors[n] != types_[n]:
            return f"{n} is declared {ttype(p.tensors[n])} but is {ttype(types_[n])}"
    if len(p.outputs) != nout:
        return f"the program has {len(p.outputs)} outputs; the entry returns {nout}"
    for i, (o, t) in enumerate(zip(p.outputs, task.outputs)):
        if p.tensors[o] != t:
            return f"output {i} ({o}) is declared {ttype(p.tensors[o])}; the entry returns {ttype(t)}"
    avail = set(p.inputs) | set(p.params)
    for op in p.ops:
        for t in op.inputs:
            if t not in avail:
                return (f"op `{op.id}` reads {t!r}, which is neither an input, a param nor "
                        "written by an earlier op")
        avail |= set(op.outputs) | {k.out.tensor for k in op.kernels}
    for o in p.outputs:
        if o not in avail:
            return f"output {o!r} is never written"
    return ""


def check_entry(text: str, golden: EntryGolden, limit_points: float,
                path_lines: int | None = None) -> Check:
    """A whole-entry answer: run it op by op on the golden inputs, compare its outputs."""
    parsed = _parse(text)
    if isinstance(parsed, Check):
        return parsed
    p = parsed
    why = _interface(p, golden.task, len(golden.outputs))
    if why:
        return _invalid(why)
    points = sum(k.points * max(op.repeat, 1) for op in p.ops for k in op.kernels)
    if points > limit_points:
        return Check(False, f"executing {points:.2g} loop points is over the verification limit "
                            f"({limit_points:.2g}); analyze smaller shapes", "unverifiable",
                     fatal=True)
    arrays = {n: np.array(golden.arrays[n], dtype=np.float64) for n in p.inputs + p.params}
    # the per-op rule of verify/op_check.py, its error bounds carried from op to op
    errors: dict[str, np.ndarray] = {}
    unit = program_unit(p, p.ops)
    for op in p.ops:
        try:
            run_ops(p, [op], arrays, errors, unit)
        except Exception as exc:
            return Check(False, f"executing op `{op.id}` failed: {type(exc).__name__}: {exc}",
                         "invalid")
    for i, (o, ref) in enumerate(zip(p.outputs, golden.outputs)):
        got = np.asarray(arrays[o], dtype=np.float64).reshape(ref.shape)
        w = compare_outputs(p, [o], [got], [ref], [errors.get(o)], unit)
        if w is not None and w["bad"]:
            err = np.abs(got - ref)
            msg = (f"mismatch: output {i} `{o}` (written by {_writer(p, o)}) at {w['index']}: "
                   f"expected {w['expected']:.6g}, got {w['got']:.6g}; max |error| over the "
                   f"output {float(np.nanmax(err)) if err.size else 0.0:.3g}")
            return Check(False, msg, "mismatch", detail={k: v for k, v in w.items() if k != "bad"})
    _clamp_lines(p, path_lines)
    return Check(True, program=p, detail={"outputs": len(p.outputs), "points": points})


def _clamp_lines(p: Program, nlines: int | None) -> None:
    """An op's line is the agent's claim: one outside the file is dropped."""
    for op in p.ops:
        if op.line is not None and (op.line < 1 or (nlines is not None and op.line > nlines)):
            op.line = None


# ---------------------------------------------------------------------------- per node


def check_node(text: str, task: NodeTask, program: Program, golden: dict | None) -> Check:
    """The answer for one op, checked on its node's golden values by ``verify.check_op``.

    ``golden=None`` checks only the form (a cached answer for an unchanged source; the
    entry's own verification still runs it)."""
    parsed = _parse(text)
    if isinstance(parsed, Check):
        return parsed
    p = parsed
    if len(p.ops) != 1:
        return _invalid(f"the program has {len(p.ops)} ops; write exactly one @op for {task.target}")
    op = p.ops[0]
    want_in = {n: t for n, t in task.inputs}
    want_out = [n for n, _ in task.outputs]
    if op.outputs != want_out:
        return _invalid(f"the op returns {op.outputs}; it must return {want_out}")
    for t in op.inputs:
        if t not in want_in:
            return _invalid(f"the op reads {t!r}; its inputs are {list(want_in)}")
    for n, t in [*task.inputs, *task.outputs]:
        if n in p.tensors and p.tensors[n] != t:
            return _invalid(f"{n} is declared {ttype(p.tensors[n])} but is {ttype(t)}")
    temps = [n for n in p.tensors if n not in want_in and n not in want_out]
    for n in temps:
        if not n.startswith(task.temp_prefix) or n in program.tensors:
            return _invalid(f"temporary tensor {n!r} must be named with the prefix "
                            f"{task.temp_prefix!r} (and not clash with the program's tensors)")
    op = dataclasses.replace(op, id=task.node, target=task.target, line=task.line, note="llm")
    tensors = dict(program.tensors)
    tensors.update({n: p.tensors[n] for n in temps})
    merged = dataclasses.replace(program, tensors=tensors, ops=[op],
                                 views={**program.views, **p.views},
                                 unique={**program.unique, **p.unique})
    try:
        validate_program(merged)
    except IRValidationError as exc:
        return _invalid(str(exc))
    if golden is None:
        return Check(True, program=p, op=op)
    res = check_op(merged, op, golden, np.random.default_rng(0), SAMPLES)
    if res.status == "verified":
        return Check(True, program=p, op=op)
    if res.status == "mismatch":
        kern = ", ".join(f"`{k.name}`" for k in op.kernels) or "no kernels"
        return Check(False, f"mismatch in op `{op.id}` (kernels {kern}): {res.detail}",
                     "mismatch", detail=res.worst or {})
    return Check(False, f"could not be checked: {res.detail}", "unverifiable",
                 fatal=not res.detail.startswith("executing the IR failed"))
