"""Primitive table of the JAX frontend: each lax primitive -> Affine Loop IR kernels.

The rules live in one module per family and register themselves in :data:`LOWERINGS`
(``context.py``) when imported: ``prims_elementwise`` (math, casts, selection),
``prims_views`` (views and copies), ``prims_reduce`` (reductions, scans, windows),
``prims_contract`` (``dot_general``, convolutions) and ``prims_index`` (indexing, sorting).
Importing this module imports them all, so ``LOWERINGS`` here is the complete table.

Families share the builders of ``builders.py`` with the torch lowering. Data movement
follows the torch conventions: reshapes, broadcasts, transposes, squeezes and static slices
are views (no traffic); data-dependent indexing, sorting and selection are composition steps
whose semantics and counts live in ``ir/calls_index.py`` (the same calls torch uses).
"""

from __future__ import annotations

# imported for their side effect: each family registers its rules in LOWERINGS
from solar_lsp.frontend.jax import (  # noqa: F401
    prims_contract,
    prims_elementwise,
    prims_index,
    prims_reduce,
    prims_views,
)
from solar_lsp.frontend.jax.context import LOWERINGS

__all__ = ["LOWERINGS", "UNLOWERED"]

# Primitives with a known reason for having no lowering: listed in the entry's
# `unsupported` with this reason (checked before the table and the dtype check, so a PRNG
# op on a key says what it is rather than that keys have no IR type).
_RANDOM = ("random_seed", "random_bits", "random_wrap", "random_unwrap", "random_split",
           "random_fold_in", "random_clone", "random_gamma", "random_gamma_grad",
           "threefry2x32", "threefry4x32", "rng_bit_generator", "rng_uniform")
UNLOWERED: dict[str, str] = {
    **{p: "random number generation has no lowering (its bits are not modelled); the rest "
          "of the entry is analyzed" for p in _RANDOM},
    **{p: f"{p} has no scalar function in the IR yet" for p in
       ("erf_inv", "lgamma", "digamma", "igamma", "igammac", "bessel_i0e", "bessel_i1e",
        "nextafter", "population_count", "clz")},
    "shift_right_logical": "shift_right_logical has no scalar function in the IR yet "
                           "(only the arithmetic shift, shr)",
    "bitcast_convert_type": "bitcast_convert_type reinterprets bits; the IR has no bit-level "
                            "reinterpretation",
}
