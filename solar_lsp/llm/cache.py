"""Accepted translations on disk (diskcache), so an unchanged question is never asked twice.

The key is what the answer depends on: the mode, the entry or op, the shapes and dtypes,
the model id and the prompt version. The value keeps the hash of the source file it was
verified against: when the file changes the cached IR is verified again before it is used,
and a new request is made only when it fails.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from solar_lsp import __version__
from solar_lsp.llm.prompt import PROMPT_VERSION


def source_hash(source: str) -> str:
    """The hash a cached answer keeps of the source it was verified against."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def key(*parts: Any) -> str:
    """The cache key of a question: its parts plus the prompt and package versions."""
    blob = json.dumps([PROMPT_VERSION, __version__, *parts], sort_keys=True, default=str)
    return "llm:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


class TranslationCache:
    """A thin diskcache wrapper; a directory of None is an always-empty cache."""

    def __init__(self, directory: str | None):
        self._cache = None
        if directory:
            import diskcache
            self._cache = diskcache.Cache(directory)

    def get(self, k: str) -> dict | None:
        if self._cache is None:
            return None
        v = self._cache.get(k)
        return v if isinstance(v, dict) and isinstance(v.get("ir"), str) else None

    def put(self, k: str, ir: str, src_hash: str, model: str, usage: dict,
            cost: float | None) -> None:
        if self._cache is None:
            return
        self._cache.set(k, {"ir": ir, "source_hash": src_hash, "model": model, "usage": usage,
                            "cost_usd": cost, "created": time.time()})

    def touch(self, k: str, src_hash: str) -> None:
        """Record that the cached IR also passed against the source with ``src_hash``."""
        if self._cache is None:
            return
        v = self._cache.get(k)
        if isinstance(v, dict):
            self._cache.set(k, {**v, "source_hash": src_hash})

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
