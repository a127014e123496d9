"""The server object every handler module registers on: the pygls ``LanguageServer`` with the
settings, the worker pool, the results cache and what it knows about each open document.

The handlers live by job in :mod:`~solar_lsp.lsp.documents`, :mod:`~solar_lsp.lsp.features`,
:mod:`~solar_lsp.lsp.commands` and :mod:`~solar_lsp.lsp.lifecycle`; :mod:`solar_lsp.lsp.server`
imports them and starts :data:`server` on stdio.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass, field

from pygls.lsp.server import LanguageServer

from solar_lsp import __version__
from solar_lsp.lsp.cache import ResultCache
from solar_lsp.lsp.pool import Pool
from solar_lsp.lsp.settings import Settings, SettingsError, merge, pyproject_settings
from solar_lsp.source.discover import Entry


@dataclass
class Record:
    """One entry's result and the text it was computed on."""

    entry: dict
    lines: list[str]
    closure: str
    key: str
    phase: str = "final"  # bounds | final
    files: list[str] = field(default_factory=list)  # user modules the analysis imported


@dataclass
class DocState:
    """What the server keeps for one document: results per entry, discovery, failures, tasks."""

    uri: str
    path: str
    records: dict[str, Record] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)
    file_error: tuple[int, str] | None = None
    faults: dict[str, tuple[int, str]] = field(default_factory=dict)
    debounce: asyncio.Task | None = None
    job: asyncio.Task | None = None
    analyzing: bool = False
    force: bool = False  # the next analysis skips the results cache (solar.reanalyze)
    # the last Explain headroom result per entry and the closure hash of the code it measured:
    # kept apart from the records so that a re-analysis (or solar.reanalyze) does not drop it
    measured: dict[str, tuple[dict, str | None]] = field(default_factory=dict)


class SolarServer(LanguageServer):
    """The language server's state: settings from every source, the pool, the cache, documents."""

    def __init__(self) -> None:
        super().__init__("solar-lsp", __version__)
        self.docs: dict[str, DocState] = {}
        self.client_settings: dict = {}
        self.overrides: dict = {}  # from commands (selectChip, setTarget)
        self.pool: Pool | None = None
        self.cache: ResultCache | None = None
        self.root: str | None = None
        self.settings_error: str | None = None
        self.config_ready: asyncio.Event | None = None  # set once the client's settings are in

    # ---- settings
    def settings_for(self, path: str | None = None) -> Settings:
        s = Settings()
        self.settings_error = None
        try:
            tool, _ = pyproject_settings(os.path.dirname(path) if path else (self.root or os.getcwd()))
            s = merge(s, tool, "[tool.solar]")
        except SettingsError as exc:
            self.settings_error = str(exc)
        try:
            s = merge(s, self.client_settings, "solar settings")
            s = merge(s, self.overrides, "solar command")
        except SettingsError as exc:
            self.settings_error = str(exc)
        return s

    def ensure_runtime(self) -> None:
        s = self.settings_for(None)
        if self.cache is None or self.cache.directory != s.cache_dir:
            self.cache = ResultCache(s.cache_dir)
        if self.pool is not None and (self.pool.size, self.pool.memory_bytes) != (s.workers, s.memory_bytes):
            # workers and their memory limit are fixed when a worker starts: a new pool takes the
            # next jobs (the caller re-schedules the open documents), the old one is closed
            self.log(f"workers {self.pool.size} -> {s.workers}, memory limit -> {s.memory_bytes}: new pool")
            asyncio.ensure_future(self.pool.close())
            self.pool = None
        if self.pool is None:
            self.pool = Pool(s.workers, s.timeout_s, s.memory_bytes, log=self.log)
            asyncio.ensure_future(self.pool.start())
        else:
            self.pool.timeout_s = s.timeout_s

    def log(self, msg: str) -> None:
        print(f"solar-lsp: {msg}", file=sys.stderr, flush=True)

    # ---- capabilities of the client
    def _ws_cap(self, name: str) -> bool:
        caps = self.client_capabilities
        ws = caps.workspace if caps else None
        c = getattr(ws, name, None) if ws else None
        return bool(c and getattr(c, "refresh_support", False))

    def supports_progress(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    def supports_show_document(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.window and caps.window.show_document
                    and caps.window.show_document.support)

    async def refresh(self) -> None:
        with contextlib.suppress(Exception):
            if self._ws_cap("inlay_hint"):
                await self.workspace_inlay_hint_refresh_async(None)
        with contextlib.suppress(Exception):
            if self._ws_cap("code_lens"):
                await self.workspace_code_lens_refresh_async(None)


server = SolarServer()
