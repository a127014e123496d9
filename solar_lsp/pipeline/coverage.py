"""``solar coverage DIR``: analyze and verify every file of a corpus in one process.

This is the operator-coverage gate: a corpus file passes when each of its entries was
analyzed, verified against torch, and has no op without a lowering. All files run in the
calling process (torch and numba are imported once), so one file's user code is isolated
only as far as Python allows: exceptions and ``sys.exit`` become that file's error, a file
that runs past its time limit is interrupted by SIGALRM, and torch's global state (default
dtype, grad mode, seed) is restored after each file. A segfault in native code still ends
the process; ``faulthandler`` then prints the Python stack, which names the file.
See docs/coverage.md.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from solar_lsp.defaults import DEFAULT_FILE_TIMEOUT_S
from solar_lsp.pipeline.limits import FileTimeout, time_limit
from solar_lsp.pipeline.report import EntryReport, FileReport

DEFAULT_TIMEOUT_S = DEFAULT_FILE_TIMEOUT_S
# top-level stages of one entry (analyze.py); finer timings such as fusion_plan_s lie inside sol_s
ENTRY_STAGES = ("trace_s", "lower_s", "sol_s", "verify_s")


@dataclass
class EntryResult:
    """One entry of a corpus file, reduced to what coverage judges."""

    name: str
    line: int
    status: str  # ok | error
    verification: str  # verified | mismatch | unverified
    detail: str = ""
    error: str | None = None
    error_line: int | None = None
    unsupported: list[dict] = field(default_factory=list)  # {op, line, reason}
    flops: int | None = None
    tensor_flops: int | None = None
    tensor_flops_dense: int | None = None  # with masked points (what FlopCounterMode counts)
    bytes: int | None = None  # unfused DRAM bytes: every tensor once in and out of each op
    seconds: float = 0.0

    def passed(self, verify: bool) -> bool:
        return (self.status == "ok" and not self.unsupported
                and (self.verification == "verified" or not verify))

    def to_json(self) -> dict:
        return {"name": self.name, "line": self.line, "status": self.status,
                "verification": self.verification, "detail": self.detail, "error": self.error,
                "error_line": self.error_line, "unsupported": self.unsupported,
                "flops": self.flops, "tensor_flops": self.tensor_flops,
                "tensor_flops_dense": self.tensor_flops_dense, "bytes": self.bytes,
                "seconds": self.seconds}


@dataclass
class FileResult:
    """Coverage of one file; ``report`` keeps the full analysis for callers (not in JSON)."""

    file: str
    entries: list[EntryResult] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    report: FileReport | None = field(default=None, repr=False, compare=False)

    @property
    def analyzed(self) -> int:
        return sum(e.status == "ok" for e in self.entries)

    @property
    def verified(self) -> int:
        return sum(e.verification == "verified" for e in self.entries)

    @property
    def unsupported(self) -> list[dict]:
        return [{"entry": e.name, **u} for e in self.entries for u in e.unsupported]

    @property
    def errors(self) -> list[str]:
        """The file's own error and each failed entry's, as one line each."""
        out = [self.error] if self.error else []
        for e in self.entries:
            if e.status != "ok":
                where = f" (line {e.error_line})" if e.error_line else ""
                out.append(f"{e.name}{where}: {e.error}")
        return out

    def passed(self, verify: bool) -> bool:
        """A file with no entry at all fails: a corpus file that analyzes nothing is a mistake."""
        return (self.error is None and bool(self.entries)
                and all(e.passed(verify) for e in self.entries))

    def to_json(self, verify: bool) -> dict:
        return {"file": self.file, "passed": self.passed(verify), "entries": len(self.entries),
                "analyzed": self.analyzed, "verified": self.verified,
                "unsupported": self.unsupported, "errors": self.errors, "seconds": self.seconds,
                "detail": [e.to_json() for e in self.entries]}


@dataclass
class CoverageResult:
    """A corpus run: every file's result, the summary and the exit code it earns."""

    root: str
    hardware: str
    verify: bool
    files: list[FileResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.files) and all(f.passed(self.verify) for f in self.files)

    @property
    def exit_code(self) -> int:
        """0 only when every file passed (and there was at least one file), else 1."""
        return 0 if self.ok else 1

    def summary(self) -> dict:
        times = [f.seconds for f in self.files]
        kinds: dict[str, dict[str, Any]] = {}
        for f in self.files:
            for u in f.unsupported:
                k = kinds.setdefault(u["op"], {"count": 0, "files": []})
                k["count"] += 1
                if f.file not in k["files"]:
                    k["files"].append(f.file)
        status: dict[str, int] = {}
        for f in self.files:
            for e in f.entries:
                status[e.verification] = status.get(e.verification, 0) + 1
        return {
            "files": len(self.files),
            "files_passed": sum(f.passed(self.verify) for f in self.files),
            "file_errors": sum(f.error is not None for f in self.files),
            "entries": sum(len(f.entries) for f in self.files),
            "analyzed": sum(f.analyzed for f in self.files),
            "verified": sum(f.verified for f in self.files),
            "verification": dict(sorted(status.items())),
            "unsupported_ops": dict(sorted(kinds.items(), key=lambda kv: (-kv[1]["count"], kv[0]))),
            "time_total_s": sum(times),
            "time_median_s": statistics.median(times) if times else None,
            "time_p95_s": percentile(times, 95) if times else None,
        }

    def to_json(self) -> dict:
        from solar_lsp import __version__
        return {"tool": {"name": "solar-lsp", "version": __version__}, "root": self.root,
                "hardware": self.hardware, "verify": self.verify, "ok": self.ok,
                "summary": self.summary(), "files": [f.to_json(self.verify) for f in self.files]}


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile: a value that was measured, never an interpolation."""
    s = sorted(values)
    if not s:
        raise ValueError("percentile of no values")
    k = max(1, math.ceil(q / 100 * len(s)))
    return s[min(k, len(s)) - 1]


def corpus_files(root: str) -> list[str]:
    """Every ``*.py`` under ``root`` (recursively, sorted), or ``root`` itself if it is a file.
    Names starting with ``_`` or ``test_`` (package markers, helpers, tests) are not corpus."""
    if os.path.isfile(root):
        return [root]
    out = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "_")))
        out += [os.path.join(d, n) for n in names
                if n.endswith(".py") and not n.startswith(("_", "test_"))]
    return sorted(out)


def entry_result(e: EntryReport) -> EntryResult:
    """What coverage keeps of an entry's report."""
    v = e.verification or {}
    t = e.totals or {}
    return EntryResult(name=e.name, line=e.line, status=e.status,
                       verification=v.get("status", "unverified"), detail=v.get("detail", ""),
                       error=e.error, error_line=e.error_line, unsupported=list(e.unsupported),
                       flops=t.get("flops"), tensor_flops=t.get("tensor_flops"),
                       tensor_flops_dense=t.get("tensor_flops_dense", t.get("tensor_flops")),
                       bytes=t.get("bytes_unfused"),
                       seconds=sum(e.timings.get(k, 0.0) for k in ENTRY_STAGES))


