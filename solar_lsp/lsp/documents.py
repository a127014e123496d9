"""Text synchronization: opening, editing and saving a document schedule its analysis (an
edit after the debounce); saving a module re-analyzes the open models that import it; closing
a document stops its work."""

from __future__ import annotations

import os

from lsprotocol import types as T

from solar_lsp.lsp.analysis import doc_state, schedule
from solar_lsp.lsp.app import SolarServer, server
from solar_lsp.lsp.publish import publish


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: SolarServer, params: T.DidOpenTextDocumentParams) -> None:
    """Analyze a document when it opens."""
    schedule(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: SolarServer, params: T.DidSaveTextDocumentParams) -> None:
    """Analyze the saved document and the open models whose results imported it."""
    uri = params.text_document.uri
    schedule(uri)
    saved = os.path.realpath(ls.path_of(uri))
    for other, st in list(ls.docs.items()):  # models that import the saved module
        if other != uri and any(saved in rec.files for rec in st.records.values()):
            schedule(other)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: SolarServer, params: T.DidChangeTextDocumentParams) -> None:
    """Move the diagnostics with the edit now; analyze once typing pauses."""
    uri = params.text_document.uri
    if not ls.is_open(uri):
        return
    st = doc_state(uri)
    publish(st)  # diagnostics move with the edit or are withheld
    schedule(uri, ls.settings_for(st.path).debounce_s)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
async def did_close(ls: SolarServer, params: T.DidCloseTextDocumentParams) -> None:
    """Stop showing a closed document. Its pending analysis is dropped; a job already running
    in a worker finishes into the results cache (keeping its bounds, and what it verifies), so
    that opening the document again shows them at once."""
    uri = params.text_document.uri
    st = ls.docs.pop(uri, None)
    if st is None:
        return
    if st.debounce is not None:
        st.debounce.cancel()
    if st.job is not None and not st.job.done():
        if ls.pool is not None and ls.pool.running(uri):
            st.closed = True
            ls.detached[uri] = st
        else:  # still waiting for a worker: the open documents go first
            st.job.cancel()
