"""``solar headroom``: how far a measured run is from each SOL fidelity, and why.

The entry is built with real inputs on the chosen device, warmed up, and timed with
``torch.utils.benchmark`` one call at a time after flushing the caches (the bounds assume
inputs and weights come from DRAM; a warm cache would make a small model look faster than
its bound). A profiled run under :class:`LineLabels` (a ``TorchFunctionMode`` that wraps each
top-level torch call of the user's file in a ``record_function`` range named after its line)
gives the op time per source line from ``torch.profiler``.

A JAX entry is measured by :mod:`solar_lsp.measure.headroom_jax`; both turn their times into
a result with :mod:`solar_lsp.measure.result` and check memory with :mod:`solar_lsp.measure.memory`.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

from solar_lsp.frontend.errors import EntryError, stack_line, user_line
from solar_lsp.hardware.chips import load_chip
from solar_lsp.hardware.hostprobe import host_toml_path, raise_dram_bandwidth
from solar_lsp.measure.headroom_jax import headroom_jax_entry
from solar_lsp.measure.memory import available_bytes, check_fits  # noqa: F401  (re-exported)
from solar_lsp.measure.quiet import profiler_quiet
from solar_lsp.measure.result import (  # noqa: F401  (re-exported: callers import them from here)
    OVERHEAD_S,
    Headroom,
    HeadroomError,
    LineGap,
    beaten_bounds,
    diagnose,
    finish,
    seen_bandwidth,
)
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.pipeline.report import FileReport
from solar_lsp.source.discover import discover_file

# Tests and benchmarks lower these on this module; the JAX measurement gets them passed in.
MIN_RUNS, MAX_RUNS, MIN_TIME_S = 10, 200, 0.5


# ---------------------------------------------------------------------------------------
# measurement


def _device_ok(device: str) -> None:
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        raise HeadroomError("--device cuda was asked for, but this machine has no CUDA GPU visible to "
                            "PyTorch (torch.cuda.is_available() is False); use --device cpu")
    if device not in ("cpu", "cuda"):
        raise HeadroomError(f"unknown device {device!r}; use cpu or cuda")


# Variants whose peaks exceed every bundled file they would match by name: mapping them would
# give a bound above what the card can do (e.g. H100 NVL: 3.9 TB/s against the SXM file's 3.35).
_NO_FILE = ("nvl", "gh200", "gb200", "gb300", "b300")


def chip_for_device(device: str) -> str:
    """The hardware file that matches the device: the probed host, or the GPU by its name,
    refusing variants no bundled file bounds from above."""
    if device == "cpu":
        return "host"
    import torch
    return chip_for_gpu_name(torch.cuda.get_device_name())


def chip_for_gpu_name(full: str) -> str:
    """The bundled hardware file for a CUDA device name; refuses names none bounds."""
    name = full.lower()
    chip = None
    if not any(v in name for v in _NO_FILE):
        if "b200" in name:
            chip = "b200"
        elif "h200" in name:
            chip = "h200"
        elif "h100" in name and "pcie" in name:
            chip = "h100-pcie"
        elif "h100" in name and ("sxm" in name or "hbm3" in name):
            chip = "h100-sxm"
        elif "a100" in name:  # the SXM4 80GB file has the highest bandwidth and clocks of any A100
            chip = "a100-sxm"
        elif "a6000" in name and "ada" not in name:
            chip = "a6000"
        elif "thor" in name:
            chip = "jetson-thor"
    if chip is None:
        raise HeadroomError(f"no bundled hardware file bounds the GPU {full!r} from above; "
                            "pass --hw with a chip name or a TOML file with its datasheet figures")
    return chip


class LineLabels:
    """Wrap each top-level torch call made from ``path`` in a profiler range ``solar_line:N``."""

    def __init__(self, path: str):
        self.path = os.path.realpath(path)
        self.ops = 0

    def __enter__(self):
        import torch
        from torch.overrides import TorchFunctionMode

        outer = self

        class _Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                line = stack_line(outer.path)
                if line is None:
                    return func(*args, **(kwargs or {}))
                outer.ops += 1
                with torch.profiler.record_function(f"solar_line:{line}"):
                    return func(*args, **(kwargs or {}))

        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)



def _flusher(device: str, chip_bytes: int):
    """A function that evicts the caches: writes a buffer twice the last-level cache
    (what triton.testing.do_bench does for the GPU's L2)."""
    import torch
    n = max(2 * chip_bytes, 64 * 1024**2) // 4
    buf = torch.empty(n, dtype=torch.float32, device=device)

    def flush() -> None:
        buf.zero_()
        if device == "cuda":
            torch.cuda.synchronize()
    return flush


def time_call(fn, device: str, flush, min_time: float = MIN_TIME_S) -> tuple[float, int]:
    """Median seconds of one call, caches flushed before each: CUDA events on the GPU (the
    host clock would add launch latency and the synchronize), torch.utils.benchmark on the CPU."""
    for _ in range(3):
        fn()
    if device == "cuda":
        times = _cuda_event_times(fn, flush, min_time)
    else:
        from torch.utils.benchmark import Timer
        times = []
        t_start = time.perf_counter()
        timer = Timer(stmt="fn()", setup="flush()", globals={"fn": fn, "flush": flush})
        while len(times) < MIN_RUNS or (time.perf_counter() - t_start < min_time and len(times) < MAX_RUNS):
            times.append(timer.timeit(1).median)
    return statistics.median(times), len(times)


def _cuda_event_times(fn, flush, min_time: float) -> list[float]:
    """Seconds of each call between a pair of CUDA events recorded on the stream, after the
    flush and a synchronize (so neither the flush nor earlier work is inside the pair)."""
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times: list[float] = []
    t_start = time.perf_counter()
    while len(times) < MIN_RUNS or (time.perf_counter() - t_start < min_time and len(times) < MAX_RUNS):
        flush()
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)  # elapsed_time is in ms
    return times


