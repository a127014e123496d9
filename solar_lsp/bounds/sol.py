"""Speed-of-Light times from the einsum graph (docs/architecture.md §6): unfused, fused, inverse roofline.

Pure functions of (program, graph, chip, policy). Work on the same physical unit adds up;
different units (matrix, vector, special-function) and DRAM are assumed to overlap
perfectly, which keeps every time a lower bound.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import networkx as nx

from solar_lsp.bounds.einsum_graph import Counts, build_graph, call_counts, tensor_bytes
from solar_lsp.hardware.chips import Chip, canonical_dtype
from solar_lsp.ir import calls_index
from solar_lsp.ir.core import Kernel, Op, Program
from solar_lsp.source.pragma import dtype_size

CONV_TARGETS = ("convolution", "conv1d", "conv2d", "conv3d", "conv_transpose", "conv_general_dilated")
#: Fused attention ops. Every CUDA kernel torch dispatches them to (flash, memory-efficient,
#: cuDNN) runs the two contractions on tensor cores; for fp32 inputs the memory-efficient kernel
#: uses TF32 MMAs whatever ``allow_tf32`` says (docs/sol-model.md "Peaks").
ATTENTION_TARGETS = ("scaled_dot_product", "flash_attention", "efficient_attention", "cudnn_attention")


@dataclass(frozen=True)
class Policy:
    """Which peak a dtype gets: PyTorch's CUDA defaults (matmul fp32 without TF32, cuDNN
    convolutions with TF32)."""

    tf32_matmul: bool = False
    tf32_conv: bool = True


@dataclass
class UnitWork:
    """Work per (unit, dtype) — the same unit at two dtypes runs at two peaks."""

    work: dict[tuple[str, str], float] = field(default_factory=dict)

    def add(self, unit: str, dtype: str, amount: float) -> None:
        if amount:
            self.work[(unit, dtype)] = self.work.get((unit, dtype), 0.0) + amount

    def __iadd__(self, other: UnitWork) -> UnitWork:
        for (u, d), w in other.work.items():
            self.add(u, d, w)
        return self

    def times(self, chip: Chip) -> dict[str, float]:
        """Seconds per physical unit on ``chip``."""
        out: dict[str, float] = {}
        for (unit, dtype), w in self.work.items():
            peak, _ = unit_peak(chip, unit, dtype)
            out[unit] = out.get(unit, 0.0) + w / peak
        return out


def unit_peak(chip: Chip, unit: str, dtype: str) -> tuple[float, str]:
    """The rate work on (``unit``, ``dtype``) runs at on ``chip`` and how it was found
    (``Chip.peak_with_source``): never a slower figure than the real one. Matrix work on a chip
    without a matrix path for the type runs on the vector unit; no figure at all: infinity
    (the work costs no time), which the report notes."""
    if unit == "sfu":
        p, how = chip.peak_with_source("sfu", "fp32")
    elif unit == "matrix" and chip.lacks("matrix", dtype):
        p, how = chip.peak_with_source("matrix", dtype)
        v, vhow = chip.peak_with_source("vector", dtype)
        if v is not None and (p is None or v > p):
            p, how = v, f"no matrix path for {dtype}: priced on the vector unit ({vhow})"
    else:
        p, how = chip.peak_with_source(unit, dtype)
    return (p or float("inf")), how


def kernel_work(k: Kernel, p: Program, op: Op, counts: Counts, policy: Policy) -> UnitWork:
    """Work per (unit, dtype) of a kernel's counts; the policy picks TF32 for fp32 contractions,
    fused attention always takes it (ATTENTION_TARGETS)."""
    uw = UnitWork()
    if k.unit == "matrix":
        dt = _widest([canonical_dtype(p.tensors[t].dtype) or "fp32" for t in k.inputs()])
        is_conv = any(s in op.target for s in CONV_TARGETS)
        if dt == "fp32":
            attention = any(s in op.target for s in ATTENTION_TARGETS)
            if attention or (is_conv and policy.tf32_conv) or (not is_conv and policy.tf32_matmul):
                uw.add("matrix", "tf32", counts.tensor_flops)
            else:
                uw.add("vector", "fp32", counts.tensor_flops)
        else:
            uw.add("matrix", dt, counts.tensor_flops)
    else:
        dt = canonical_dtype(p.tensors[k.out.tensor].dtype) or "fp32"
        uw.add("vector", dt, counts.vector_flops)
        uw.add("sfu", "fp32", counts.sfu_ops)
    return uw


_ORDER = ["fp4", "fp8", "int8", "fp16", "bf16", "tf32", "fp32", "fp64"]


def _widest(dts: list[str]) -> str:
    """The type a contraction of ``dts`` is priced at: the widest. Mixed operands (an fp8 or
    int8 weight times bf16 activations) run after the narrow one is upcast, at the wide type's
    rate; the narrow type's faster rate would need the wide operand rounded down to it, which
    computes something else. So the wide rate is the fastest a correct kernel reaches."""
    ranked = [d for d in dts if d in _ORDER]
    return max(ranked, key=_ORDER.index) if ranked else "fp32"


def peak_notes(costs: list[OpCost], chip: Chip) -> list[tuple[int | None, str]]:
    """Each (unit, dtype) the costs use whose figure ``chip`` does not list as is: the first
    line that uses it and how it was priced instead (docs/sol-model.md "Peaks")."""
    first: dict[tuple[str, str], int | None] = {}
    for c in costs:
        for key in c.work.work:
            first.setdefault(key, c.op.line)
    out = []
    for (unit, dtype), line in first.items():
        _, how = unit_peak(chip, unit, dtype)
        if how != f"{unit}.{dtype}":
            out.append((line, how))
    return out


@dataclass
class OpCost:
    """One op's counts, unit work and unfused DRAM bytes: the unit every SOL time is built from."""

    op: Op
    counts: Counts
    work: UnitWork
    bytes: int
    einsums: list[str]
    shapes: list[list[int]]
    dtype: str

    def time(self, chip: Chip) -> tuple[float, str]:
        """Roofline time of this op alone: max(compute per unit, bytes / bandwidth)."""
        ts = self.work.times(chip)
        t_mem = self.bytes / chip.dram_bytes_per_s
        t_comp = max(ts.values(), default=0.0)
        if t_comp >= t_mem and t_comp > 0:
            return t_comp, "compute"
        return t_mem, "memory"


