"""One JAX entry through the pipeline: trace → lower → the shared tail (graph, SOL, verify).

The peer of ``analyze.analyze_entry``: the same report, the same graph and SOL code; only
tracing, lowering and the golden run are JAX's. In train mode (``Config.mode == "train"``,
docs/training.md) the traced function is the training step, ``jax.value_and_grad`` of the
loss (``frontend/jax/train.py``), and the optimizer update is appended to its program.
Importing this module imports jax.
"""

from __future__ import annotations

import time
import types
from typing import Any

from solar_lsp.bounds.sol import Policy, unfused_seconds
from solar_lsp.frontend.errors import EntryError
from solar_lsp.frontend.jax.lower import lower
from solar_lsp.frontend.jax.trace import trace
from solar_lsp.frontend.jax.train import lower_train, trace_train
from solar_lsp.hardware.chips import Chip
from solar_lsp.ir.core import Program
from solar_lsp.pipeline.config import Config
from solar_lsp.pipeline.report import EntryReport
from solar_lsp.pipeline.tail import bound_and_verify, fail
from solar_lsp.pipeline.train import finish_train_program, optimizer_verdict
from solar_lsp.source.discover import Entry


def jax_policy(policy: Policy) -> Policy:
    """JAX's default precision lets an fp32 dot or conv run on TF32 tensor cores (docs
    "Matmul precision"), so the default policy (PyTorch's: matmul without TF32) becomes
    TF32 for both; an explicit ``--tf32 none`` is kept."""
    if policy == Policy():
        return Policy(tf32_matmul=True, tf32_conv=True)
    return policy


def analyze_jax_entry(er: EntryReport, module: types.ModuleType, entry: Entry, path: str,
                      chips: list[Chip], config: Config) -> None:
    """One JAX entry: trace with make_jaxpr, lower (cond branches scored on the first chip);
    in train mode the training step (forward, backward, optimizer)."""
    train = config.mode == "train"
    policy = jax_policy(config.policy)

    def score(p: Program, ops: list) -> float:
        return unfused_seconds(p, ops, chips[0], policy)

    def relower(t: Any) -> Any:
        return lower_train(t, score=score) if train else lower(t, score=score)

    def retrace_fn(mod: types.ModuleType, ent: Entry) -> Any:
        return trace_train(mod, ent, path, config.loss, config.params) if train else trace(mod, ent, path)

    t = time.perf_counter()
    try:
        traced = retrace_fn(module, entry)
    except EntryError as exc:
        fail(er, exc)
        return
    er.inputs = [{"name": s.name, "dtype": s.dtype, "shape": list(s.shape)} for s in traced.input_specs]
    er.timings["trace_s"] = time.perf_counter() - t
    t = time.perf_counter()
    lowered = relower(traced)
    er.unsupported = [{"op": u.op, "line": u.line, "reason": u.reason} for u in lowered.unsupported]
    er.notes = list(lowered.notes)
    if train:
        er.mode = "train"
        finish_train_program(lowered.program, lowered.grads, config)
    er.timings["lower_s"] = time.perf_counter() - t

    def verify() -> tuple[dict, float]:  # at a reduced size when the full one is too large
        from solar_lsp.pipeline.reduced_verify import verify_jax
        v, seconds = verify_jax(module, entry, path, traced, lowered, config, relower, retrace_fn)
        t = time.perf_counter()
        optimizer_verdict(v, lowered.program, config)  # the update's IR against torch.optim
        return v, seconds + time.perf_counter() - t

    bound_and_verify(er, lowered.program, chips, config, policy, {"jaxpr_eqns": lowered.eqns}, verify)
