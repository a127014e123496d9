"""Verification of every entry, at its full size when that fits the budget, otherwise of the
same lowering at reduced sizes (``verify/reduced.py`` chooses them): the entry is re-traced
through its own frontend with smaller pragma symbols, or with a KernelBench-style file's size
constants shrunk (the file re-executed as a separate module), and the reduced program goes
through the same verifier. The bounds always come from the full size.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import os
import re
import sys
import time
import types
from collections.abc import Callable
from typing import Any

from solar_lsp.frontend.errors import EntryError
from solar_lsp.ir.core import Program
from solar_lsp.pipeline.config import Config
from solar_lsp.source.discover import DiscoveryError, Entry, discover
from solar_lsp.source.reading import SourceError, read_source
from solar_lsp.verify import reduced
from solar_lsp.verify.core import Verification

# (module, entry) -> (program, traced, lowered): one frontend's trace and lowering
Retrace = Callable[[types.ModuleType, Entry], tuple[Program, Any, Any]]
# (traced, lowered, module, budget bytes) -> the verifier's verdict
Check = Callable[[Any, Any, types.ModuleType, int], Verification]
# budget bytes -> the limits a golden run must fit
LimitsOf = Callable[[int], reduced.Limits]

_COUNTER = itertools.count(1)


def verify_torch(module: types.ModuleType, entry: Entry, path: str, traced: Any, lowered: Any,
                 config: Config) -> tuple[dict, float]:
    """A torch entry's verification JSON and seconds, at a reduced size when the full one is
    over the budget or the loop-point limits."""
    from solar_lsp.frontend.torch.lower import lower
    from solar_lsp.frontend.torch.trace import trace
    from solar_lsp.verify.check_torch import verify as run  # imports numba

    def retrace(mod: types.ModuleType, ent: Entry) -> tuple[Program, Any, Any]:
        if getattr(traced, "mode", "inference") == "train":  # the training step (no optimizer)
            from solar_lsp.frontend.torch.train import trace_train
            t = trace_train(mod, ent, path, config.loss)
        else:
            t = trace(mod, ent, path)
        lo = lower(t)
        if len(lo.unsupported) != len(lowered.unsupported):
            raise EntryError("lower", "the ops without a lowering differ")
        return lo.program, t, lo

    def check(t: Any, lo: Any, mod: types.ModuleType, budget: int) -> Verification:
        return run(t, lo, mod, budget)

    if getattr(traced, "mode", "inference") == "train":  # the optimizer has no torch node to check
        ops = [op for op in lowered.program.ops if op.phase != "optimizer"]
        lowered = dataclasses.replace(lowered, program=dataclasses.replace(lowered.program, ops=ops))
    return verify_entry(module, entry, path, (traced, lowered), config,
                        lambda b: reduced.Limits.of_budget(b, streamed=True), retrace, check)


def verify_jax(module: types.ModuleType, entry: Entry, path: str, traced: Any, lowered: Any,
               config: Config, relower: Callable[[Any], Any],
               retrace_fn: Callable[[types.ModuleType, Entry], Any] | None = None) -> tuple[dict, float]:
    """A JAX entry's verification JSON and seconds (``relower`` lowers a re-traced entry as
    the full one was; ``retrace_fn`` re-traces it, by default the forward trace), at a reduced
    size when the full one is over a limit. A training step (``config.mode == "train"``) is
    checked against jax's ``value_and_grad`` jaxpr, with each gradient's verdict."""
    from solar_lsp.frontend.jax.trace import trace
    from solar_lsp.verify.check_jax import REPLAY_POINTS, verify, verify_train  # imports numba

    run = verify_train if config.mode == "train" else verify
    retrace_fn = retrace_fn or (lambda mod, ent: trace(mod, ent, path))

    def retrace(mod: types.ModuleType, ent: Entry) -> tuple[Program, Any, Any]:
        t = retrace_fn(mod, ent)
        lo = relower(t)
        if len(lo.unsupported) != len(lowered.unsupported):
            raise EntryError("lower", "the equations without a lowering differ")
        return lo.program, t, lo

    def check(t: Any, lo: Any, mod: types.ModuleType, budget: int) -> Verification:
        return run(t, lo, budget)

    if config.mode == "train":  # the optimizer has no jaxpr equation; a re-lowering has none
        ops = [op for op in lowered.program.ops if op.phase != "optimizer"]
        lowered = dataclasses.replace(lowered, program=dataclasses.replace(lowered.program, ops=ops))
    return verify_entry(module, entry, path, (traced, lowered), config,
                        lambda b: reduced.Limits.of_budget(b, REPLAY_POINTS, streamed=True),  # stream.py
                        retrace, check)


def verify_entry(module: types.ModuleType, entry: Entry, path: str, full: tuple[Any, Any],
                 config: Config, limits_of: LimitsOf, retrace: Retrace, check: Check
                 ) -> tuple[dict, float]:
    """Full size when it fits the budget's limits; otherwise the first reduced size that does.
    When none does (weights that do not shrink), the same again under ``budget_max_bytes``."""
    t0 = time.perf_counter()
    result, fits = _verify_within(module, entry, path, full, config, config.budget_bytes,
                                  limits_of, retrace, check)
    if fits or config.budget_max_bytes <= config.budget_bytes:
        return result, time.perf_counter() - t0
    first = result.get("detail", "")
    result, _ = _verify_within(module, entry, path, full, config, config.budget_max_bytes,
                               limits_of, retrace, check)
    result["detail"] = (f"{result.get('detail', '')} (under the larger budget of "
                        f"{config.budget_max_bytes / 2**30:g} GiB, --budget-max: at "
                        f"{config.budget_bytes / 2**30:g} GiB, {first})")
    return result, time.perf_counter() - t0


def _verify_within(module: types.ModuleType, entry: Entry, path: str, full: tuple[Any, Any],
                   config: Config, budget: int, limits_of: LimitsOf, retrace: Retrace,
                   check: Check) -> tuple[dict, bool]:
    """The verdict under one budget, and whether it stands (False: unverified because the full
    size is over the budget's memory and no reduced size fits it)."""
    limits = limits_of(budget)
    traced, lowered = full
    program = lowered.program
    why = reduced.too_large(program, limits)
    if why is None:
        v = check(traced, lowered, module, budget)
        why = reduced.hit_limit(v)
        if why is None:
            return v.to_json(), True
        fallback = v.to_json()
    else:
        fallback = Verification("unverified", why).to_json()
    modules: list[str] = []
    try:
        found = _search(module, entry, path, program, config, limits, retrace, modules)
        if isinstance(found, str):
            fallback["detail"] += f"; not verified at a reduced size either: {found}"
            return fallback, limits.need(program) <= limits.bytes  # a larger budget may help
        t, lo, mod = found.payload
        v = check(t, lo, mod, budget)
        inputs = [{"name": s.name, "dtype": s.dtype, "shape": list(s.shape)} for s in t.input_specs]
        return reduced.annotate(v.to_json(), found, inputs, why), True
    except Exception as exc:  # a bug of ours costs the reduced run only, never the bounds
        fallback["detail"] += (f"; verifying at a reduced size failed ({type(exc).__name__}: {exc}); "
                               "please report it")
        return fallback, True
    finally:
        for name in modules:
            sys.modules.pop(name, None)


def _search(module: types.ModuleType, entry: Entry, path: str, program: Program, config: Config,
            limits: reduced.Limits, retrace: Retrace, modules: list[str]) -> reduced.Found | str:
    """Search the reduced sizes of a pragma entry (its symbols) or a ``get_inputs()`` file
    (its module-level size constants)."""
    dims = reduced.dims_of(program)

    def attempt(mod: types.ModuleType, ent: Entry) -> tuple[Program, Any] | str:
        try:
            p, t, lo = retrace(mod, ent)
        except EntryError as exc:
            return str(exc)
        except Exception as exc:  # user code failing at the smaller size
            return f"{type(exc).__name__}: {exc}"
        return p, (t, lo, mod)

    if entry.kind == "model":
        try:
            source = read_source(path)
            sites = reduced.module_sites(reduced.rewrite_module(source, path, {}))
        except (SourceError, SyntaxError, ValueError) as exc:
            return f"cannot read the file again: {exc}"

        def variant(f: int, floor: int, anon: bool) -> tuple[Any, dict[str, int]] | None:
            return reduced.shrink_module(sites, dims, f, floor, anon)

        def module_retrace(values: dict) -> tuple[Program, Any] | str:
            try:
                mod = _load_variant(path, reduced.rewrite_module(source, path, values), modules)
            except Exception as exc:  # the file's own code, run with smaller sizes
                return f"re-running the file failed: {type(exc).__name__}: {exc}"
            return attempt(mod, entry)
        anonymous = any(not s.name for s in sites)
        return reduced.search(program, limits, variant, module_retrace, anonymous)
    if not entry.pragma:
        return "the entry has no shape pragma whose sizes could shrink"
    return _search_pragma(module, entry, path, program, config, limits, attempt, dims)


def _search_pragma(module: types.ModuleType, entry: Entry, path: str, program: Program,
                   config: Config, limits: reduced.Limits, attempt: Callable, dims: set[int]
                   ) -> reduced.Found | str:
    """Search the reduced sizes of a pragma entry. When shrinking every size breaks the trace
    (the code ties a size to the pragma's: ``jnp.zeros((B, 128))`` beside ``w=f32[64, 128]``),
    search again shrinking only the sizes that shrink alone without changing the lowering."""
    def variant(ds: set[int]) -> Callable:
        return lambda f, floor, anon: _pragma_variant(entry, config, ds, f, floor, anon)

    def pragma_retrace(spec: tuple[str, dict]) -> tuple[Program, Any] | str:
        try:
            ent = _rediscover(path, entry, config, *spec)
        except (DiscoveryError, SourceError) as exc:
            return f"the reduced pragma does not parse: {exc}"
        return attempt(module, ent)

    def shrinks_alone(d: int) -> bool:
        made = _pragma_variant(entry, config, {d}, 2, reduced.FLOOR, False)
        got = None if made is None else pragma_retrace(made[0])
        return got is not None and not isinstance(got, str) and \
            reduced.signature(got[0]) == reduced.signature(program)
    # first with the integers of init=(...) shrunk like the shapes, then with them kept
    anonymous = bool(re.search(r"(^|,)\s*init\s*=", entry.pragma or ""))
    found = reduced.search(program, limits, variant(dims), pragma_retrace, anonymous)
    if not isinstance(found, str) or not found.startswith("at a reduced size"):
        return found
    free = {d for d in dims if d > reduced.KEEP and shrinks_alone(d)}
    if not free or free == {d for d in dims if d > reduced.KEEP}:
        return found
    again = reduced.search(program, limits, variant(free), pragma_retrace, anonymous)
    return again if not isinstance(again, str) else f"{found}; shrinking only {sorted(free)}: {again}"


def _pragma_variant(entry: Entry, config: Config, dims: set[int], f: int, floor: int, init: bool
                    ) -> tuple[tuple[str, dict], dict[str, int]] | None:
    """The shrunk pragma text and config dims, and the symbols that changed."""
    text = entry.pragma or ""
    used = {k: v for k, v in config.dims.items() if re.search(rf"\b{re.escape(k)}\b", text)
            and not re.search(rf"(^|,)\s*{re.escape(k)}\s*=", text)}  # the pragma's own wins
    new_dims = reduced.shrink_dims(used, dims, f, floor)
    named = {k: v for k, v in new_dims.items() if v != used[k]}
    got = reduced.shrink_pragma(text, dims, f, floor, init)
    if got is None and not named:
        return None
    new_text, own = got if got is not None else (text, {})
    return (new_text, {**config.dims, **new_dims}), {**named, **own}


def _rediscover(path: str, entry: Entry, config: Config, text: str, dims: dict) -> Entry:
    """The entry discovered again from a reduced pragma (given as a config entry, which takes
    the place of the comment)."""
    entries = discover(read_source(path), path, {"dims": dims, "entries": {**config.entries,
                                                                          entry.name: text}})
    for e in entries:
        if e.name == entry.name:
            return e
    raise DiscoveryError(f"{entry.name} is no longer an entry")


def _load_variant(path: str, tree: Any, modules: list[str]) -> types.ModuleType:
    """Execute a rewritten copy of the user's file as a separate module. Its code keeps the
    file's name and lines, so ops map to the same source lines."""
    name = f"solar_reduced_{next(_COUNTER)}"
    module = types.ModuleType(name)
    module.__file__ = os.path.realpath(path)
    sys.modules[name] = module
    modules.append(name)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(tree, os.path.realpath(path), "exec"), module.__dict__)  # noqa: S102
    return module
