"""What one analysis run is asked to do: chips, entry, target, dtype policy, verification."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solar_lsp.bounds.sol import Policy
from solar_lsp.defaults import DEFAULT_BUDGET_BYTES, DEFAULT_BUDGET_MAX_BYTES, DEFAULT_CHIP
from solar_lsp.pipeline.report import EntryReport


@dataclass
class Config:
    """Options of one run; every stage reads only what it needs from here."""

    hw: list[str] = field(default_factory=lambda: [DEFAULT_CHIP])
    entry: str | None = None
    target_s: float | None = None
    policy: Policy = field(default_factory=Policy)
    verify: bool = True
    budget_bytes: int = DEFAULT_BUDGET_BYTES
    # used only when no reduced size fits budget_bytes (pipeline/reduced_verify.py)
    budget_max_bytes: int = DEFAULT_BUDGET_MAX_BYTES
    dims: dict = field(default_factory=dict)
    entries: dict = field(default_factory=dict)  # name -> pragma, from [tool.solar]
    # module globals read by get_inputs/get_init_inputs that are shape symbols (global -> symbol
    # name; `--symbol`, [tool.solar] symbols): a dim of that name sets the global before they run
    symbols: dict[str, str] = field(default_factory=dict)
    # on-chip capacity of the cache-aware bound: "l2", "smem" (shared memory x SMs) or bytes
    onchip: str | int = "l2"
    # called with an entry's report once its bounds exist, before verification runs, so a
    # server can publish the bounds first (verification never delays them)
    on_bounds: Callable[[EntryReport], None] | None = None
    # the LLM agent's settings (solar_lsp.llm.config.LLMConfig; docs/llm.md): None sends
    # nothing, and reports then say what would need it
    llm: Any = None
    # what is analyzed (docs/training.md): "inference" (the entry's forward) or "train" (one
    # training step: forward, the backward of ``loss`` and the ``optimizer`` update)
    mode: str = "inference"
    optimizer: str = "adamw"  # "adamw" | "sgd" | "none" (train mode only)
    loss: str = "mean"  # "mean" | "sum": the scalar reduced from the entry's output
    # train mode, a plain JAX function: the arguments to differentiate (``--params``); None:
    # the pragma's ``params=(...)``, else every floating-point argument after the first
    params: tuple[str, ...] | None = None