def profile_lines(fn, device: str, path: str) -> tuple[dict[int, float], int]:
    """Op seconds per source line (one call) from torch.profiler, and ops per call."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    labels = LineLabels(path)
    with profiler_quiet(), profile(activities=acts) as prof, labels:
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
    per: dict[int, float] = {}
    for ev in prof.events():
        if not ev.name.startswith("solar_line:"):
            continue
        line = int(ev.name.split(":", 1)[1])
        if device == "cuda":
            t = ev.device_time_total
        else:
            t = sum(c.cpu_time_total for c in ev.cpu_children if c.name.startswith("aten::")) or ev.cpu_time_total
        per[line] = per.get(line, 0.0) + t * 1e-6
    return per, labels.ops


def profile_ops(fn, device: str) -> tuple[float, float]:
    """(seconds in ops, wall seconds) of one call under a plain torch.profiler run: the op time
    is the sum of the aten ops' self CPU time on the CPU, of their kernels' self device time on
    CUDA. No line labels here: the TorchFunctionMode's Python cost per call would count as
    dispatch overhead the unprofiled run does not have."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profiler_quiet(), profile(activities=acts) as prof:
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    op = 0.0
    for ev in prof.events():
        if not ev.name.startswith("aten::"):
            continue
        op += (getattr(ev, "self_device_time_total", 0.0) if device == "cuda" else ev.self_cpu_time_total)
    return op * 1e-6, wall


