"""The language server over a real LSP connection (stdio, pytest-lsp): hints and hover for
an example appear after its background analysis."""

from __future__ import annotations

import asyncio
import pathlib
import sys

import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
MLP = ROOT / "examples" / "mlp.py"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "solar_lsp.server"]))
async def client(lsp_client: LanguageClient):
    caps = T.ClientCapabilities(
        text_document=T.TextDocumentClientCapabilities(
            inlay_hint=T.InlayHintClientCapabilities(),
            hover=T.HoverClientCapabilities(content_format=[T.MarkupKind.Markdown]),
        ),
        workspace=T.WorkspaceClientCapabilities(inlay_hint=T.InlayHintWorkspaceClientCapabilities(
            refresh_support=True)),
    )
    refreshes: list[None] = []

    @lsp_client.feature(T.WORKSPACE_INLAY_HINT_REFRESH)
    def on_refresh(params: None) -> None:
        refreshes.append(params)

    await lsp_client.initialize_session(T.InitializeParams(capabilities=caps, root_uri=ROOT.as_uri()))
    yield
    await lsp_client.shutdown_session()


def _line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines()) if needle in ln)


async def test_hints_and_hover_for_example(client: LanguageClient):
    text = MLP.read_text()
    uri = MLP.as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        T.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    n = len(text.splitlines())
    hints: list[T.InlayHint] = []
    for _ in range(240):
        hints = await client.text_document_inlay_hint_async(T.InlayHintParams(
            text_document=T.TextDocumentIdentifier(uri), range=T.Range(T.Position(0, 0), T.Position(n, 0))))
        if hints:
            break
        await asyncio.sleep(0.5)
    gelu = _line_of(text, "F.gelu(h)")
    by_line = {h.position.line: h.label for h in hints}
    assert gelu in by_line, by_line
    assert "FLOP" in by_line[gelu] and "B ·" in by_line[gelu] and "mem" in by_line[gelu]
    hover = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri), position=T.Position(gelu, 8)))
    assert hover is not None and "aten.gelu.default" in hover.contents.value
