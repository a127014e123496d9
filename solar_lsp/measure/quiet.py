"""Keep the profiler's native chatter out of the user's terminal.

torch's Kineto profiler prints ``USDT: … profiler_start`` / ``profiler_stop`` lines from C++
straight to file descriptor 2, past Python's ``sys.stderr`` and past ``KINETO_LOG_LEVEL``. Around a
profiled call the descriptor is pointed at a temporary file; afterwards every line that is not
that chatter is written back, so real warnings still reach the user.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

_NOISE = re.compile(r"^USDT:.*profiler_(start|stop)\s*$|^\s*$")


@contextlib.contextmanager
def profiler_quiet() -> Iterator[None]:
    """Run the block with fd 2 captured; re-emit what the profiler did not print."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # no real stderr (captured): nothing to guard
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            kept = [ln for ln in tmp.read().decode("utf-8", "replace").splitlines()
                    if not _NOISE.match(ln)]
            if kept:
                sys.stderr.write("\n".join(kept) + "\n")