def headroom_entry(module, entry_obj, entry: dict, path: str, device: str, chip, compile_: bool,
                   program=None) -> Headroom:
    """Time a torch entry on ``device`` (and compiled, if asked) and profile it per line."""
    import torch

    from solar_lsp.frontend.torch.trace import build  # imports torch: only when measuring
    check_fits(program, device, chip)
    try:
        model, inputs = build(module, entry_obj, path, device=device)
    except EntryError as exc:
        raise HeadroomError(str(exc), exc.line) from exc
    flush = _flusher(device, chip.l2_bytes)

    def call() -> Any:
        with torch.no_grad():
            out = model(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        return out

    try:
        measured, runs = time_call(call, device, flush)
        per_line, ops = profile_lines(call, device, path)
        op_s, wall_s = profile_ops(call, device)
    except Exception as exc:  # user code raised while running for real
        raise HeadroomError(f"running the entry failed: {type(exc).__name__}: {exc}",
                            user_line(exc, os.path.realpath(path))) from exc
    compiled = None
    if compile_:
        try:
            cmodel = torch.compile(model)

            def ccall() -> Any:
                with torch.no_grad():
                    out = cmodel(*inputs)
                if device == "cuda":
                    torch.cuda.synchronize()
                return out
            compiled, _ = time_call(ccall, device, flush)
        except Exception as exc:
            print(f"torch.compile failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return finish(entry, device, chip, measured, compiled, runs, per_line, ops,
                  op_share=min(1.0, op_s / wall_s) if op_s > 0 and wall_s > 0 else None)


def headroom_file(path: str, device: str = "cpu", hw: str | None = None, entry: str | None = None,
                  compile_: bool = False, config: Config | None = None) -> FileReport:
    """Analyze (bounds on the device's chip), then measure each entry that analyzed."""
    _device_ok(device)
    chip = load_chip(hw or chip_for_device(device))
    cfg = config or Config()
    cfg.hw, cfg.entry, cfg.verify = [chip.name if hw is None or hw == "host" else hw], entry, False
    if hw in (None, "host") and device == "cpu":
        cfg.hw = ["host"]
    report = analyze_file(path, cfg)
    if report.error:
        return report
    _measure_entries(report, path, device, chip, cfg, compile_)
    if chip.name == "host" and device == "cpu":
        _raise_host_profile(report, path, device, cfg)
    return report


def _measure_entries(report: FileReport, path: str, device: str, chip, cfg: Config, compile_: bool) -> None:
    from solar_lsp.frontend.torch.trace import load_module  # imports torch: only when measuring
    try:
        module = load_module(path)
    except EntryError as exc:
        report.error = str(exc)
        return
    by_name = {e.name: e for e in discover_file(path, {"dims": cfg.dims, "entries": cfg.entries})}
    for er in report.entries:
        if er.status != "ok":
            continue
        try:
            if er.frontend == "jax":
                h = headroom_jax_entry(module, by_name[er.name], er.to_json(), path, device, chip,
                                       getattr(er, "program", None), min_runs=MIN_RUNS,
                                       max_runs=MAX_RUNS, min_time=MIN_TIME_S)
            else:
                h = headroom_entry(module, by_name[er.name], er.to_json(), path, device, chip, compile_,
                                   getattr(er, "program", None))
            er.headroom = h.to_json()
            er._headroom = h  # kept whole (every line's time) in case the bounds are recomputed
        except HeadroomError as exc:
            er.headroom = {"error": str(exc), "line": exc.line}


def _raise_host_profile(report: FileReport, path: str, device: str, cfg: Config) -> None:
    """The host profile's DRAM figure is a measurement, so a later run can beat it (a probe
    taken under load). Raise it to what the fastest run moved, then recompute the bounds from
    the raised profile and the same measurements, saying so on every entry."""
    chip = load_chip("host")
    seen = [(b, er.name) for er in report.entries if getattr(er, "_headroom", None)
            for b in [seen_bandwidth(er._headroom.measured_s, er.totals, chip)] if b]
    if not seen:
        return
    bw, name = max(seen)
    bw *= 1 + 1e-6  # rounded up: the recomputed bound must not exceed the run by an ulp
    old = raise_dram_bandwidth(host_toml_path(), bw, f"`solar headroom` measured {name} in {path} moving that much")
    if old is None:
        return
    fresh = analyze_file(path, cfg)
    chip = load_chip("host")
    by_name = {e.name: e for e in fresh.entries}
    note = (f"host profile DRAM bandwidth raised from {old / 1e9:.1f} to {bw / 1e9:.1f} GB/s: a measured run "
            "moved more than the probe saw; the bounds are recomputed with it")
    for i, er in enumerate(report.entries):
        h = getattr(er, "_headroom", None)
        new = by_name.get(er.name)
        if h is None or new is None or new.status != "ok":
            continue
        h2 = finish(new.to_json(), device, chip, h.measured_s, h.compiled_s, h.runs, h.per_line, h.ops_per_run,
                    scale_lines=h.scale_lines, op_share=h.op_share)
        h2.warnings.insert(0, note)
        new.headroom, new._headroom = h2.to_json(), h2
        report.entries[i] = new
