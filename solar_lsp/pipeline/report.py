"""Result objects of one analysis, keyed by source line; JSON is their public form.

The CLI table, the JSON document and (later) the language server all read these.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any

from solar_lsp import __version__


@dataclass
class OpReport:
    """One framework op: its einsums, counts, bytes and unfused time on the first chip."""

    op: str
    target: str
    line: int | None
    einsum: str
    shapes: list[list[int]]
    dtype: str
    macs: int
    flops: int
    tensor_flops: int
    vector_flops: int
    transcendentals: int
    bytes: int
    t_s: float
    bound: str
    source: str = "tracer"  # "llm": IR written by the LLM agent and verified (solar_lsp/llm)
    t_compute_s: float | None = None  # compute term alone: the op's share once fused
    phase: str = "forward"  # "forward" | "backward" | "optimizer" (docs/training.md)

    def to_json(self) -> dict:
        return {"op": self.target, "id": self.op, "einsum": self.einsum, "shapes": self.shapes,
                "dtype": self.dtype, "macs": self.macs, "flops": self.flops,
                "tensor_flops": self.tensor_flops, "vector_flops": self.vector_flops,
                "transcendentals": self.transcendentals, "bytes": self.bytes, "t_s": self.t_s,
                "bound": self.bound, "source": self.source, "t_compute_s": self.t_compute_s,
                "phase": self.phase}


@dataclass
class LineReport:
    """The ops of one source line and their sums."""

    line: int | None
    flops: int = 0
    bytes: int = 0
    t_unfused_s: float = 0.0
    ops: list[OpReport] = field(default_factory=list)
    # the line's counts as formulas of the shape symbols (`--symbolic`; pipeline/symbolic_costs.py)
    symbolic: dict | None = None
    # a training step's line (docs/training.md): {phase: {"flops", "bytes", "t_unfused_s"}}
    # for each phase with work on the line; None in inference mode (no "phases" key in JSON)
    phases: dict | None = None

    @property
    def bound(self) -> str:
        comp = sum(o.t_s for o in self.ops if o.bound == "compute")
        mem = sum(o.t_s for o in self.ops if o.bound == "memory")
        return "compute" if comp > mem else "memory"

    def split_phases(self) -> None:
        """Fill ``phases`` from the ops (a training step's line)."""
        self.phases = {}
        for o in self.ops:
            d = self.phases.setdefault(o.phase, {"flops": 0, "bytes": 0, "t_unfused_s": 0.0})
            d["flops"] += o.flops
            d["bytes"] += o.bytes
            d["t_unfused_s"] += o.t_s

    def to_json(self) -> dict:
        d = {"line": self.line, "flops": self.flops, "bytes": self.bytes,
             "t_unfused_s": self.t_unfused_s, "bound": self.bound,
             "ops": [o.to_json() for o in self.ops], "symbolic": self.symbolic}
        if self.phases is not None:
            d["phases"] = self.phases
        return d


@dataclass
class EntryReport:
    """One entry point: per-line table, totals, each chip's fidelities, suggestions, status."""

    name: str
    line: int
    frontend: str
    status: str = "ok"
    error: str | None = None
    error_line: int | None = None
    verification: dict = field(default_factory=lambda: {"status": "unverified", "detail": "not run"})
    totals: dict = field(default_factory=dict)
    lines: list[LineReport] = field(default_factory=list)
    unsupported: list[dict] = field(default_factory=list)
    by_hardware: dict = field(default_factory=dict)
    inverse: dict | None = None
    fusion: list = field(default_factory=list)
    reorder: list = field(default_factory=list)
    graph: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    inputs: list[dict] = field(default_factory=list)
    # how the bound was formed where the code does not fix it: loop trip counts, the branch
    # of a cond that was counted ({"line", "kind", "note"}; the JAX frontend, docs/jax.md)
    notes: list[dict] = field(default_factory=list)
    # measured runtime against the bounds (`solar headroom`), when it was run
    headroom: dict | None = None
    # the LLM agent's part (docs/llm.md): what it translated, rounds, tokens, cost; or which
    # entries/ops would need it when it is not enabled
    llm: dict | None = None
    # counts and times as formulas of the pragma's shape symbols (`--symbolic`; docs/sol-model.md)
    symbolic: dict | None = None
    # "inference" or "train" (docs/training.md); in train mode, ``phases`` holds the totals of
    # each phase ("forward", "backward", "optimizer"): flops, tensor_flops, vector_flops,
    # transcendentals, bytes_unfused, bytes_fused, t_unfused_s, t_fused_s (first chip)
    mode: str = "inference"
    phases: dict | None = None

    def to_json(self) -> dict:
        return {"name": self.name, "line": self.line, "status": self.status, "error": self.error,
                "error_line": self.error_line, "frontend": self.frontend,
                "inputs": self.inputs, "verification": self.verification, "totals": self.totals,
                "lines": [ln.to_json() for ln in self.lines], "unsupported": self.unsupported,
                "by_hardware": self.by_hardware, "inverse": self.inverse, "fusion": self.fusion,
                "reorder": self.reorder, "graph": self.graph, "timings": self.timings,
                "notes": self.notes, "headroom": self.headroom, "llm": self.llm,
                "symbolic": self.symbolic, "mode": self.mode, "phases": self.phases}


@dataclass
class FileReport:
    """Every entry of one file (or why the file could not be analyzed)."""

    file: str
    hardware: list[str]
    entries: list[EntryReport] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(e.status == "ok" for e in self.entries)

    def to_json(self) -> dict[str, Any]:
        return {"tool": {"name": "solar-lsp", "version": __version__, "imported": imported()},
                "file": self.file,
                "hardware": self.hardware, "error": self.error,
                "entries": [e.to_json() for e in self.entries]}


# the libraries a run imports only when it needs them (docs/architecture.md, "Start-up")
OPTIONAL_IMPORTS = ("numba", "sympy", "jax", "torch._dynamo", "pulp", "matplotlib", "anthropic")


def imported() -> list[str]:
    """Which of ``OPTIONAL_IMPORTS`` this process has really imported (a lazy stand-in in
    ``sys.modules`` is a ModuleType subclass, so it does not count): why a run took long."""
    return [m for m in OPTIONAL_IMPORTS if type(sys.modules.get(m)) is types.ModuleType]
