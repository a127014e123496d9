"""Whether a measured run fits in memory: its peak of live tensors plus the cache-flush
buffer, against what the device (and the process's address-space limit) leaves."""

from __future__ import annotations

import os

from solar_lsp.bounds.einsum_graph import tensor_bytes
from solar_lsp.measure.result import HeadroomError
from solar_lsp.pipeline.fidelity import footprint


def available_bytes(device: str) -> int:
    """Free memory of the device; on the CPU also what the address-space limit leaves (the
    server's workers run under RLIMIT_AS)."""
    import torch
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        return int(free)
    have = 8 * 1024**3
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    have = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm") as f:
                used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            have = min(have, max(0, soft - used))
    except (ImportError, OSError, ValueError):
        pass
    return have


def check_fits(program, device: str, chip, have: int | None = None) -> None:
    """Refuse, with the sizes, a run that would not fit: its peak of live tensors (inputs,
    weights, intermediates and outputs alive at once, in op order) plus the cache-flush buffer,
    against the memory available to this process (free memory, and the address-space limit a
    server worker runs under)."""
    if program is None:
        return
    inw = _entry_bytes(program)
    peak = max(footprint(program), inw)
    flush = max(2 * chip.l2_bytes, 64 * 1024**2)
    need = peak + flush
    have = available_bytes(device) if have is None else have
    if need > 0.8 * have:
        raise HeadroomError(f"the run needs {need / 1e9:.1f} GB (inputs and weights {inw / 1e9:.1f} GB, peak of live "
                            f"tensors {peak / 1e9:.1f} GB, cache flush {flush / 1e9:.2f} GB) but only "
                            f"{have / 1e9:.1f} GB is available on {device}; shrink the shapes to measure it")


def _entry_bytes(program) -> int:
    if program is None:
        return 0
    return sum(tensor_bytes(program, t) for t in list(program.inputs) + list(program.params))