def op_bytes(p: Program, op: Op) -> int:
    """DRAM bytes of one framework op run on its own: its inputs once plus its outputs."""
    if op.kind in ("view", "alloc"):
        return 0
    outs = sum(tensor_bytes(p, t) for t in op.outputs)
    if op.kind == "gather":  # a gather reads its table only where it gathers (ir/calls_index)
        ins = 0
        for t in op.inputs:
            r = gather_reads(p, op, t)
            ins += tensor_bytes(p, t) if r is None else min(r * dtype_size(p.tensors[t].dtype),
                                                            tensor_bytes(p, t))
        return ins + outs
    ins = sum(tensor_bytes(p, t) for t in op.inputs)
    return ins + outs


def gather_reads(p: Program, op: Op, t: str) -> int | None:
    """Elements a composition step (a gather, an index) must read of its input ``t`` (None:
    all of it)."""
    if not op.call or t not in op.inputs:
        return None
    reads = calls_index.input_reads(op.call, [p.tensors[i].shape for i in op.inputs],
                                    [p.tensors[o].shape for o in op.outputs])
    return reads[op.inputs.index(t)]


def op_costs(p: Program, g: nx.MultiDiGraph, policy: Policy) -> list[OpCost]:
    """The cost of every op of ``p``, in program order, from the einsum graph ``g``."""
    by_op: dict[str, list[dict]] = {}
    for _, d in g.nodes(data=True):
        if d.get("kind") == "einsum":
            by_op.setdefault(d["op"], []).append(d)
    costs = []
    for op in p.ops:
        counts = Counts()
        work = UnitWork()
        einsums = []
        for d in by_op.get(op.id, []):
            counts = counts + d["counts"]
            work += kernel_work(d["kernel"], p, op, d["counts"], policy)
            einsums.append(d["einsum"])
        if op.kind == "gather":  # selection comparisons, scatter combines (ir/calls_index)
            cc = call_counts(p, op).times(op.repeat)
            dt = canonical_dtype(p.tensors[op.inputs[0]].dtype) if op.inputs else None
            counts = counts + cc
            work.add("vector", dt or "fp32", cc.vector_flops)
        shapes = [list(p.tensors[t].shape) for t in op.inputs + op.outputs]
        dtype = p.tensors[op.outputs[0]].dtype if op.outputs else ""
        costs.append(OpCost(op, counts, work, op_bytes(p, op) * op.repeat, einsums, shapes, dtype))
    return _fold_parts(costs)


