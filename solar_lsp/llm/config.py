"""Settings of the LLM agent. Holding one is the opt-in: ``Config.llm is None`` sends nothing.

The API key is never stored here; the client reads it from the environment when it is made.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MODEL = "claude-sonnet-4-5"
KEY_ENV = "ANTHROPIC_API_KEY"


def default_cache_dir() -> str:
    """``$SOLAR_CACHE_DIR/llm`` (default ``~/.cache/solar-lsp/llm``), beside the numba cache."""
    root = os.environ.get("SOLAR_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                              "solar-lsp")
    return os.path.join(root, "llm")


@dataclass
class LLMConfig:
    """How the agent is asked: model, rounds, retries, cache, and the verification limit."""

    model: str = DEFAULT_MODEL
    max_rounds: int = 3  # conversation rounds per translation (a failed round feeds back)
    max_tokens: int = 8192  # per response; an IR program of a few ops is 1-3k tokens
    dry_run: bool = False  # build the requests, send nothing, report them
    timeout_s: float = 120.0  # per HTTP request
    sdk_max_retries: int = 0  # the SDK's own retries; 0 leaves retrying to the policy below
    retries: int = 4  # our retries of 429/529/5xx/timeouts after the first attempt
    backoff_s: float = 1.0  # first wait when the server names none; doubles per retry
    max_backoff_s: float = 30.0  # cap on any wait, a server's retry-after included
    cache_dir: str | None = None  # None: default_cache_dir(); "" turns the cache off
    base_url: str | None = None  # None: the SDK's default, or $ANTHROPIC_BASE_URL
    verify_limit_points: float = 1e9  # loop points a whole-entry check may execute
    # an httpx client for the SDK (a proxy, or a replaying transport in tests)
    http_client: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMConfig:
        """Defaults, then ``SOLAR_LLM_MODEL`` / ``SOLAR_LLM_ROUNDS``, then ``overrides``
        (``None`` values are ignored): how the server and the CLI build one."""
        cfg = cls()
        if os.environ.get("SOLAR_LLM_MODEL"):
            cfg.model = os.environ["SOLAR_LLM_MODEL"]
        if os.environ.get("SOLAR_LLM_ROUNDS"):
            cfg.max_rounds = int(os.environ["SOLAR_LLM_ROUNDS"])
        for k, v in overrides.items():
            if v is not None:
                setattr(cfg, k, v)
        if cfg.max_rounds < 1:
            raise ValueError(f"the LLM needs at least one round, got {cfg.max_rounds}")
        return cfg

    def resolved_cache_dir(self) -> str | None:
        if self.cache_dir == "":
            return None
        return self.cache_dir or default_cache_dir()
