"""``solar-lsp``: the language server on stdio (pygls), a thin layer over the engine.

User code never runs in this process: discovery and closure hashing read the text (AST
only), analyses run in pre-warmed worker processes (:mod:`solar_lsp.lsp.pool`) with a
timeout and a memory limit, and results come from the on-disk cache when the entry's source
closure, its shapes and the settings are unchanged. Everything shown is rendered by
:mod:`solar_lsp.lsp.present` from the engine's JSON.

This module only assembles the server: :mod:`~solar_lsp.lsp.app` holds it, and importing the
handler modules registers their features on it — :mod:`~solar_lsp.lsp.lifecycle` (initialize,
settings, shutdown), :mod:`~solar_lsp.lsp.documents` (text sync, which schedules
:mod:`~solar_lsp.lsp.analysis`), :mod:`~solar_lsp.lsp.features` (hints, hover, lenses,
actions) and :mod:`~solar_lsp.lsp.commands` (``workspace/executeCommand``).
"""

from __future__ import annotations

import logging
import sys

from solar_lsp.lsp import commands, documents, features, lifecycle  # noqa: F401  (register handlers)
from solar_lsp.lsp.app import SolarServer, server

__all__ = ["SolarServer", "main", "server"]


def main() -> None:
    """Serve LSP on stdin/stdout (the ``solar-lsp`` console script)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    server.start_io()


if __name__ == "__main__":
    main()