def part_of(op: Op) -> str | None:
    """The op that ``op`` is a part of (``call = ("part", owner, ...)``): one framework op the
    frontend emitted as several, a loop body among them (an RNN layer's steps), which the
    framework still launches as one call; None for an op of its own."""
    c = op.call
    return c[1] if op.kind == "compute" and c and c[0] == "part" else None


def parts_by_owner(p: Program) -> dict[str, list[Op]]:
    """Each owner op's parts (:func:`part_of`), in program order."""
    out: dict[str, list[Op]] = {}
    for op in p.ops:
        owner = part_of(op)
        if owner is not None:
            out.setdefault(owner, []).append(op)
    return out


def _fold_parts(costs: list[OpCost]) -> list[OpCost]:
    """Each part's counts, work and bytes added to its owner's cost (which follows its parts):
    the unfused time prices the framework op as one launch."""
    pending: dict[str, list[OpCost]] = {}
    out = []
    for c in costs:
        owner = part_of(c.op)
        if owner is not None:
            pending.setdefault(owner, []).append(c)
            continue
        for part in pending.pop(c.op.id, []):
            c.counts = c.counts + part.counts
            c.work += part.work
            c.bytes += part.bytes
            c.einsums = part.einsums + c.einsums
        out.append(c)
    return out + [c for parts in pending.values() for c in parts]


def boundary_bytes(p: Program) -> int:
    """Fused traffic: graph inputs, weights and outputs each once (union of regions read)."""
    return sum(boundary_split(p))


def boundary_split(p: Program) -> tuple[int, int]:
    """The fused traffic as (bytes read of inputs and weights, bytes written of outputs). A
    training step fuses within each phase only (docs/training.md): the sums over its phases of
    :func:`phase_boundary_split`, so the activations the backward reads are written and read."""
    if all(op.phase == "forward" for op in p.ops):
        return _one_kernel_split(p)
    parts = phase_boundary_split(p).values()
    return sum(r for r, _ in parts), sum(w for _, w in parts)


PHASES = ("forward", "backward", "optimizer")


def phase_boundary_split(p: Program) -> dict[str, tuple[int, int]]:
    """Fused traffic (reads, writes) of each phase of ``p`` run as one kernel: what the phase
    reads that it does not produce (inputs, weights, tensors of the other phases) and what it
    writes that another phase reads or the program returns, each once. Fusion never crosses a
    phase: the forward writes the activations the backward reads back, the backward writes the
    gradients the optimizer reads."""
    made: dict[str, str] = {}
    reads: dict[str, list[str]] = {}
    for op in p.ops:
        if op.kind == "view":
            continue
        for t in op.outputs + [k.out.tensor for k in op.kernels]:
            made.setdefault(p.base(t), op.phase)
        reads.setdefault(op.phase, [])
        reads[op.phase] += [p.base(t) for t in op.inputs]
    returned = {p.base(t) for t in p.outputs}
    read_by = {ph: set(r) for ph, r in reads.items()}
    out = {}
    for ph in [x for x in PHASES if x in reads] + sorted(set(reads) - set(PHASES)):
        elsewhere = set().union(*(r for q, r in read_by.items() if q != ph))
        sub = copy.copy(p)
        sub.ops = [op for op in p.ops if op.phase == ph]
        sub.inputs = list(dict.fromkeys(b for b in reads[ph] if made.get(b) != ph))
        sub.params = []
        sub.outputs = [b for b, where in made.items()
                       if where == ph and (b in returned or b in elsewhere)]
        out[ph] = _one_kernel_split(sub)
    return out


def _one_kernel_split(p: Program) -> tuple[int, int]:
    readers: dict[str, list[tuple[Op, str]]] = {}
    for op in p.ops:
        if op.kind == "view":
            continue
        for t in op.inputs:
            readers.setdefault(p.base(t), []).append((op, t))
    reads = 0
    for t in p.inputs + p.params:
        uses = readers.get(t, [])
        if not uses:
            continue
        full = tensor_bytes(p, t)
        partial = 0
        whole = False
        for op, via in uses:
            r = gather_reads(p, op, via) if op.kind == "gather" else None
            if r is not None:  # a loop body's op reads its part every iteration
                partial += r * dtype_size(p.tensors[t].dtype) * op.repeat
            elif via != t and p.unique_numel(via) < p.tensors[t].numel:
                partial += tensor_bytes(p, via) * op.repeat
            else:
                whole = True
        reads += full if whole else min(full, partial)
    written = set()
    writes = 0
    for t in p.outputs:
        b = p.base(t)
        if b in p.inputs or b in p.params or b in written:
            continue
        written.add(b)
        writes += tensor_bytes(p, b)
    return reads, writes