def file_result(report: FileReport, seconds: float) -> FileResult:
    """What coverage keeps of a file's report (the report itself rides along, not in JSON)."""
    res = FileResult(file=report.file, entries=[entry_result(e) for e in report.entries],
                     error=report.error, seconds=seconds, report=report)
    if res.error is None and not res.entries:
        res.error = "no entry points found (Model/get_inputs or a `# solar:` pragma)"
    return res


@contextlib.contextmanager
def _torch_state() -> Iterator[None]:
    """Undo what a user file may change globally, so one file cannot skew the next."""
    import torch
    dtype, grad, rng = torch.get_default_dtype(), torch.is_grad_enabled(), torch.get_rng_state()
    try:
        yield
    finally:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        torch.set_rng_state(rng)


def cover_file(path: str, config: Any, chips: list, timeout_s: float | None = DEFAULT_TIMEOUT_S
               ) -> FileResult:
    """Analyze one file; never raises for anything the file's code does (but KeyboardInterrupt).
    User prints go nowhere, so ``--json`` output stays one clean document."""
    from solar_lsp.pipeline.analyze import analyze_file
    t0 = time.perf_counter()
    report: FileReport | None = None
    error = None
    try:
        with _torch_state(), time_limit(timeout_s), contextlib.redirect_stdout(io.StringIO()):
            report = analyze_file(path, config, chips)
    except FileTimeout:
        error = f"timed out after {timeout_s:g} s (the rest of the file was not analyzed)"
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: any failure is a message
        error = f"analysis crashed: {type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - t0
    if report is None:
        return FileResult(file=path, error=error, seconds=seconds)
    return file_result(report, seconds)


Progress = Callable[[int, int, str, "FileResult | None"], None]


def _warm_up(verify: bool) -> None:
    """Pay the once-per-process costs (the tracer's tables, numba) before the first file's clock and
    time limit start, so per-file times compare files, not process start-up."""
    from solar_lsp.frontend.torch.trace import warm_up
    warm_up()
    if verify:
        from solar_lsp.ir import execute
        execute.warm_up()  # numba's import and CPU target, once: every file then runs compiled


def run_coverage(root: str, config: Any = None, chips: list | None = None,
                 timeout_s: float | None = DEFAULT_TIMEOUT_S,
                 progress: Progress | None = None, files: list[str] | None = None
                 ) -> CoverageResult:
    """Cover every corpus file under ``root`` (or the given ``files``), in order.
    ``progress(i, n, path, result)`` is called before (result None) and after each file."""
    from solar_lsp.hardware.chips import load_chips
    from solar_lsp.pipeline.analyze import Config
    config = config or Config()
    chips = chips if chips is not None else load_chips(config.hw)
    paths = files if files is not None else corpus_files(root)
    result = CoverageResult(root=root, hardware=chips[0].name, verify=config.verify)
    _warm_up(config.verify)
    fault_was_on = faulthandler.is_enabled()
    if not fault_was_on:
        with contextlib.suppress(Exception):  # no usable stderr (e.g. captured): no fault dump
            faulthandler.enable(file=sys.stderr)
    try:
        for i, p in enumerate(paths):
            if progress:
                progress(i, len(paths), p, None)
            fr = cover_file(p, config, chips, timeout_s)
            result.files.append(fr)
            if progress:
                progress(i + 1, len(paths), p, fr)
    finally:
        if not fault_was_on:
            faulthandler.disable()
    return result
