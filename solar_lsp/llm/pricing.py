"""Cost of a translation from the token usage the API reports.

Prices in USD per million tokens: Anthropic's pricing page
(https://docs.anthropic.com/en/docs/about-claude/pricing) as of 2025-11-15, and the Claude
Opus 4.5 announcement of 2025-11-24. Cache writes are the 5-minute tier (1.25 x input),
cache reads 0.1 x input. A model not in the table has no cost (``None``), never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PRICES_AS_OF = "2025-11-24"


@dataclass(frozen=True)
class Price:
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_write: float
    cache_read: float


# model alias -> price; a dated snapshot id (claude-sonnet-4-5-20250929) matches its alias,
# a newer model (claude-opus-4-6) matches nothing rather than an older model's price
PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-1": Price(15.0, 75.0, 18.75, 1.50),
    "claude-opus-4": Price(15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4-5": Price(3.0, 15.0, 3.75, 0.30),
    "claude-sonnet-4": Price(3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4-5": Price(1.0, 5.0, 1.25, 0.10),
}


@dataclass
class Usage:
    """Tokens of each kind and requests, summed over a translation's rounds."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    requests: int = 0

    def add(self, usage: object) -> None:
        """Add an API ``usage`` object (fields may be missing or None)."""
        for f in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                  "cache_read_input_tokens"):
            setattr(self, f, getattr(self, f) + int(getattr(usage, f, 0) or 0))
        self.requests += 1

    def __iadd__(self, other: Usage) -> Usage:
        for f in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                  "cache_read_input_tokens", "requests"):
            setattr(self, f, getattr(self, f) + getattr(other, f))
        return self

    def to_json(self) -> dict:
        return dict(self.__dict__)


_SNAPSHOT = re.compile(r"^(.*)-(\d{8})$")


def price_of(model: str) -> Price | None:
    """The price of an alias or of its dated snapshot; None for anything else."""
    if model in PRICES:
        return PRICES[model]
    m = _SNAPSHOT.match(model)
    return PRICES.get(m.group(1)) if m else None


def cost_usd(model: str, usage: Usage) -> float | None:
    """USD the usage cost on ``model``; None when the model's price is unknown."""
    p = price_of(model)
    if p is None:
        return None
    return (usage.input_tokens * p.input + usage.output_tokens * p.output
            + usage.cache_creation_input_tokens * p.cache_write
            + usage.cache_read_input_tokens * p.cache_read) / 1e6