def warm_l2_bytes(p: Program, chip: Chip) -> int:
    """Bytes of the fused traffic that a warm L2 may serve without DRAM (docs/sol-model.md
    "Warm L2"), 0 unless ``chip.warm_l2``: runs back to back with no flush between them start
    with at most the L2's capacity of data in it, so at most ``l2_bytes`` of the input reads
    hit, and end with at most ``l2_bytes`` of written outputs not yet written back."""
    if not chip.warm_l2:
        return 0
    reads, writes = boundary_split(p)
    return min(reads, chip.l2_bytes) + min(writes, chip.l2_bytes)


def memory_seconds(p: Program, chip: Chip, nbytes: int) -> float:
    """Seconds the fused traffic ``nbytes`` of ``p`` takes at least: ``nbytes / β_DRAM``, or on
    a warm-L2 chip the larger of the DRAM bytes a warm L2 cannot serve over the DRAM bandwidth
    and the input reads over the L2 bandwidth (every read passes through L2)."""
    if not chip.warm_l2:
        return nbytes / chip.dram_bytes_per_s
    reads, _ = boundary_split(p)
    t_dram = max(0, nbytes - warm_l2_bytes(p, chip)) / chip.dram_bytes_per_s
    t_l2 = reads / chip.l2_bytes_per_s if chip.l2_bytes_per_s else 0.0
    return max(t_dram, t_l2)


@dataclass
class Fidelity:
    """A SOL time at one fidelity (unfused, fused), what binds it and the bytes it moves."""

    t_s: float
    bound: str
    bytes: int
    unit_times: dict[str, float]


def unfused(costs: list[OpCost], chip: Chip) -> Fidelity:
    """SOL with every op its own kernel: the sum of each op's roofline time."""
    t = 0.0
    t_mem = 0.0
    t_comp = 0.0
    units: dict[str, float] = {}
    for c in costs:
        tt, _ = c.time(chip)
        t += tt
        t_mem += c.bytes / chip.dram_bytes_per_s
        ut = c.work.times(chip)
        t_comp += max(ut.values(), default=0.0)
        for u, v in ut.items():
            units[u] = units.get(u, 0.0) + v
    return Fidelity(t, "compute" if t_comp >= t_mem and t_comp > 0 else "memory",
                    sum(c.bytes for c in costs), units)


def fused(costs: list[OpCost], p: Program, chip: Chip) -> Fidelity:
    """SOL with the whole program one kernel: all work against the boundary bytes alone (on a
    warm-L2 chip, the part a warm L2 serves priced at the L2 bandwidth: ``memory_seconds``)."""
    work = UnitWork()
    for c in costs:
        work += c.work
    units = work.times(chip)
    b = boundary_bytes(p)
    t_mem = memory_seconds(p, chip, b)
    t_comp = max(units.values(), default=0.0)
    return Fidelity(max(t_mem, t_comp), "compute" if t_comp >= t_mem and t_comp > 0 else "memory", b, units)


def total_work(costs: list[OpCost]) -> UnitWork:
    """The work of all ops added up, per unit and dtype."""
    work = UnitWork()
    for c in costs:
        work += c.work
    return work


def inverse(work: UnitWork, flops: int, nbytes: int, target_s: float, chips: list[Chip]) -> dict:
    """What a target latency needs: FLOP/s and bytes/s, and each chip's shortfall factor
    (its time for the component / the target; above 1 means the chip is too slow)."""
    out = {"flops_per_s": flops / target_s, "bytes_per_s": nbytes / target_s, "shortfall": {}}
    for chip in chips:
        t_comp = max(work.times(chip).values(), default=0.0)
        out["shortfall"][chip.name] = {
            "compute": t_comp / target_s,
            "bandwidth": nbytes / chip.dram_bytes_per_s / target_s,
        }
    return out


def unfused_seconds(p: Program, ops: list[Op], chip: Chip, policy: Policy | None = None) -> float:
    """Unfused SOL seconds of a subset ``ops`` of ``p`` on ``chip`` (scores a JAX cond branch)."""
    sub = copy.copy(p)
    sub.ops = list(ops)
    costs = op_costs(sub, build_graph(sub), policy or Policy(tf32_matmul=True, tf32_conv=True))
    return sum(c.time(chip)[0] for c in costs)
