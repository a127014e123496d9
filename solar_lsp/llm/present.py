"""The CLI's lines about the agent: what needs it, what it did and cost, and (dry run) the
exact requests that would be sent."""

from __future__ import annotations

from typing import Any

from rich.console import Console


def _cost(c: float | None) -> str:
    return f"${c:.4f}" if c is not None else "cost unknown (model not in the price table)"


def _translation_line(t: dict) -> str:
    what = f"{t['mode']} {t['subject']}" + (f" (line {t['line']})" if t.get("line") else "")
    if t["status"] == "skipped":
        return f"{what}: not asked — {t.get('detail', '')}"
    if t.get("cached") and not t["usage"]["requests"]:
        how = "re-verified from the cache" if t.get("reverified") else "from the cache"
        return f"{what}: {t['status']} {how}, no request"
    u = t["usage"]
    head = (f"{what}: {t['status']} after {t['rounds']} round(s) · {u['input_tokens']:,} in / "
            f"{u['output_tokens']:,} out tokens")
    if u.get("cache_read_input_tokens"):
        head += f" ({u['cache_read_input_tokens']:,} cached)"
    head += f" · {_cost(t['cost_usd'])}"
    if t["status"] != "accepted" and t.get("detail"):
        head += f" — {t['detail']}"
    return head


def _request_text(req: dict[str, Any]) -> str:
    system = "\n".join(b["text"] for b in req["system"])
    msg = req["messages"][0]["content"]
    return "\n".join([
        f"model: {req['model']} · max_tokens: {req['max_tokens']} · tool: "
        f"{req['tools'][0]['name']} (forced)",
        f"--- system prompt ({len(system):,} characters; the same for every request) ---",
        system,
        "--- user message ---",
        msg if isinstance(msg, str) else str(msg),
    ])


def render_llm(report, console: Console) -> None:
    """One block per entry that involved (or would need) the agent."""
    for e in report.entries:
        llm = getattr(e, "llm", None)
        if not llm:
            continue
        if llm["status"] == "needed":
            ops = ", ".join(f"{o['op']} (line {o['line']})" for o in llm.get("ops", []))
            console.print(f"  [yellow]LLM agent[/yellow] {e.name}: {llm['detail']}"
                          + (f" Ops: {ops}." if ops else ""), markup=True, highlight=False)
            continue
        for t in llm.get("translations", []):
            if t["status"] == "dry-run":
                console.print(f"=== --llm-dry-run: the request for {t['mode']} {t['subject']}"
                              f" ({t.get('detail', '')}) ===", markup=False, highlight=False)
                console.print(_request_text(t["request"]), markup=False, highlight=False,
                              soft_wrap=True)
                continue
            color = {"accepted": "green", "error": "red"}.get(t["status"], "yellow")
            console.print(f"  [{color}]LLM agent[/{color}] ({t['model']}) ", end="")
            console.print(_translation_line(t), markup=False, highlight=False)
        if llm.get("cost_usd") is not None and len(llm.get("translations", [])) > 1:
            console.print(f"  LLM agent total: {_cost(llm['cost_usd'])}", highlight=False)
