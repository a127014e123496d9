"""Worker processes for the server: pre-warmed, one job each at a time, killed and replaced
when a job hangs, crashes or is superseded. The server's event loop only awaits pipes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_EXC = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b")
MAX_START_FAILURES = 3  # workers that die while starting in a row before jobs fail with why
WORKER_PYTHON_ENV = "SOLAR_LSP_WORKER_PYTHON"
LLM_JOB_TIMEOUT_S = 600.0
# a job that fits symbolic formulas analyzes the entry again at up to MAX_ANALYSES (30) sizes
# (pipeline/symbolic.py), each without verification: ten times one analysis's limit
SYMBOLIC_TIMEOUT_FACTOR = 10


def worker_python() -> str:
    """The interpreter workers run on: ``$SOLAR_LSP_WORKER_PYTHON`` (e.g. the project's
    virtual environment) or the server's own."""
    return os.environ.get(WORKER_PYTHON_ENV) or sys.executable


def _tail(stderr: collections.deque, status: str) -> str:
    """Why a worker did not start, for a message: the exception line of its traceback first,
    then its exit status and the last lines it wrote."""
    lines = [s.strip() for s in stderr if s.strip().strip("^~ ")]
    if not lines:
        return f"{status}; it wrote nothing"
    exc = next((s for s in reversed(lines) if _EXC.match(s)), None)
    tail = " | ".join(s for s in lines[-4:] if s != exc)[-400:]
    return f"{exc} ({status}; last output: {tail})" if exc else f"{status}; last output: {tail}"


