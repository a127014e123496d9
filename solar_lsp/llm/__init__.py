"""The LLM frontend (docs/architecture.md §2): an Anthropic agent writes IR for what the tracers cannot take.

Opt-in only. Nothing it writes is used until the verifier accepts it; see docs/llm.md.
"""

from solar_lsp.llm.config import LLMConfig

__all__ = ["LLMConfig"]
