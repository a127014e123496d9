"""The generate-then-verify loop: ask, check, feed the failure back, a few rounds at most.

A round is one Messages API call whose answer must be a ``submit_ir`` tool call. Its IR is
checked (parse, validate, execute, compare); a failure goes back as the ``tool_result`` of
that call (``is_error``) and the conversation continues. An answer without the tool call, or
with IR that does not parse or validate, is a failed round with its reason, like a mismatch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solar_lsp.llm.check import Check
from solar_lsp.llm.config import LLMConfig
from solar_lsp.llm.pricing import Usage, cost_usd
from solar_lsp.llm.prompt import TOOL_NAME, request
from solar_lsp.llm.transport import CallStats, LLMError, create_message

log = logging.getLogger("solar_lsp.llm")


@dataclass
class Translation:
    """The outcome of one translation (one entry or one op)."""

    mode: str  # entry | node
    subject: str  # the entry name or the op target
    status: str  # accepted | rejected | error | dry-run
    model: str
    check: Check | None = None  # the accepted check (program / op)
    ir: str = ""  # the accepted IR text
    detail: str = ""
    rounds: list[dict] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    request: dict | None = None  # the first request, for --llm-dry-run
    cached: bool = False
    reverified: bool = False
    seconds: float = 0.0
    line: int | None = None
    attempts: int = 0  # HTTP attempts, retries included
    retry_waits_s: list[float] = field(default_factory=list)

    @property
    def cost_usd(self) -> float | None:
        return cost_usd(self.model, self.usage)

    def to_json(self) -> dict:
        d: dict[str, Any] = {
            "mode": self.mode, "subject": self.subject, "status": self.status,
            "model": self.model, "rounds": len(self.rounds), "history": self.rounds,
            "usage": self.usage.to_json(), "cost_usd": self.cost_usd,
            "cached": self.cached, "reverified": self.reverified, "seconds": self.seconds,
            "http_attempts": self.attempts, "retry_waits_s": self.retry_waits_s,
        }
        if self.line is not None:
            d["line"] = self.line
        if self.detail:
            d["detail"] = self.detail
        if self.request is not None:
            d["request"] = self.request
        return d


def _blocks(content: list[Any]) -> list[dict]:
    """The assistant's content as request blocks (the next round repeats the conversation)."""
    out: list[dict] = []
    for b in content:
        t = getattr(b, "type", None)
        if t == "text":
            out.append({"type": "text", "text": b.text})
        elif t == "tool_use":
            out.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
    return out


def _check_answer(resp: Any, check: Callable[[str], Check]) -> tuple[Any, str | None, Check]:
    """The answer's ``submit_ir`` call (or None), its IR text, and the check of that IR (a
    missing call or argument is a failed check)."""
    tool = next((b for b in resp.content if getattr(b, "type", None) == "tool_use"
                 and b.name == TOOL_NAME), None)
    text = tool.input.get("ir") if tool is not None and isinstance(tool.input, dict) else None
    if tool is None:
        res = Check(False, f"no `{TOOL_NAME}` tool call in the answer "
                           f"(stop_reason {resp.stop_reason})", "invalid")
    elif not isinstance(text, str):
        res = Check(False, f"the `{TOOL_NAME}` call has no string `ir` argument", "invalid")
    else:
        res = check(text)
    return tool, text, res


def _with_feedback(req: dict, resp: Any, tool: Any, rnd: int, reason: str) -> dict:
    """The next round's request: the conversation so far, the answer, and why it was
    rejected (as the tool call's error result when there was a call)."""
    feedback = (f"Round {rnd} was rejected — {reason}\nFix the program and call "
                f"`{TOOL_NAME}` again with the complete IR.")
    reply: list[dict] = _blocks(resp.content)
    req = {**req, "messages": [*req["messages"], {"role": "assistant", "content": reply}]}
    if tool is not None:
        user = [{"type": "tool_result", "tool_use_id": tool.id, "is_error": True,
                 "content": feedback}]
    else:
        user = [{"type": "text", "text": feedback}]
    req["messages"].append({"role": "user", "content": user})
    return req


def translate(mode: str, subject: str, message: str, check: Callable[[str], Check],
              cfg: LLMConfig, client_factory: Callable[[], Any],
              sleep: Callable[[float], None] = time.sleep) -> Translation:
    """Run up to ``cfg.max_rounds`` rounds; the translation is accepted only when ``check``
    passes. ``client_factory`` is called once, at the first request (never in a dry run)."""
    tr = Translation(mode, subject, "rejected", cfg.model)
    req = request(cfg.model, cfg.max_tokens, message)
    if cfg.dry_run:
        tr.status, tr.request = "dry-run", req
        tr.detail = "dry run: nothing was sent"
        return tr
    t0 = time.perf_counter()
    stats = CallStats()
    try:
        client = client_factory()
        for rnd in range(1, cfg.max_rounds + 1):
            resp = create_message(client, cfg, req, stats, sleep)
            tr.usage.add(resp.usage)
            tr.model = getattr(resp, "model", None) or tr.model
            entry: dict[str, Any] = {"round": rnd, "input_tokens": resp.usage.input_tokens,
                                     "output_tokens": resp.usage.output_tokens}
            tool, text, res = _check_answer(resp, check)
            entry["outcome"] = "accepted" if res.ok else res.kind
            if not res.ok:
                entry["reason"] = res.reason[:2000]
            tr.rounds.append(entry)
            log.info("LLM %s %s round %d: %s (%d in / %d out tokens)", mode, subject, rnd,
                     entry["outcome"], resp.usage.input_tokens, resp.usage.output_tokens)
            if res.ok:
                tr.status, tr.check, tr.ir = "accepted", res, text or ""
                break
            tr.detail = res.reason
            if res.fatal or rnd == cfg.max_rounds:
                break
            req = _with_feedback(req, resp, tool, rnd, res.reason)
        if tr.status != "accepted":
            tr.detail = f"not accepted after {len(tr.rounds)} round(s): {tr.detail}"
    except LLMError as exc:
        tr.status, tr.detail = "error", str(exc)
        log.warning("LLM %s %s: %s", mode, subject, exc)
    tr.attempts, tr.retry_waits_s = stats.attempts, stats.waits_s
    tr.seconds = time.perf_counter() - t0
    return tr
