"""Speed-of-Light bounds from the IR: einsum counts, unfused/fused/cache-aware times, fusion,
tiling and contraction reordering."""
