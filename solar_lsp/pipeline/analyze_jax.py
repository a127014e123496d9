"""One JAX entry through the pipeline of DESIGN §1: trace → lower → graph → SOL → verify.

The peer of ``analyze.analyze_entry``: the same report, the same graph and SOL code; only
tracing, lowering and the golden run are JAX's.
"""

from __future__ import annotations

import time
import types
from typing import Any

from solar_lsp.bounds.sol import Policy
from solar_lsp.pipeline.report import EntryReport
from solar_lsp.source.discover import Entry


def jax_policy(policy: Policy) -> Policy:
    """JAX's default precision lets an fp32 dot or conv run on TF32 tensor cores (docs
    "Matmul precision"), so the default policy (PyTorch's: matmul without TF32) becomes
    TF32 for both; an explicit ``--tf32 none`` is kept."""
    if policy == Policy():
        return Policy(tf32_matmul=True, tf32_conv=True)
    return policy


def analyze_jax_entry(er: EntryReport, module: types.ModuleType, entry: Entry, path: str,
                      chips: list[Any], config: Any) -> None:
    from solar_lsp.bounds.einsum_graph import build_graph
    from solar_lsp.bounds.sol import op_costs, unfused_seconds
    from solar_lsp.frontend.errors import EntryError
    from solar_lsp.frontend.jax.lower import lower
    from solar_lsp.frontend.jax.trace import trace
    from solar_lsp.pipeline.analyze import _fail, fill_sol
    t = time.perf_counter()
    try:
        traced = trace(module, entry, path)
    except EntryError as exc:
        _fail(er, exc)
        return
    er.inputs = [{"name": s.name, "dtype": s.dtype, "shape": list(s.shape)} for s in traced.input_specs]
    er.timings["trace_s"] = time.perf_counter() - t
    t = time.perf_counter()
    policy = jax_policy(config.policy)
    lowered = lower(traced, score=lambda p, ops: unfused_seconds(p, ops, chips[0], policy))
    program = lowered.program
    er.unsupported = [{"op": u.op, "line": u.line, "reason": u.reason} for u in lowered.unsupported]
    er.notes = list(lowered.notes)
    er.timings["lower_s"] = time.perf_counter() - t
    t = time.perf_counter()
    graph = build_graph(program)
    er.graph = {"nodes": graph.number_of_nodes(), "edges": graph.number_of_edges(),
                "ops": len(program.ops), "kernels": sum(len(o.kernels) for o in program.ops),
                "jaxpr_eqns": lowered.eqns}
    costs = op_costs(program, graph, policy)
    fill_sol(er, program, costs, chips, config)
    er.timings["sol_s"] = time.perf_counter() - t
    er.program = program  # type: ignore[attr-defined]  # kept for `solar ir` / `solar graph`
    er.einsum_graph = graph  # type: ignore[attr-defined]
    on_bounds = getattr(config, "on_bounds", None)
    if config.verify and on_bounds is not None:
        er.verification = {"status": "unverified", "detail": "verifying"}
        on_bounds(er)
    if config.verify:
        from solar_lsp.verify.check_jax import verify
        v = verify(traced, lowered, config.budget_bytes)
        er.verification = v.to_json()
        er.timings["verify_s"] = v.seconds
    else:
        er.verification = {"status": "unverified", "detail": "verification was turned off (--no-verify)"}
