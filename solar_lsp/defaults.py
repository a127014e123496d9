"""Defaults every command, the server and the engine share, defined once."""

from __future__ import annotations

#: Chip the bounds are computed for when none is named (CLI ``--hw``, server setting ``hw``).
DEFAULT_CHIP = "h100-sxm"

#: Memory a verified run may use, in bytes (CLI ``--budget``): the process itself (torch and
#: numba, about 0.5 GiB) and the golden run's working set. 1 GiB keeps a cold verified
#: ``solar analyze`` under 1 GB of peak RSS (issue 17); a larger problem is verified at a
#: reduced size (docs/sol-model.md, Verification).
DEFAULT_BUDGET_BYTES = 1024**3

#: The larger budget an entry is verified under when no reduced size fits the budget above:
#: weights that do not shrink with the file's size constants (VGG16's 138 M parameters take
#: 1.1 GB as float64 copies at batch 1). CLI ``--budget-max``; equal to ``--budget`` for a
#: hard limit.
DEFAULT_BUDGET_MAX_BYTES = 2 * 1024**3

#: Seconds one file may take in ``solar coverage`` before it is stopped (``--timeout``).
DEFAULT_FILE_TIMEOUT_S = 120.0

#: Seconds ``solar analyze`` (and graph, ir, compare, plot) may take on one file (``--timeout``):
#: an endless loop at import or in forward ends with a message instead of a hang. The slowest
#: bundled corpus file takes under a minute on a 2-core machine.
DEFAULT_ANALYZE_TIMEOUT_S = 600.0
