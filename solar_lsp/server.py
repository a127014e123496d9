"""``solar-lsp``: the language server on stdio (pygls), a thin layer over the engine.

This first server publishes what the engine computes — per-line inlay hints, a hover
with the ops on the line, and diagnostics for failed entries — and never imports user
code in its own process: each analysis is a ``solar analyze --json`` subprocess with a
timeout, and a newer save supersedes (kills) the running one. The full server (worker
pool, cache, lenses, actions, progress) is the language-server issue.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer

from . import __version__, units

TIMEOUT_S = 120.0


@dataclass
class State:
    results: dict[str, dict] = field(default_factory=dict)
    jobs: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    hw: str = "h100-sxm"


server = LanguageServer("solar-lsp", __version__)
state = State()


def hint_label(line: dict) -> str:
    bound = "mem" if line.get("bound") == "memory" else "compute"
    return (f"{units.flops(line['flops'])} · {units.nbytes(line['bytes'])} · "
            f"{units.seconds(line['t_unfused_s'])} {bound}")


def hover_markdown(line: dict, entry: dict) -> str:
    rows = ["| op | shapes | dtype | FLOPs | bytes | time | bound |", "|---|---|---|---:|---:|---:|---|"]
    for op in line["ops"]:
        rows.append(f"| `{op['op']}` | {op['shapes']} | {op['dtype']} | {units.flops(op['flops'])} | "
                    f"{units.nbytes(op['bytes'])} | {units.seconds(op['t_s'])} | {op['bound']} |")
    v = entry.get("verification", {})
    tot = entry.get("totals", {})
    return "\n".join([f"**{entry['name']}** line {line['line']} — unfused SOL on {tot.get('hardware')}",
                      "", *rows, "", f"verification: **{v.get('status')}** — {v.get('detail', '')}"])


async def analyze(uri: str, path: str) -> None:
    old = state.jobs.pop(uri, None)
    if old is not None and old.returncode is None:
        old.kill()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "solar_lsp.cli", "analyze", path, "--json", "--no-verify", "--hw", state.hw,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    state.jobs[uri] = proc
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT_S)
    except asyncio.TimeoutError:
        proc.kill()
        _diagnose(uri, [(0, f"solar: analysis took longer than {TIMEOUT_S:.0f} s and was stopped")])
        return
    if state.jobs.get(uri) is not proc:
        return  # superseded
    try:
        doc = json.loads(out.decode() or "{}")
    except json.JSONDecodeError:
        doc = {"error": (err.decode().strip().splitlines() or ["analysis failed"])[-1], "entries": []}
    state.results[uri] = doc
    problems = []
    if doc.get("error"):
        problems.append((0, f"solar: {doc['error']}"))
    for e in doc.get("entries", []):
        if e.get("status") != "ok":
            problems.append(((e.get("error_line") or e["line"]) - 1, f"solar: {e['name']}: {e['error']}"))
        for u in e.get("unsupported", []):
            problems.append(((u.get("line") or e["line"]) - 1, f"solar: {u['op']} has no lowering: {u['reason']}"))
    _diagnose(uri, problems)
    if _client_refreshes():
        try:
            await server.workspace_inlay_hint_refresh_async(None)
        except Exception:  # a client that fails the refresh still gets hints on its next request
            pass


def _client_refreshes() -> bool:
    caps = server.client_capabilities
    ws = caps.workspace if caps else None
    return bool(ws and ws.inlay_hint and ws.inlay_hint.refresh_support)


def _diagnose(uri: str, problems: list[tuple[int, str]]) -> None:
    diags = [T.Diagnostic(range=T.Range(T.Position(max(ln, 0), 0), T.Position(max(ln, 0), 1000)),
                          message=msg, severity=T.DiagnosticSeverity.Information, source="solar")
             for ln, msg in problems]
    server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=diags))


def _lines(uri: str) -> list[tuple[dict, dict]]:
    doc = state.results.get(uri) or {}
    return [(ln, e) for e in doc.get("entries", []) for ln in e.get("lines", []) if ln.get("line")]


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: LanguageServer, params: T.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    await analyze(uri, ls.workspace.get_text_document(uri).path)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: LanguageServer, params: T.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    await analyze(uri, ls.workspace.get_text_document(uri).path)


@server.feature(T.TEXT_DOCUMENT_INLAY_HINT)
def inlay_hints(ls: LanguageServer, params: T.InlayHintParams) -> list[T.InlayHint]:
    doc = ls.workspace.get_text_document(params.text_document.uri)
    hints = []
    for ln, _ in _lines(params.text_document.uri):
        i = ln["line"] - 1
        if not (params.range.start.line <= i <= params.range.end.line) or i >= len(doc.lines):
            continue
        col = len(doc.lines[i].rstrip("\r\n"))
        hints.append(T.InlayHint(position=T.Position(i, col), label=hint_label(ln), padding_left=True))
    return hints


@server.feature(T.TEXT_DOCUMENT_HOVER)
def hover(ls: LanguageServer, params: T.HoverParams) -> T.Hover | None:
    for ln, e in _lines(params.text_document.uri):
        if ln["line"] - 1 == params.position.line:
            return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=hover_markdown(ln, e)))
    return None


def main() -> None:
    server.start_io()


if __name__ == "__main__":
    main()
