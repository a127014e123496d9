"""What the server pushes to the client: diagnostics of a document (moved with the edits made
since its results) and the ``solar/status`` notification for a status bar."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from lsprotocol import types as T

from solar_lsp import __version__
from solar_lsp.lsp import present
from solar_lsp.lsp.app import DocState, Record, server
from solar_lsp.lsp.linemap import line_map


def current_lines(uri: str) -> list[str]:
    """The document's text as the editor has it now, by line."""
    return server.workspace.get_text_document(uri).source.splitlines()


def mapped(st: DocState, cur: list[str]) -> Iterator[tuple[Record, dict[int, int]]]:
    """(record, {old 0-based line -> new 0-based line}) for each record."""
    for rec in st.records.values():
        yield rec, line_map(rec.lines, cur)


def publish(st: DocState) -> None:
    """Send the document's diagnostics: file and settings errors, findings, failed entries
    (each message once per line). Nothing for a document the editor closed."""
    if st.closed or not server.is_open(st.uri):
        return
    cur = current_lines(st.uri)
    diags: list[T.Diagnostic] = []
    said: set[tuple[int, str]] = set()

    def add(line1: int, sev: str, msg: str) -> None:
        i = max(int(line1 or 1) - 1, 0)
        if (i, msg) in said:  # a job stopped by one hang fails each of its entries on that line
            return
        said.add((i, msg))
        diags.append(T.Diagnostic(
            range=T.Range(T.Position(i, 0), T.Position(i, len(cur[i]) if i < len(cur) else 0)),
            message=msg, source="solar",
            severity=T.DiagnosticSeverity.Warning if sev == "warning" else T.DiagnosticSeverity.Information))

    if st.file_error:
        add(st.file_error[0], "warning", st.file_error[1])
    if server.settings_error:
        add(1, "warning", f"solar: {server.settings_error}")
    for rec, mp in mapped(st, cur):
        if rec.entry["name"] in st.faults:
            continue
        for line1, sev, msg in present.diagnostics(rec.entry):
            j = mp.get(line1 - 1)
            if j is not None:
                add(j + 1, sev, msg)
    for line1, msg in st.faults.values():
        add(line1, "warning", msg)
    server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=st.uri, diagnostics=diags))
    notify_status()


def notify_status() -> None:
    """``solar/status``: the active chip and how many documents are analyzing or failed, for a
    client's status bar (a custom notification; clients that do not know it ignore it)."""
    with contextlib.suppress(Exception):
        server.protocol.notify("solar/status", status_payload())


def status_payload() -> dict:
    """The server's state for a status bar: chip, analyzing and failed documents, workers."""
    s = server.settings_for(None)
    return {"chip": s.chip, "analyzing": sum(1 for st in server.docs.values() if st.analyzing),
            "errors": sum(1 for st in server.docs.values() if st.file_error or st.faults),
            "finishing": len(server.detached),  # closed documents whose job still runs
            "jobs": server.pool.jobs if server.pool else 0,
            "workers": server.pool.pids() if server.pool else [],
            "workers_started": server.pool.started if server.pool else 0,
            "worker_error": server.pool.broken if server.pool else None,
            "settings_error": server.settings_error, "version": __version__}
