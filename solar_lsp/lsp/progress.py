"""Work-done progress in the client (``window/workDoneProgress``) for analyses and commands;
nothing when the client does not support it."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

from lsprotocol import types as T

from solar_lsp.lsp.app import server

CREATE_TIMEOUT_S = 5.0


async def progress_begin(title: str) -> str | None:
    """Start a progress item titled ``title``; its token, or None when the client shows none."""
    if not server.supports_progress():
        return None
    token = str(uuid.uuid4())
    try:  # a client that does not answer (soon) gets no progress; the work does not wait for it
        await asyncio.wait_for(server.work_done_progress.create_async(token), CREATE_TIMEOUT_S)
        server.work_done_progress.begin(token, T.WorkDoneProgressBegin(title=title, cancellable=False))
    except Exception:
        return None
    return token


def progress_report(token: str | None, msg: str) -> None:
    """Say how far the work behind ``token`` got."""
    if token:
        with contextlib.suppress(Exception):
            server.work_done_progress.report(token, T.WorkDoneProgressReport(message=msg))


def progress_end(token: str | None, msg: str) -> None:
    """Close the progress item of ``token`` with a last message."""
    if token:
        with contextlib.suppress(Exception):
            server.work_done_progress.end(token, T.WorkDoneProgressEnd(message=msg))
        server.work_done_progress.tokens.pop(token, None)
