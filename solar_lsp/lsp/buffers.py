"""The file a worker runs for a document: the file itself when the buffer is saved, a copy
of the buffer with the same file name when it is not, and for a document that is no file at
all (``untitled:Untitled-1``, a new buffer never saved) a ``.py`` file with the buffer's text in
a temporary folder only this server process can read."""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import shutil
import tempfile
from urllib.parse import unquote, urlparse


def is_file_uri(uri: str) -> bool:
    """Whether ``uri`` names a file on disk (``file:``), as opposed to an editor buffer."""
    return urlparse(uri).scheme == "file"


@functools.cache
def _private_dir() -> str:
    d = tempfile.mkdtemp(prefix="solar-lsp-untitled-")  # mode 0700
    atexit.register(shutil.rmtree, d, True)
    return d


def untitled_path(uri: str) -> str:
    """Where the buffer of a non-file document ``uri`` is written for analysis: a ``.py`` file
    named after the buffer in a folder of its own (two buffers never share one)."""
    parsed = urlparse(uri)
    name = os.path.basename(unquote(parsed.path or parsed.netloc or "")) or "untitled"
    stem = re.sub(r"[^\w.-]", "_", name.removesuffix(".py"))[:80] or "untitled"
    folder = os.path.join(_private_dir(), hashlib.sha256(uri.encode()).hexdigest()[:16])
    return os.path.join(folder, f"{stem}.py")


def is_untitled_path(path: str | None) -> bool:
    """Whether ``path`` is the stand-in file of a non-file document (see :func:`untitled_path`)."""
    if not path:
        return False
    return os.path.realpath(path).startswith(os.path.realpath(_private_dir()) + os.sep)


def _on_disk(path: str, text: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == text
    except (OSError, UnicodeDecodeError):
        return False


def _write(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def runnable_path(cache_dir: str, path: str, text: str) -> str:
    """The file a worker runs for the buffer ``text`` of ``path``: the file itself when the
    buffer is saved (or ``path`` is a non-file document's stand-in, rewritten with ``text``),
    else a copy of the buffer with the same file name under ``cache_dir``."""
    if is_untitled_path(path):
        return path if _on_disk(path, text) else _write(path, text)
    if _on_disk(path, text):
        return path
    d = os.path.join(cache_dir, "buffers", hashlib.sha256(path.encode()).hexdigest()[:16])
    return _write(os.path.join(d, os.path.basename(path)), text)
