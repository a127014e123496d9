"""Headroom of a JAX entry: the jitted function timed with ``block_until_ready`` after a cache
flush, and a per-line profile from running the jaxpr's top-level equations one by one (each
dispatched eagerly and waited for). jit fuses across lines, so per-line times are the eager
ones (op-by-op, like the unfused bound they are compared with)."""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from solar_lsp.frontend.errors import EntryError, user_line
from solar_lsp.frontend.jax.trace import LineMap, trace
from solar_lsp.measure.memory import available_bytes, check_fits
from solar_lsp.measure.result import Headroom, HeadroomError, finish


def _device(device: str):
    import jax
    kind = "gpu" if device == "cuda" else "cpu"
    try:
        return jax.devices(kind)[0]
    except RuntimeError as exc:
        raise HeadroomError(f"JAX sees no {device} device: {exc}") from exc


def _flusher(dev, nbytes: int):
    import jax
    import jax.numpy as jnp
    n = max(2 * nbytes, 64 * 1024**2) // 4
    buf = jax.device_put(jnp.zeros(n, jnp.float32), dev)
    touch = jax.jit(lambda b: b + 1.0)

    def flush() -> None:
        touch(buf).block_until_ready()
    return flush


def _time(fn, flush, min_runs: int, max_runs: int, min_time: float) -> tuple[float, int]:
    for _ in range(3):
        fn()
    times: list[float] = []
    t0 = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - t0 < min_time and len(times) < max_runs):
        flush()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), len(times)


def _eager_lines(closed: Any, args: list[Any], path: str) -> tuple[dict[int, float], int]:
    """Seconds per source line from evaluating the top-level equations one at a time."""
    import jax
    from jax.extend.core import Literal
    jaxpr = closed.jaxpr
    env: dict[Any, Any] = {}
    for v, c in zip(jaxpr.constvars, closed.consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    line_of = LineMap(path)
    per: dict[int, float] = {}
    n = 0
    for eqn in jaxpr.eqns:
        ins = [x.val if isinstance(x, Literal) else env[x] for x in eqn.invars]
        params = eqn.primitive.get_bind_params(eqn.params)  # as jax.core.eval_jaxpr does
        t = time.perf_counter()
        with eqn.ctx.manager:
            out = eqn.primitive.bind(*ins, **params)
        jax.block_until_ready(out)
        dt = time.perf_counter() - t
        outs = out if eqn.primitive.multiple_results else [out]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
        line = line_of(eqn)
        if line is not None:
            per[line] = per.get(line, 0.0) + dt
            n += 1
    return per, n


def headroom_jax_entry(module, entry_obj, entry: dict, path: str, device: str, chip,
                       program=None, *, min_runs: int, max_runs: int, min_time: float) -> Headroom:
    """Time a JAX entry jitted on ``device`` (``min_runs``.. ``max_runs`` calls, at least
    ``min_time`` seconds) and profile it per line, eagerly."""
    import jax

    check_fits(program, device, chip, available_bytes("cpu") if device == "cpu" else _gpu_free())
    dev = _device(device)
    try:
        traced = trace(module, entry_obj, path)
        args = [jax.device_put(a, dev) for a in traced.real_args(0)]
    except EntryError as exc:
        raise HeadroomError(str(exc), exc.line) from exc
    closed = traced.closed
    fn = jax.jit(lambda *xs: jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *xs))

    def call() -> Any:
        return jax.block_until_ready(fn(*args))

    try:
        measured, runs = _time(call, _flusher(dev, chip.l2_bytes), min_runs, max_runs, min_time)
        _eager_lines(traced.closed, args, path)  # the first pass compiles each primitive
        per_line, ops = _eager_lines(traced.closed, args, path)
    except Exception as exc:
        raise HeadroomError(f"running the entry failed: {type(exc).__name__}: {exc}",
                              user_line(exc, os.path.realpath(path))) from exc
    # jit fuses across lines, so a line has no time of its own in the jitted run: the per-line
    # times are the eager op-by-op ones, not shares of the jitted total
    return finish(entry, device, chip, measured, None, runs, per_line, ops, scale_lines=False)


def _gpu_free() -> int:
    import jax
    try:
        stats = jax.devices("gpu")[0].memory_stats() or {}
        return int(stats.get("bytes_limit", 0) - stats.get("bytes_in_use", 0)) or 8 * 1024**3
    except Exception:
        return 8 * 1024**3
