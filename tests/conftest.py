"""Shared helpers of the pipeline, CLI and bad-input tests."""

from __future__ import annotations

import functools
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "models"
EXAMPLES = ROOT / "examples"
CORPUS = ROOT / "tests" / "corpus"


def model_path(name: str) -> str:
    return str(MODELS / name)


def example_path(name: str) -> str:
    return str(EXAMPLES / name)


@functools.cache
def analyzed(path: str, verify: bool = False, hw: tuple[str, ...] = ("h100-sxm",),
             target_s: float | None = None):
    """analyze_file once per (path, options) and test session; callers must not mutate."""
    from solar_lsp.pipeline.analyze import Config, analyze_file

    return analyze_file(path, Config(hw=list(hw), verify=verify, target_s=target_s))


def only_entry(report):
    assert report.error is None, report.error
    assert len(report.entries) == 1, [e.name for e in report.entries]
    return report.entries[0]


def line_of(path: str, text: str) -> int:
    """1-based number of the only line of ``path`` that contains ``text``."""
    hits = [i for i, ln in enumerate(pathlib.Path(path).read_text().splitlines(), 1) if text in ln]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def write(tmp_path: pathlib.Path, name: str, source: str) -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(source).lstrip("\n"))
    return str(p)


def run_solar(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m solar_lsp.cli.main ARGS`` in a fresh interpreter, from the repository root."""
    env = dict(os.environ, COLUMNS="160")
    return subprocess.run([sys.executable, "-m", "solar_lsp.cli.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def json(self) -> dict:
        return json.loads(self.out)


@pytest.fixture
def cli(capfd):
    """Run ``solar_lsp.cli.main(argv)`` in-process; returns exit code and captured output."""
    from solar_lsp.cli.main import main

    def run(*argv: str) -> CliResult:
        capfd.readouterr()
        code = main(list(argv))
        out, err = capfd.readouterr()
        return CliResult(code, out, err)

    return run


@pytest.fixture(scope="session")
def h100():
    from solar_lsp.hardware.chips import load_chip

    return load_chip("h100-sxm")


@functools.cache
def corpus_entry(name: str, verify: bool = True):
    """The one entry of a corpus file, analyzed once per test session."""
    from solar_lsp.pipeline.analyze import Config, analyze_file
    r = analyze_file(str(CORPUS / name), Config(verify=verify))
    assert r.error is None, r.error
    assert len(r.entries) == 1
    return r.entries[0]


def traced_file(path: str):
    """The first entry of the file at ``path``: (traced, lowered, module, entry), as the
    pipeline makes them; for tests that drive the verifier themselves."""
    import importlib.util

    from solar_lsp.frontend.torch.lower import lower
    from solar_lsp.frontend.torch.trace import trace
    from solar_lsp.source.discover import discover
    from solar_lsp.source.reading import read_source

    spec = importlib.util.spec_from_file_location(pathlib.Path(path).stem + "_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entry = discover(read_source(path), path, {})[0]
    traced = trace(module, entry, path)
    return traced, lower(traced), module, entry


def short_reduction(program) -> str:
    """Plant a bug in ``program``: the first compute op with a reduction loses the last term of
    every sum (its last kernel's first reduction loop one shorter); returns that op's id."""
    import dataclasses

    op = next(op for op in program.ops if op.kind == "compute" and op.kernels[-1].reduce_vars)
    k = op.kernels[-1]
    red = sorted(k.reduce_vars)[0]
    op.kernels[-1] = dataclasses.replace(k, loops=tuple((v, n - 1 if v == red else n) for v, n in k.loops))
    return op.id


# ---------------------------------------------------------------------------------------------
# Parallel runs (pytest -n N): tests marked `serial` measure this machine (the host probe, timed
# runs against its bounds), so nothing else may run beside them. Every test holds a shared lock
# on one file for its duration; a serial test holds it exclusively.

_LOCK = pathlib.Path(os.environ.get("PYTEST_XDIST_TESTRUNUID", "solar")).name


@pytest.fixture(autouse=True)
def _serial_lock(request, tmp_path_factory):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    import fcntl
    path = tmp_path_factory.getbasetemp().parent / f"serial-{_LOCK}.lock"
    exclusive = request.node.get_closest_marker("serial") is not None
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
