"""The golden run as a stream (docs/sol-model.md, Verification): each op is checked as soon as
the framework has produced every tensor it reads and writes, and each framework tensor is let
go after its last use (its last framework consumer, and the last op checked against it). The
memory the run needs is then the peak of what is live at once, not the sum over the program.

Framework-neutral: the schedule is built from the framework's step order (the exported
graph's node order for torch) and the IR's tensor -> step map; the estimate from the IR's own
op order (which follows the framework's).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from dataclasses import dataclass, field

from solar_lsp.ir import execute
from solar_lsp.ir.core import Op, Program
from solar_lsp.source.pragma import dtype_size
from solar_lsp.verify.core import COMPARE_CHUNK, lazy_weights, native_input
from solar_lsp.verify.op_check import check_work, sampled_last
from solar_lsp.verify.parts import parts_by_owner

# Working set of checking one op, in float64 elements per element of a tensor it touches:
# an input is copied once (a large float32 one is not: ``_input_copy``); an output or
# op-internal buffer holds the IR's values, their error bounds and, while its kernel runs,
# their magnitudes; a whole-tensor comparison works through COMPARE_CHUNK elements at a time
# with about COMPARE_TEMPS temporaries (core.compare_whole; measured: a 3.5 M-element tanh
# took 4.1 float64 copies per element, its input's copy included). An output checked at
# sampled points is touched at those points only (its zeroed pages never become resident):
# counted once, to be safe.
INPUT_COPIES = 1
OUTPUT_COPIES = 3
COMPARE_TEMPS = 10
SAMPLED_COPIES = 1
# A recurrence checked whole (verify/parts.py: a recurrent layer's parts, a Python loop's body
# replayed T times) holds every buffer its parts write, values and error bounds, at once.
PART_COPIES = 2
# A JAX loop replay's compared tensor (verify/check_jax.py, propagate.compare_outputs): compared
# whole, the golden value and the comparison's temporaries beside the values and bounds.
LOOP_COMPARED_COPIES = 6

# The second pass (issue 16 item 5; docs/sol-model.md, "Scaled inputs"): the entry's float
# inputs scaled, where the golden run is cheap (its peak under 1/SCALED_SHARE of the budget);
# inference only (a loss's targets would be scaled too). Both verifiers run it through
# ``scaled_passes`` (this module imports no framework).
SCALES = (1e-3, 1e2)
SCALED_SHARE = 8


def plan_passes(ops: list[Op], samples: int, scaled: bool) -> None:
    """Tell the kernel executor (ir/execute.py: interpreted or numba) how many loop iterations
    checking ``ops`` will run: one golden run, and one per scale when ``scaled`` ones follow."""
    execute.plan((1 + (len(SCALES) if scaled else 0)) * check_work(ops, samples))


def scaled_passes(run: Callable[[float], list | str], detail: str) -> tuple[str, str, dict]:
    """The second pass at each of ``SCALES``: ``run(scale)`` is one golden run's op checks
    (or why the user's code refused such inputs). The entry's status, detail and the
    ``scaled_inputs`` JSON."""
    done: list[str] = []
    for scale in SCALES:
        checks = run(scale)
        if isinstance(checks, str):  # the user's code may refuse such inputs: nothing to say
            return "verified", detail, {"scaled_inputs": {"scales": done, "skipped": f"x{scale:g}: {checks}"}}
        bad = next((c for c in checks if c.status == "mismatch"), None)
        if bad is not None:
            return "mismatch", f"at inputs x{scale:g}: {bad.op} (line {bad.line}): {bad.detail}", {
                "scaled_inputs": {"scales": done, "mismatch": f"x{scale:g}"}}
        done.append(f"x{scale:g}")
    return "verified", f"{detail}; scaled inputs: verified at {', '.join(done)}", {
        "scaled_inputs": {"scales": done}}


@dataclass
class Schedule:
    """When to check each op and when to let each golden tensor go, by framework step."""

    ready: dict[str, list[int]] = field(default_factory=dict)  # step -> indices of ops to check
    free: dict[str, list[str]] = field(default_factory=dict)  # step -> tensors to drop after it
    at_end: list[int] = field(default_factory=list)  # ops some tensor of which no step produces


def schedule(ops: list[Op], step_of_tensor: dict[str, str], steps: list[str]) -> Schedule:
    """The schedule of ``ops`` over the framework's ``steps`` (in run order), where
    ``step_of_tensor`` names the step producing each IR tensor."""
    pos = {s: i for i, s in enumerate(steps)}
    end = len(steps)

    def at(t: str) -> int:
        s = step_of_tensor.get(t)
        return pos.get(s, end) if s is not None else end

    out = Schedule()
    last: dict[str, int] = {t: at(t) for t in step_of_tensor}
    for i, op in enumerate(ops):
        names = op.inputs + op.outputs
        when = max((at(t) for t in names), default=0)
        if when >= end:
            out.at_end.append(i)
        else:
            out.ready.setdefault(steps[when], []).append(i)
        for t in names:
            last[t] = max(last.get(t, -1), when)
    for t, i in last.items():
        if i < end:
            out.free.setdefault(steps[i], []).append(t)
    return out


def _bytes(p: Program, t: str, per_element: int | None = None) -> int:
    tt = p.tensors.get(t)
    if tt is None:
        return 0
    return tt.numel * (dtype_size(tt.dtype) if per_element is None else per_element)


def peak_bytes(p: Program, ops: list[Op] | None = None, held: set[str] | frozenset = frozenset()) -> int:
    """Memory a streamed golden run needs at its peak: the framework's tensors live at each
    op (inputs and parameters throughout, a large weight from the first op reading it; a
    computed tensor from the op producing it to the last op reading it, or to the end when it
    is ``held``: what JAX's loop replays read at the run's end) plus the float64 working set
    of checking that op."""
    ops = p.ops if ops is None else ops
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    lazy = lazy_weights(p)  # drawn at the first op reading them (verify/core.LAZY_BYTES)
    for i, op in enumerate(ops):
        for t in op.outputs:
            first.setdefault(t, i)
        for t in op.inputs:
            if t in lazy:
                first.setdefault(t, i)
        for t in op.inputs + op.outputs:
            last[t] = len(ops) - 1 if t in held else i
    always = sum(_bytes(p, t) for t in p.tensors if t not in first and t not in p.views)
    delta = [0] * (len(ops) + 1)
    for t, i in first.items():
        if t not in p.views:
            delta[i] += _bytes(p, t)
            delta[last[t] + 1] -= _bytes(p, t)
    parts = parts_by_owner(p)
    peak, live = always, always
    for i, op in enumerate(ops):
        live += delta[i]
        outs = set(op.outputs) | {k.out.tensor for k in op.kernels}
        sampled = {op.kernels[-1].out.tensor} if op.kernels and sampled_last(p, op) else set()
        work = sum(_input_copy(p, op, t) for t in set(op.inputs) - outs)
        work += sum(_bytes(p, t, 8 * (SAMPLED_COPIES if t in sampled else OUTPUT_COPIES)) for t in outs)
        work += max((8 * COMPARE_TEMPS * min(p.tensors[t].numel, COMPARE_CHUNK)
                     for t in outs - sampled if t in p.tensors), default=0)
        peak = max(peak, live + work + parts_work(p, op, parts.get(op.id, []), outs))
    return peak


def _input_copy(p: Program, op: Op, t: str) -> int:
    """Bytes of the copy checking ``op`` makes of its input ``t``: float64, or none for a
    large float32 input a compute op's kernels read as it is (verify/core.native_input; a
    view's values may need a float32 copy to be contiguous)."""
    tt = p.tensors.get(t)
    if tt is not None and op.kind == "compute" and native_input(tt.dtype, tt.numel):
        return _bytes(p, t) if t in p.views else 0
    return _bytes(p, t, 8 * INPUT_COPIES)


def parts_work(p: Program, op: Op, parts: list[Op], counted: set[str]) -> int:
    """Bytes of the float64 buffers checking ``op`` whole adds for its ``parts`` (a recurrent
    layer's projections and loop bodies, a Python loop's body and stacked outputs), beyond
    the ``counted`` ones: each written tensor's values and error bounds; a loop's compared
    tensors (read as the owner's inputs, one copy counted) as outputs compared whole."""
    made = {t for q in parts for t in q.outputs + [k.out.tensor for k in q.kernels]}
    compared: set[str] = set()
    if op.call and op.call[0] == "loop":  # the stacked outputs the replay fills
        made |= {s[1] for s in op.call[5]}
        compared = set(op.call[6])
    out = sum(_bytes(p, t, 8 * PART_COPIES) for t in made - counted - compared)
    return out + sum(_bytes(p, t, 8 * LOOP_COMPARED_COPIES) for t in compared)


_LIBC: list = []
# bytes of checked ops' tensors between two trims: malloc_trim walks the heap (about 0.25 ms),
# and a 256-step loop's small per-step checks would call it 550 times
TRIM_BYTES = 8 << 20
_since_trim = [0]


def release_memory(p: Program | None = None, ops: list[Op] = ()) -> None:
    """Hand the heap's freed pages back to the system (glibc's ``malloc_trim``): tensors of a
    few MB are allocated on the heap, and without it their freed space stays resident. With
    ``p``, only once the float64 values of the ``ops`` just checked add up to ``TRIM_BYTES``
    since the last trim. A no-op where there is no glibc."""
    if p is not None:
        _since_trim[0] += sum(_bytes(p, t, 8) for op in ops for t in op.inputs + op.outputs)
        if _since_trim[0] < TRIM_BYTES:
            return
    _since_trim[0] = 0
    if not _LIBC:
        name = ctypes.util.find_library("c")
        try:
            _LIBC.append(ctypes.CDLL(name).malloc_trim if name else None)
        except (OSError, AttributeError):
            _LIBC.append(None)
    if _LIBC[0] is not None:
        _LIBC[0](0)
