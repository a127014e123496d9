"""What every training step shares once a frontend has traced its forward and backward
(docs/training.md): the optimizer update appended to the program, the activation memory kept
for the backward, and the totals of each phase.

The frontends (``frontend/torch/train.py``, ``frontend/jax/train.py``) produce one IR program
whose forward ops have phase ``"forward"`` and whose backward ops have phase ``"backward"``;
:func:`finish_train_program` appends the ``"optimizer"`` ops.
"""

from __future__ import annotations

from solar_lsp.bounds.einsum_graph import Counts, tensor_bytes
from solar_lsp.bounds.sol import PHASES, OpCost, UnitWork, phase_boundary_split, unfused
from solar_lsp.frontend.optimizer import adamw_ops, sgd_ops
from solar_lsp.hardware.chips import Chip
from solar_lsp.ir.core import Op, Program, loads

__all__ = ["PHASES", "activation_bytes", "finish_train_program", "first_forward_lines",
           "is_train_program", "phase_totals", "saved_tensors", "warm_l2_shares"]
# attribute :func:`finish_train_program` sets on a program: the report is a training step's
TRAIN_MARK = "train_step"


def finish_train_program(program: Program, grads: dict[str, str], config) -> None:
    """Append the update of every trainable parameter (``grads``: parameter tensor → gradient
    tensor) for ``config.optimizer`` ("adamw", "sgd"; "none" appends nothing). Each update's
    line is the first forward line that reads its parameter."""
    opt = getattr(config, "optimizer", "adamw")
    if opt not in ("adamw", "sgd", "none"):
        raise ValueError(f"unknown optimizer {opt!r}: expected adamw, sgd or none")
    setattr(program, TRAIN_MARK, True)
    if opt == "none":
        return
    lines = first_forward_lines(program)
    for param, grad in grads.items():
        if opt == "adamw":
            adamw_ops(program, param, grad, lines.get(param))
        else:
            sgd_ops(program, param, grad, lines.get(param))


def is_train_program(program: Program) -> bool:
    """A training step: finished by :func:`finish_train_program` or with non-forward ops."""
    return bool(getattr(program, TRAIN_MARK, False)) or any(op.phase != "forward" for op in program.ops)


def _reads(op: Op) -> list[str]:
    names = list(op.inputs)
    for k in op.kernels:
        names += [ld.tensor for ld in loads(k.expr)]
    return names


def first_forward_lines(program: Program) -> dict[str, int | None]:
    """Each parameter's first forward line that reads it (through views)."""
    out: dict[str, int | None] = {}
    params = set(program.params)
    for op in program.ops:
        if op.phase != "forward" or op.line is None:
            continue
        for t in _reads(op):
            b = program.base(t)
            if b in params and b not in out:
                out[b] = op.line
    return out


def saved_tensors(program: Program) -> list[str]:
    """Base tensors the forward produces (and inputs) that the backward reads: what must live
    between the forward and the backward. Parameters are not in it: they live anyway."""
    forward_made = set(program.inputs)
    for op in program.ops:
        if op.phase == "forward" and op.kind != "view":
            forward_made |= {program.base(t) for t in op.outputs}
            forward_made |= {k.out.tensor for k in op.kernels}
    params = set(program.params)
    saved: list[str] = []
    for op in program.ops:
        if op.phase != "backward" or op.kind == "view":
            continue
        for t in _reads(op):
            b = program.base(t)
            if b in forward_made and b not in params and b not in saved:
                saved.append(b)
    return saved


def activation_bytes(program: Program) -> int:
    """Bytes of :func:`saved_tensors`: the activation memory a training step keeps for the
    backward (weights, gradients and optimizer state are not in it)."""
    return sum(tensor_bytes(program, t) for t in saved_tensors(program))


def phase_totals(costs: list[OpCost], program: Program, chip: Chip) -> dict[str, dict]:
    """Counts, bytes and the unfused and fused SOL of each phase on ``chip``. A phase's fused
    bytes are what it reads from and writes to the other phases (docs/training.md); its fused
    memory time is priced like the step's (``sol.memory_seconds``), with its share of the
    step's warm-L2 bytes on a ``@warm-l2`` chip (:func:`warm_l2_shares`)."""
    split = phase_boundary_split(program)
    warm = warm_l2_shares(split, chip)
    out = {}
    for ph in PHASES:
        cs = [c for c in costs if c.op.phase == ph]
        total = Counts()
        work = UnitWork()
        for c in cs:
            total = total + c.counts
            work += c.work
        u = unfused(cs, chip)
        reads, writes = split.get(ph, (0, 0))
        t_comp = max(work.times(chip).values(), default=0.0)
        out[ph] = {"flops": total.flops, "tensor_flops": total.tensor_flops,
                   "vector_flops": total.vector_flops, "transcendentals": total.transcendentals,
                   "bytes_unfused": u.bytes, "bytes_fused": reads + writes, "t_unfused_s": u.t_s,
                   "t_fused_s": max(t_comp, _memory_seconds(reads, writes, warm.get(ph, 0), chip))}
    return out


def warm_l2_shares(split: dict[str, tuple[int, int]], chip: Chip) -> dict[str, int]:
    """Each phase's part of the bytes a warm L2 serves in the whole step (all 0 unless
    ``chip.warm_l2``; docs/training.md, "The fusion boundary"). The step is priced as one run
    that starts with at most ``l2_bytes`` of data in L2 and ends with at most ``l2_bytes`` of
    outputs not yet written back (``sol.warm_l2_bytes``): the read hits go to the phases in
    order (the first reads of the step find the L2 its predecessor left), the unwritten
    writes to the phases in reverse order (the last writes of the step), each phase at most
    its own reads or writes. The shares add up to the step's warm bytes, so the phases' fused
    times add up to at least the step's, as they do on a cold L2."""
    out = dict.fromkeys(split, 0)
    if not chip.warm_l2:
        return out
    for which, order in ((0, list(split)), (1, list(reversed(split)))):
        left = chip.l2_bytes
        for ph in order:
            hit = min(split[ph][which], left)
            out[ph] += hit
            left -= hit
    return out


def _memory_seconds(reads: int, writes: int, warm: int, chip: Chip) -> float:
    """``sol.memory_seconds`` of a phase: its DRAM bytes less the ``warm`` bytes a warm L2
    serves over the DRAM bandwidth, and on a warm-L2 chip its reads over the L2 bandwidth
    (every read passes through L2), the larger of the two."""
    t_dram = max(0, reads + writes - warm) / chip.dram_bytes_per_s
    if not chip.warm_l2:
        return t_dram
    return max(t_dram, reads / chip.l2_bytes_per_s if chip.l2_bytes_per_s else 0.0)


def optimizer_verdict(v: dict, program: Program, config) -> None:
    """Add the optimizer update's own check (``verify/optimizer_check.py``: its IR against one
    torch.optim step) to a training step's verification ``v``; a mismatch there is the entry's."""
    if not any(op.phase == "optimizer" for op in program.ops):
        return
    from solar_lsp.verify.optimizer_check import check_optimizer  # numba, torch: only when run
    res = check_optimizer(program, config)
    v["optimizer"] = res
    if res.get("status") == "mismatch" and v.get("status") != "mismatch":
        v["status"], v["detail"] = "mismatch", f"optimizer: {res.get('detail', '')}"
