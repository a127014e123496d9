"""Analysis results on disk (diskcache), keyed by what decides them: the file, the entry, the
hash of the entry's source closure, and the analysis settings (chip, policy, tool version).
A hit serves hints without running user code, across server restarts."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

import diskcache


class ResultCache:
    """Results and closure parts of entries in a diskcache directory (at most 512 MB)."""

    def __init__(self, directory: str):
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self._dc = diskcache.Cache(directory, size_limit=512 * 1024**2)

    @staticmethod
    def _key(*parts: Any) -> str:
        return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()

    def closure_extra(self, path: str, entry: str) -> list[str]:
        """Definitions the last trace of this entry ran through (the dynamic closure)."""
        return self.closure_parts(path, entry)[0]

    def closure_parts(self, path: str, entry: str) -> tuple[list[str], list[str]]:
        """(definitions the last trace ran through, user source files it imported): what
        the entry's closure hash covers besides its own text."""
        v = self._dc.get(self._key("extra", os.path.realpath(path), entry), [])
        if isinstance(v, dict):
            return list(v.get("defs", [])), list(v.get("files", []))
        return list(v), []  # written before files were recorded

    def set_closure_extra(self, path: str, entry: str, names: list[str], files: Sequence[str] = ()) -> None:
        self._dc.set(self._key("extra", os.path.realpath(path), entry),
                     {"defs": sorted(names), "files": sorted(files)})

    def _result_key(self, path: str, entry: str, closure: str, settings_key: str, phase: str) -> str:
        kind = "result" if phase == "final" else f"result-{phase}"
        return self._key(kind, os.path.realpath(path), entry, closure, settings_key)

    def get(self, path: str, entry: str, closure: str, settings_key: str, phase: str = "final") -> dict | None:
        """The stored result of ``phase`` (``final``, or ``bounds``: before verification)."""
        try:
            return self._dc.get(self._result_key(path, entry, closure, settings_key, phase))
        except Exception:  # a damaged cache file is a miss, not a failure
            return None

    def put(self, path: str, entry: str, closure: str, settings_key: str, record: dict,
            phase: str = "final") -> None:
        """Store the result of ``phase`` for the entry's closure and settings."""
        self._dc.set(self._result_key(path, entry, closure, settings_key, phase), record)

    def close(self) -> None:
        self._dc.close()
