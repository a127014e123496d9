"""Defaults every command, the server and the engine share, defined once."""

from __future__ import annotations

#: Chip the bounds are computed for when none is named (CLI ``--hw``, server setting ``hw``).
DEFAULT_CHIP = "h100-sxm"

#: Memory the golden (verification) run may use, in bytes (CLI ``--budget``).
DEFAULT_BUDGET_BYTES = 2 * 1024**3

#: Seconds one file may take in ``solar coverage`` before it is stopped (``--timeout``).
DEFAULT_FILE_TIMEOUT_S = 120.0