class JobFailed(Exception):
    """A job ended without a result; ``line`` is where in the user's file, when known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


class JobCancelled(Exception):
    """A newer job for the same document superseded this one."""


@dataclass(eq=False)
class _Proc:
    proc: asyncio.subprocess.Process
    messages: asyncio.Queue = field(default_factory=asyncio.Queue)
    stderr: collections.deque = field(default_factory=lambda: collections.deque(maxlen=400))
    tasks: list = field(default_factory=list)
    warmup_s: float | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()


@dataclass
class _Job:
    key: str
    request: dict
    on_message: Callable[[dict], Awaitable[None] | None] | None
    future: asyncio.Future
    proc: _Proc | None = None


class Pool:
    """``size`` warm workers. :meth:`run` sends a request and returns the final reply."""

    def __init__(self, size: int = 1, timeout_s: float = 60.0, memory_bytes: int = 0,
                 log: Callable[[str], None] | None = None, jax: bool = False):
        self.size = size
        self.timeout_s = timeout_s
        self.memory_bytes = memory_bytes
        self.jax = jax
        self.log = log or (lambda msg: None)
        self._idle: asyncio.Queue[_Proc] = asyncio.Queue()
        self._procs: set[_Proc] = set()
        self._running: dict[str, _Job] = {}
        self._ids = itertools.count(1)
        self._closed = False
        self.started = 0  # workers started over the pool's life (tests read it)
        self.start_timeout_s = max(120.0, 2 * timeout_s)
        self._start_failures = 0
        self._spawning = 0  # _spawn loops in progress
        self.broken: str | None = None  # why workers cannot start, after MAX_START_FAILURES tries
        self.jobs = 0  # jobs sent to a worker

    # ---- workers
    async def start(self) -> None:
        """Start the workers in the background; jobs wait for the first one that is ready."""
        for _ in range(self.size):
            asyncio.ensure_future(self._spawn())

    async def _spawn(self) -> None:
        """Start one worker; retry a worker that dies while starting, at most
        ``MAX_START_FAILURES`` times in a row, then give up until the next job (see :meth:`run`)."""
        self._spawning += 1
        try:
            while not self._closed and self.broken is None:
                p, why = await self._start_one()
                if p is not None:
                    self._start_failures = 0
                    self._idle.put_nowait(p)
                    return
                self._start_failures += 1
                self.log(f"a worker could not start ({self._start_failures}/{MAX_START_FAILURES}): {why}")
                if self._start_failures >= MAX_START_FAILURES:
                    self._give_up(why)
                    return
                await asyncio.sleep(1.0)
        finally:
            self._spawning -= 1

    async def _start_one(self) -> tuple[_Proc | None, str]:
        """A warm worker, or None and why it did not start (the last lines it wrote)."""
        python = worker_python()
        args = [python, "-m", "solar_lsp.lsp.worker", "--memory", str(self.memory_bytes)]
        if self.jax:
            args.append("--jax")
        try:
            proc = await asyncio.create_subprocess_exec(
                *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True, limit=1 << 28)
        except OSError as exc:
            return None, f"cannot run {python}: {exc}"
        self.started += 1
        p = _Proc(proc)
        self._procs.add(p)
        p.tasks = [asyncio.ensure_future(self._read_out(p)), asyncio.ensure_future(self._read_err(p))]
        try:
            msg = await asyncio.wait_for(p.messages.get(), self.start_timeout_s)
        except TimeoutError:
            msg = False
        if not msg or msg.get("type") != "ready":
            if msg is None:  # stdout closed: let stderr drain so the reason is complete
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.gather(*p.tasks[1:], proc.wait()), 2.0)
            self._drop(p)
            if msg is False:
                return None, _tail(p.stderr, f"not ready after {self.start_timeout_s:g} s")
            return None, _tail(p.stderr, _signal_name(proc.returncode))
        p.warmup_s = msg.get("warmup_s")
        self.log(f"worker {p.pid} ready after {p.warmup_s:.1f} s")
        return p, ""

    def job_timeout(self, request: dict) -> float:
        """The job's time limit: ``timeout``; ``SYMBOLIC_TIMEOUT_FACTOR`` times that for a job
        that fits formulas (setting ``symbolic``, the "SOL at S=…" lens); for a job that may ask
        the LLM agent at least LLM_JOB_TIMEOUT_S (up to three rounds of 120 s requests, with retries; a job killed
        half-way caches nothing and would pay for the same requests again)."""
        if (request.get("config") or {}).get("llm"):
            return max(self.timeout_s, LLM_JOB_TIMEOUT_S)
        fits = request.get("kind") == "sol_at" and not request.get("symbolic")
        if fits or (request.get("kind") == "analyze" and (request.get("config") or {}).get("symbolic")):
            return self.timeout_s * SYMBOLIC_TIMEOUT_FACTOR  # the fit analyzes again at ~20 sizes
        return self.timeout_s

    def _give_up(self, why: str) -> None:
        """Fail every job waiting for a worker with the reason; the next job tries again."""
        self.broken = (f"the analysis worker could not start: {why}. Interpreter: {worker_python()} "
                       f"(${WORKER_PYTHON_ENV} chooses another); it is tried again on the next save "
                       "or solar.reanalyze")
        self.log(self.broken)
        if self._procs:  # another worker is up and will take the waiting jobs
            return
        for job in list(self._running.values()):
            if job.proc is None and not job.future.done():
                job.future.set_exception(JobFailed(self.broken))

    async def _read_out(self, p: _Proc) -> None:
        while True:
            line = await p.proc.stdout.readline()
            if not line:
                p.messages.put_nowait(None)
                return
            try:
                p.messages.put_nowait(json.loads(line))
            except json.JSONDecodeError:
                p.stderr.append(line.decode(errors="replace").rstrip())

    async def _read_err(self, p: _Proc) -> None:
        while True:
            line = await p.proc.stderr.readline()
            if not line:
                return
            p.stderr.append(line.decode(errors="replace").rstrip())

    def _drop(self, p: _Proc) -> None:
        p.kill()
        self._procs.discard(p)

    def _replace(self, p: _Proc) -> None:
        self._drop(p)
        asyncio.ensure_future(self._spawn())

    # ---- jobs
    def running(self, key: str) -> bool:
        """Whether the job of ``key`` is in a worker now (not waiting for one)."""
        job = self._running.get(key)
        return job is not None and job.proc is not None

    def cancel(self, key: str) -> None:
        """Cancel the job of ``key``; a worker mid-way through it is killed and replaced."""
        job = self._running.pop(key, None)
        if job is None:
            return
        if not job.future.done():
            job.future.set_exception(JobCancelled())
        if job.proc is not None:  # running: the worker is mid-way through user code
            self._replace(job.proc)

    async def run(self, key: str, request: dict,
                  on_message: Callable[[dict], Awaitable[None] | None] | None = None) -> dict:
        """Run ``request`` on a worker; a newer job with the same key supersedes this one."""
        self.cancel(key)
        if self.broken is not None and not self._closed:  # a new user action: try again
            self.broken = None
            self._start_failures = 0
            for _ in range(max(self.size - len(self._procs) - self._spawning, 0)):
                asyncio.ensure_future(self._spawn())
        loop = asyncio.get_running_loop()
        job = _Job(key, dict(request), on_message, loop.create_future())
        self._running[key] = job
        runner = asyncio.ensure_future(self._drive(job))
        try:
            return await job.future
        except asyncio.CancelledError:  # the caller gave up: stop the work, free the worker
            if self._running.get(key) is job:
                self.cancel(key)
            raise
        finally:
            if self._running.get(key) is job:
                del self._running[key]
            runner.cancel()

    async def _drive(self, job: _Job) -> None:
        proc = await self._idle.get()
        if job.future.done():  # superseded while waiting for a worker
            self._idle.put_nowait(proc)
            return
        job.proc = proc
        self.jobs += 1
        rid = next(self._ids)
        timeout = self.job_timeout(job.request)
        req = {**job.request, "id": rid, "timeout_s": timeout}
        try:
            proc.proc.stdin.write((json.dumps(req) + "\n").encode())
            await proc.proc.stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._replace(proc)
            job.future.set_exception(JobFailed(f"the analysis process could not take the job: {exc}"))
            return
        await self._follow(job, proc, rid, timeout)

    async def _follow(self, job: _Job, proc: _Proc, rid: int, timeout: float) -> None:
        """Pass the worker's messages for request ``rid`` on until its reply, its time limit
        or its death ends the job."""
        deadline = loop_time() + timeout
        path = job.request.get("path", "")
        while True:
            remaining = deadline - loop_time()
            try:
                msg = await asyncio.wait_for(proc.messages.get(), max(remaining, 0.01))
            except TimeoutError:
                self._timed_out(job, proc, path, timeout)
                return
            if msg is None:  # the worker died
                await self._died(job, proc, path)
                return
            if msg.get("id") != rid:
                continue
            if msg["type"] in ("result", "error"):
                job.proc = None
                self._idle.put_nowait(proc)
                if job.future.done():
                    return
                if msg["type"] == "error":
                    job.future.set_exception(JobFailed(f"analysis failed: {msg.get('message')}"))
                else:
                    job.future.set_result(msg)
                return
            if job.on_message is not None and not job.future.done():
                r = job.on_message(msg)
                if asyncio.iscoroutine(r):
                    await r

    def _timed_out(self, job: _Job, proc: _Proc, path: str, timeout: float) -> None:
        """Replace the worker that ran past the limit; the job fails with the line it was at."""
        line = _user_line(proc.stderr, path)
        self._replace(proc)
        if not job.future.done():
            where = f" (it was running line {line})" if line else ""
            job.future.set_exception(JobFailed(
                f"analysis took longer than {timeout:g} s and was stopped{where}; "
                "code that loops forever at import or in forward does this "
                "(raise solar.timeout for a slow model)", line))

    async def _died(self, job: _Job, proc: _Proc, path: str) -> None:
        """Replace the worker that crashed; the job fails with the line and its last output."""
        code = await proc.proc.wait()
        line = _user_line(proc.stderr, path)
        tail = [s for s in proc.stderr if s.strip()][-3:]
        self._replace(proc)
        sig = _signal_name(code)
        if not job.future.done():
            where = f" at line {line}" if line else ""
            job.future.set_exception(JobFailed(
                f"the analysis process crashed ({sig}){where} while running this file's "
                f"code; it was restarted. Last output: {' | '.join(tail)[-300:]}", line))

    async def close(self) -> None:
        """Cancel every job and kill every worker; the pool takes no more jobs."""
        self._closed = True
        for key in list(self._running):
            self.cancel(key)
        for p in list(self._procs):
            self._drop(p)

    def pids(self) -> list[int]:
        """Process ids of the live workers."""
        return [p.pid for p in self._procs]


def loop_time() -> float:
    """The running event loop's clock (the deadlines of jobs are on it)."""
    return asyncio.get_running_loop().time()


def _signal_name(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def _user_line(stderr: collections.deque, path: str) -> int | None:
    """Innermost frame in the analyzed file from the last faulthandler dump (which lists the
    most recent call first)."""
    if not path:
        return None
    real = os.path.realpath(path)
    lines = list(stderr)
    starts = [i for i, t in enumerate(lines) if "most recent call first" in t]
    for text in lines[starts[-1]:] if starts else reversed(lines):
        m = _FRAME.search(text)
        if m and os.path.realpath(m.group(1)) == real:
            return int(m.group(2))
    return None


def request(path: str, origin: str, config: dict, entries: list[str] | None = None,
            kind: str = "analyze") -> dict[str, Any]:
    """A job for a worker: run ``kind`` on the file ``path`` (a buffer copy of ``origin``)."""
    return {"kind": kind, "path": path, "origin": origin, "config": config, "entries": entries}
