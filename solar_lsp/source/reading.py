"""Reading a user's source file as Python does: PEP 263 coding lines honored, a BOM accepted,
and anything that is not text said plainly instead of as a decoding traceback."""

from __future__ import annotations

import io
import os
import tokenize


class SourceError(ValueError):
    """The file cannot be read as Python source; the message names the file and the place."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def read_source(path: str | os.PathLike) -> str:
    """The text of ``path``, decoded with its declared encoding (UTF-8 when none)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        raise SourceError(f"{path} is a directory, not a Python file") from None
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    return decode_source(data, str(path))


def decode_source(data: bytes, path: str = "<string>") -> str:
    """Decode source bytes the way the interpreter would (PEP 263), or raise SourceError."""
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise SourceError(f"cannot read {path}: it is a binary file (a NUL byte on line {line}), "
                          "not Python source", line)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown or inconsistent coding declaration
        raise SourceError(f"cannot read {path}: {exc.msg if hasattr(exc, 'msg') else exc}",
                          getattr(exc, "lineno", None)) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SourceError(
            f"cannot read {path}: not valid {encoding} at line {line}, col {col} (byte "
            f"0x{data[exc.start]:02x}); save the file as UTF-8 or declare its encoding on the "
            "first or second line, e.g. `# -*- coding: latin-1 -*-`", line) from None
    return text[1:] if text.startswith("\ufeff") else text
