"""Time limits on analyses that run user code in the calling process (CLI, coverage)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


class FileTimeout(BaseException):
    """Raised by SIGALRM inside a file's analysis. A BaseException, so that the pipeline's
    ``except Exception`` handlers (which turn user errors into messages and carry on with the
    next entry) do not swallow it."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise FileTimeout after ``seconds``. SIGALRM works only in the main thread of a POSIX
    process; elsewhere there is no limit. Native code (a long torch op, a numba kernel) is
    interrupted only when it returns to Python."""
    usable = (seconds and seconds > 0 and hasattr(signal, "SIGALRM")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise FileTimeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
