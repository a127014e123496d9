"""bench_build.py: the entry builds for analysis, as built now against the former build.

The former build ran the user's ``get_init_inputs``, ``__init__`` and ``get_inputs`` under a bare
``torch.device("meta")``. The current one (frontend/torch/devices.py) keeps the values of small
tensors and maps GPU devices to the build's. For every file given (``Model`` entries, the
KernelBench convention), both builds are run on meta. The script prints how many give the same
parameter, buffer and input shapes, which failed before and build now ("fixed"), which built
before and fail now or differ ("broken"), the total build time of each, and the process's peak
memory.

Usage::

    python benchmarks/bench_build.py '/work/kb-head/KernelBench/level[123]/*.py' \\
        '/work/kb-v01/KernelBench/level[123]/*.py'
"""

from __future__ import annotations

import glob
import resource
import sys
import time

import torch

import solar_lsp.frontend.torch.build as B
from solar_lsp.source.discover import discover_file


def former(module, entry, path: str):
    """The build under a bare ``torch.device("meta")``."""
    saved = B.build_devices
    B.build_devices = lambda device, path: torch.device(device)
    try:
        return B.build(module, entry, path, "meta")
    finally:
        B.build_devices = saved


def current(module, entry, path: str):
    return B.build(module, entry, path, "meta")


def shapes(module, entry, path: str, fn) -> list | str:
    """The state's and inputs' shapes and dtypes, or the build's error."""
    try:
        model, inputs = fn(module, entry, path)
    except Exception as exc:  # the user's code: the message is the result
        return "error: " + str(exc).splitlines()[0][:160]
    return ([(k, tuple(v.shape), v.dtype) for k, v in model.state_dict().items()]
            + [(tuple(x.shape), x.dtype) for x in inputs if isinstance(x, torch.Tensor)])


def main(patterns: list[str]) -> None:
    same, fixed, broken, failing = 0, [], [], []
    seconds = {"former": 0.0, "current": 0.0}
    for path in sorted({p for pat in patterns for p in glob.glob(pat)}):
        try:
            entries = [e for e in discover_file(path) if e.kind == "model"]
            module = B.load_module(path)
        except Exception:  # not analysable at all: no build to compare
            continue
        for entry in entries[:1]:
            got = {}
            for name, fn in (("former", former), ("current", current)):
                t0 = time.perf_counter()
                got[name] = shapes(module, entry, path, fn)
                seconds[name] += time.perf_counter() - t0
            before, now = got["former"], got["current"]
            if isinstance(before, str) and isinstance(now, str):
                failing.append((path, now))
            elif isinstance(before, str):
                fixed.append((path, before))
            elif isinstance(now, str) or before != now:
                broken.append((path, now if isinstance(now, str) else "different shapes"))
            else:
                same += 1
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"same: {same}; fixed: {len(fixed)}; broken: {len(broken)}; failing both: {len(failing)}")
    print(f"build time: former {seconds['former']:.1f} s, current {seconds['current']:.1f} s; "
          f"peak memory {peak} MB")
    for label, rows in (("fixed", fixed), ("broken", broken), ("failing", failing)):
        for path, why in rows:
            print(f"{label}: {path}: {why}")


if __name__ == "__main__":
    main(sys.argv[1:])
