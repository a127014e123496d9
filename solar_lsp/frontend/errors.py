"""What every frontend reports when an entry or an op cannot be handled.

Shared by the torch and JAX frontends (and everything above them), so that neither imports the
other and a JAX-only analysis never imports torch.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field

from solar_lsp.ir.core import Program


class EntryError(Exception):
    """A user-facing failure of one entry: the message says what happened and what to do."""

    def __init__(self, stage: str, message: str, line: int | None = None):
        super().__init__(message)
        self.stage = stage
        self.line = line


class Unsupported(Exception):
    """The op (or this use of it) has no lowering; the message says why."""


@dataclass
class UnsupportedOp:
    """One framework op left out of the IR, with its source line and the reason."""

    op: str
    line: int | None
    reason: str


@dataclass
class Lowered:
    """A frontend's result: the IR program and what it could not lower."""

    program: Program
    unsupported: list[UnsupportedOp] = field(default_factory=list)
    node_of_tensor: dict[str, str] = field(default_factory=dict)  # tensor -> framework node name
    # a repeated loop's owner op id -> for each step but the last, (body tensor, that step's
    # framework node) pairs (frontend/loops.py; the verifier checks every step on its own)
    loop_steps: dict[str, tuple] = field(default_factory=dict)


@functools.lru_cache(maxsize=4096)
def realpath(file: str) -> str:
    """``os.path.realpath``, once per file name: a 256-step loop's nodes carry 30,000 frames,
    and the build asks at every op."""
    return os.path.realpath(file)


def stack_line(path: str) -> int | None:
    """The innermost frame of the running stack in ``path``: the user's line that called
    into the tracer or the build."""
    frame = sys._getframe(1)
    while frame is not None:
        if realpath(frame.f_code.co_filename) == path:
            return frame.f_lineno
        frame = frame.f_back
    return None


def user_line(exc: BaseException, path: str) -> int | None:
    """The innermost line of ``path`` in the exception's traceback (the user's own line)."""
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if realpath(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None and isinstance(exc, SyntaxError):
        line = exc.lineno
    return line


def trace_error(exc: BaseException, what: str, path: str) -> EntryError:
    """A tracer's failure as the entry's error: ``what`` (e.g. "tracing the training step of
    Model failed"), the exception's kind and first line, and the user's line it came from."""
    text = str(exc).strip()
    msg = text.splitlines()[0] if text else ""
    return EntryError("trace", f"{what}: {type(exc).__name__}: {msg}", user_line(exc, path))
