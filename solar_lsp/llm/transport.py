"""The Anthropic client and the retry policy around one Messages API call.

Rate limits (429), overload (529), other 5xx, request timeouts (408) and connection failures
are retried with exponential backoff, honouring the server's ``retry-after``; anything else
(a bad request, a rejected key, an unknown model) fails at once. Either way the caller gets an
:class:`LLMError` whose message says what happened and never contains the key.
"""

from __future__ import annotations

import importlib
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from solar_lsp.llm.config import KEY_ENV, LLMConfig

log = logging.getLogger("solar_lsp.llm")

RETRY_STATUS = frozenset({408, 409, 429})  # plus every status >= 500 (529: overloaded)


class LLMError(Exception):
    """A translation could not be obtained; ``kind`` classifies it for the report."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind  # no-key | rate-limit | overloaded | server | timeout | connection | api


@dataclass
class CallStats:
    """What the retry policy went through for one call (reported with the translation)."""

    attempts: int = 0
    waits_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def http_module() -> ModuleType:
    """The httpx package the installed SDK is built on (``httpx``, or ``httpx2`` in SDK 2.x):
    an ``http_client`` given to the SDK must be an instance of its ``Client``."""
    import anthropic
    for cls in anthropic.DefaultHttpxClient.__mro__:
        root = cls.__module__.split(".")[0]
        if root.startswith("httpx"):
            return importlib.import_module(root)
    return importlib.import_module("httpx")


def make_client(cfg: LLMConfig) -> Any:
    """An ``anthropic.Anthropic`` client; the key comes from ``ANTHROPIC_API_KEY`` only.

    ``base_url=None`` lets the SDK use ``$ANTHROPIC_BASE_URL`` or its default endpoint."""
    key = os.environ.get(KEY_ENV, "").strip()
    if not key:
        raise LLMError("no-key", f"the LLM agent needs an API key: set {KEY_ENV} "
                                 "(nothing was sent)")
    import anthropic
    kwargs: dict[str, Any] = {"api_key": key, "max_retries": cfg.sdk_max_retries,
                              "timeout": cfg.timeout_s}
    if cfg.base_url:
        kwargs["base_url"] = cfg.base_url
    if cfg.http_client is not None:
        kwargs["http_client"] = cfg.http_client
    return anthropic.Anthropic(**kwargs)


def _describe(exc: Exception) -> tuple[str, str, bool, float | None]:
    """(kind, message, retryable, retry-after seconds) of an SDK exception."""
    import anthropic
    if isinstance(exc, anthropic.APITimeoutError):
        return "timeout", "the request timed out", True, None
    if isinstance(exc, anthropic.APIConnectionError):
        return "connection", f"could not connect to the API ({exc.message})", True, None
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        body = exc.body if isinstance(exc.body, dict) else {}
        err = body.get("error") if isinstance(body.get("error"), dict) else {}
        etype = err.get("type") or ""
        emsg = err.get("message") or ""
        if status == 429:
            kind, what = "rate-limit", "rate limit reached"
        elif status == 529 or etype == "overloaded_error":
            kind, what = "overloaded", "the API is overloaded"
        elif status >= 500:
            kind, what = "server", "server error"
        elif status == 408:
            kind, what = "timeout", "the request timed out"
        elif status in (401, 403):
            kind, what = "api", "the API rejected the key"
        else:
            kind, what = "api", "the API refused the request"
        detail = " ".join(x for x in (etype, emsg) if x)
        rid = exc.response.headers.get("request-id") if exc.response is not None else None
        msg = f"{what} (HTTP {status}{': ' + detail if detail else ''})"
        if rid:
            msg += f", request id {rid}"
        retry_after = None
        if exc.response is not None:
            try:
                retry_after = float(exc.response.headers.get("retry-after", ""))
            except ValueError:
                retry_after = None
        return kind, msg, status in RETRY_STATUS or status >= 500, retry_after
    return "api", f"{type(exc).__name__}: {exc}", False, None


def create_message(client: Any, cfg: LLMConfig, request: dict, stats: CallStats,
                   sleep: Callable[[float], None] = time.sleep) -> Any:
    """``client.messages.create(**request)`` under the retry policy of ``cfg``."""
    import anthropic
    t0 = time.perf_counter()
    for attempt in range(cfg.retries + 1):
        stats.attempts += 1
        try:
            return client.messages.create(**request)
        except anthropic.APIError as exc:
            kind, msg, retryable, retry_after = _describe(exc)
            stats.errors.append(msg)
            if not retryable:
                raise LLMError(kind, msg) from None
            if attempt == cfg.retries:
                spent = time.perf_counter() - t0
                raise LLMError(kind, f"{msg}; gave up after {stats.attempts} attempt(s) over "
                                     f"{spent:.1f} s — try again later") from None
            wait = retry_after if retry_after is not None and retry_after >= 0 else (
                cfg.backoff_s * 2 ** attempt * (0.75 + 0.25 * random.random()))
            wait = min(wait, cfg.max_backoff_s)
            stats.waits_s.append(wait)
            log.warning("LLM request failed: %s; retrying in %.2f s (attempt %d of %d)",
                        msg, wait, attempt + 1, cfg.retries + 1)
            sleep(wait)
    raise AssertionError("unreachable")
