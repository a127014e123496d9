"""Where the contraction FLOPs of an entry are priced (docs/sol-model.md "Peaks"): on the
matrix units (tensor cores) at a matrix peak, or at a vector peak, the way ``sol.kernel_work``
and ``sol.unit_peak`` choose. An fp32 GEMM without TF32 (PyTorch's default for matmul) and any
contraction on a chip without a matrix path for its type run at the vector peak, so a report
must not say they ran "on matrix units"."""

from __future__ import annotations

from solar_lsp.bounds.sol import OpCost, unit_peak
from solar_lsp.hardware.chips import Chip


def tensor_flops_by_unit(costs: list[OpCost], chip: Chip) -> dict[str, int]:
    """The contraction (tensor) FLOPs of ``costs`` by the unit and dtype whose peak prices them
    on ``chip``: ``{"matrix.tf32": n, "vector.fp32": m}``; the values add up to the tensor FLOPs."""
    out: dict[str, int] = {}
    for c in costs:
        tensor = int(c.counts.tensor_flops)
        if not tensor:
            continue
        on_matrix = 0
        for (unit, dtype), w in c.work.work.items():
            if unit != "matrix":
                continue
            peak, _ = unit_peak(chip, unit, dtype)
            matrix_peak = chip.peak("matrix", dtype)
            key = f"matrix.{dtype}" if matrix_peak is not None and peak == matrix_peak else f"vector.{dtype}"
            out[key] = out.get(key, 0) + int(round(w))
            on_matrix += int(round(w))
        if tensor > on_matrix:  # the dtype policy moved them: an fp32 contraction without TF32
            out["vector.fp32"] = out.get("vector.fp32", 0) + tensor - on_matrix
    return out
