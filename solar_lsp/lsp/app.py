"""The server object every handler module registers on: the pygls ``LanguageServer`` with the
settings, the worker pool, the results cache and what it knows about each open document.

The handlers live by job in :mod:`~solar_lsp.lsp.documents`, :mod:`~solar_lsp.lsp.features`,
:mod:`~solar_lsp.lsp.commands` and :mod:`~solar_lsp.lsp.lifecycle`; :mod:`solar_lsp.lsp.server`
imports them and starts :data:`server` on stdio.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from urllib.parse import unquote

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer

from solar_lsp import __version__
from solar_lsp.lsp.buffers import is_file_uri, is_untitled_path, untitled_path
from solar_lsp.lsp.cache import ResultCache
from solar_lsp.lsp.pool import Pool
from solar_lsp.lsp.settings import Settings, SettingsError, merge, pyproject_settings
from solar_lsp.lsp.transport import SolarProtocol, run_stdio
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
    # what the running job computes: the settings key and each entry's closure hash at its start
    job_text: str | None = None
    job_key: str | None = None
    job_closures: dict[str, str | None] = field(default_factory=dict)
    closed: bool = False  # the editor closed it while its job ran: the job finishes into the cache
    analyzing: bool = False
    force: bool = False  # the next analysis skips the results cache (solar.reanalyze)
    # the last Explain headroom result per entry and the closure hash of the code it measured:
    # kept apart from the records so that a re-analysis (or solar.reanalyze) does not drop it
    measured: dict[str, tuple[dict, str | None]] = field(default_factory=dict)
    # the last "SOL at S=…" evaluation per entry (solar.solAt), for its lens
    sol_at: dict[str, dict] = field(default_factory=dict)


class SolarServer(LanguageServer):
    """The language server's state: settings from every source, the pool, the cache, documents."""

    def __init__(self) -> None:
        super().__init__("solar-lsp", __version__, protocol_cls=SolarProtocol)
        self.docs: dict[str, DocState] = {}
        self.detached: dict[str, DocState] = {}  # closed documents whose job still runs
        self.client_settings: dict = {}
        self.init_settings: dict = {}  # initializationOptions: under every pulled section
        self.overrides: dict = {}  # from commands (selectChip, setTarget)
        self.pool: Pool | None = None
        self.cache: ResultCache | None = None
        self.root: str | None = None
        self.settings_error: str | None = None
        self.config_ready: asyncio.Event | None = None  # set once the client's settings are in

    # ---- the connection
    def start_io(self, stdin=None, stdout=None) -> None:
        """Serve on stdio with :func:`~solar_lsp.lsp.transport.serve` until the input ends."""
        self._stop_event = threading.Event()  # what pygls's shutdown() sets
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        code = 0
        try:
            run_stdio(self._stop_event, StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool),
                      self.protocol)
        except BrokenPipeError:
            self.log("the client closed the connection")
        except KeyboardInterrupt:
            pass
        except SystemExit as exc:  # the exit notification: 0 after shutdown, else 1
            code = exc.code if isinstance(exc.code, int) else 0
        finally:
            self.shutdown()
        if code:
            sys.exit(code)

    def report_server_error(self, error: Exception, source) -> None:
        """Log errors; only a failed notification handler (a bug of ours) also tells the user."""
        logging.getLogger("solar_lsp.lsp").error("solar-lsp: %s: %s", getattr(source, "__name__", source), error)
        if isinstance(source, type) and issubclass(source, JsonRpcException):
            return  # the wire: a message we could not read or send, never a popup
        super().report_server_error(error, source)

    # ---- documents
    def path_of(self, uri: str) -> str:
        """The file behind document ``uri``: its path, or for an editor buffer that is no file
        (``untitled:``) the private stand-in file its text is analyzed from."""
        if is_file_uri(uri):
            return self.workspace.get_text_document(uri).path
        return untitled_path(uri)

    def is_open(self, uri: str) -> bool:
        """Whether the client has document ``uri`` open (its text is the editor's, not the disk's)."""
        try:
            return unquote(uri) in self.workspace.text_documents  # pygls keys them unquoted
        except RuntimeError:  # before initialize
            return False

    # ---- settings
    def settings_for(self, path: str | None = None) -> Settings:
        """The settings for a file at ``path`` (None: the workspace's)."""
        s = Settings()
        self.settings_error = None
        if is_untitled_path(path):  # a buffer without a file: the workspace's pyproject
            path = None
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
        """Ask the client to fetch hints and lenses again; not waiting for its answers (a slow
        client must not hold up an analysis, and a superseded one leaves no reply pending)."""
        for cap, send in (("inlay_hint", self.workspace_inlay_hint_refresh),
                          ("code_lens", self.workspace_code_lens_refresh)):
            if self._ws_cap(cap):
                with contextlib.suppress(Exception):
                    send(None).add_done_callback(_quiet)


def _quiet(fut) -> None:
    """Collect the outcome of a request nobody waits for, so that an error is not reported."""
    if not fut.cancelled():
        fut.exception()


server = SolarServer()
