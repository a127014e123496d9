"""Reports the server writes for the editor to open read-only (IR, fusion, headroom, roofline),
under the cache directory's ``views`` folder; those files are never analyzed themselves."""

from __future__ import annotations

import contextlib
import os
import re

from lsprotocol import types as T
from pygls import uris

from solar_lsp.lsp.app import server


def _views_dir() -> str:
    return os.path.join(server.settings_for(None).cache_dir, "views")


def is_view(path: str) -> bool:
    """Reports the server wrote (IR, fusion, headroom views) are not models to analyze."""
    views = os.path.realpath(_views_dir())
    return os.path.realpath(path).startswith(views + os.sep)


async def show_view(name: str, text: str, suffix: str = ".md", open_it: bool = True) -> dict:
    """Write a report where the editor can open it read-only, and ask it to."""
    d = _views_dir()
    os.makedirs(d, exist_ok=True)
    safe = re.sub(r"[^\w.-]", "_", name).lstrip(".")[:120]  # entry names come from the client
    path = os.path.join(d, safe + suffix)
    with contextlib.suppress(OSError):
        if os.path.exists(path):
            os.chmod(path, 0o644)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o444)
    uri = uris.from_fs_path(path)
    if open_it and server.supports_show_document():
        with contextlib.suppress(Exception):
            await server.window_show_document_async(T.ShowDocumentParams(uri=uri, take_focus=True))
    return {"uri": uri, "text": text}
