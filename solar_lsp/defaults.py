"""Defaults every command, the server and the engine share, defined once."""

from __future__ import annotations

#: Chip the bounds are computed for when none is named (CLI ``--hw``, server setting ``hw``).
DEFAULT_CHIP = "h100-sxm"

#: Memory the golden (verification) run may use, in bytes (CLI ``--budget``).
DEFAULT_BUDGET_BYTES = 2 * 1024**3

#: Seconds one file may take in ``solar coverage`` before it is stopped (``--timeout``).
DEFAULT_FILE_TIMEOUT_S = 120.0

#: Seconds ``solar analyze`` (and graph, ir, compare, plot) may take on one file (``--timeout``):
#: an endless loop at import or in forward ends with a message instead of a hang. The slowest
#: bundled corpus file takes under a minute on a 2-core machine.
DEFAULT_ANALYZE_TIMEOUT_S = 600.0
