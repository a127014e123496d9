"""``solar-lsp``: the language server on stdio (pygls), a thin layer over the engine.

User code never runs in this process: discovery and closure hashing read the text (AST
only), analyses run in pre-warmed worker processes (:mod:`solar_lsp.lsp.pool`) with a
timeout and a memory limit, and results come from the on-disk cache when the entry's source
closure, its shapes and the settings are unchanged. Everything shown is rendered by
:mod:`solar_lsp.lsp.present` from the engine's JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types as T
from pygls import uris
from pygls.lsp.server import LanguageServer

from solar_lsp import __version__
from solar_lsp.lsp import present
from solar_lsp.lsp.cache import ResultCache
from solar_lsp.lsp.closure import closure_hash, defs_of_lines
from solar_lsp.lsp.linemap import line_map
from solar_lsp.lsp.pool import JobCancelled, JobFailed, Pool, request
from solar_lsp.lsp.rewrite import local_rewrite
from solar_lsp.lsp.settings import Settings, SettingsError, merge, pyproject_settings
from solar_lsp.source.discover import DiscoveryError, Entry, discover

log = logging.getLogger("solar-lsp")

COMMANDS = ("solar.showIR", "solar.compareChips", "solar.explainHeadroom", "solar.showRoofline", "solar.showFusion", "solar.showReorder",
            "solar.selectChip", "solar.setTarget", "solar.reanalyze", "solar.status")


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


# ------------------------------------------------------------------ analysis scheduling

def _doc_state(uri: str) -> DocState:
    st = server.docs.get(uri)
    if st is None:
        doc = server.workspace.get_text_document(uri)
        st = server.docs[uri] = DocState(uri, doc.path)
    return st


def _on_disk(path: str, text: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == text
    except OSError:
        return False


def _buffer_copy(settings: Settings, path: str, text: str) -> str:
    """An unsaved buffer is analyzed from a copy with the same file name."""
    d = os.path.join(settings.cache_dir, "buffers", hashlib.sha256(path.encode()).hexdigest()[:16])
    os.makedirs(d, exist_ok=True)
    copy = os.path.join(d, os.path.basename(path))
    with open(copy, "w", encoding="utf-8") as f:
        f.write(text)
    return copy


def _is_view(path: str) -> bool:
    """Reports the server wrote (IR, fusion, headroom views) are not models to analyze."""
    views = os.path.realpath(os.path.join(server.settings_for(None).cache_dir, "views"))
    return os.path.realpath(path).startswith(views + os.sep)


def schedule(uri: str, delay: float = 0.0) -> None:
    if _is_view(server.workspace.get_text_document(uri).path):
        return
    st = _doc_state(uri)
    if st.debounce is not None:
        st.debounce.cancel()

    async def later() -> None:
        if delay:
            await asyncio.sleep(delay)
        await analyze_document(uri)

    st.debounce = asyncio.ensure_future(later())


async def analyze_document(uri: str) -> None:
    if server.config_ready is not None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.config_ready.wait(), 10)
    server.ensure_runtime()
    st = _doc_state(uri)
    doc = server.workspace.get_text_document(uri)
    text, path = doc.source, doc.path
    settings = server.settings_for(path)
    key = settings.analysis_key()
    lines = text.splitlines()
    try:
        entries = discover(text, path, {"dims": settings.dims, "entries": settings.entries})
    except DiscoveryError as exc:
        st.file_error = (getattr(exc, "line", None) or 1, f"solar: {exc}")
        publish(st)
        await server.refresh()
        return
    st.file_error = None
    st.entries = entries
    if server.pool is not None and any(e.frontend == "jax" for e in entries):
        server.pool.jax = True  # workers started from now on warm up jax too
    names = {e.name for e in entries}
    for gone in set(st.records) - names:
        del st.records[gone]
    for gone in set(st.measured) - names:
        del st.measured[gone]
    stale: list[str] = []
    cache = server.cache
    force, st.force = st.force, False
    for e in entries:
        extra, files = cache.closure_parts(path, e.name) if cache else ([], [])
        h = closure_hash(text, e.name, extra, e.pragma_line, files)
        rec = st.records.get(e.name)
        if force:
            st.records.pop(e.name, None)
            stale.append(e.name)
            continue
        if rec is not None and rec.closure == h and rec.key == key and rec.phase == "final":
            continue
        hit = cache.get(path, e.name, h, key) if cache and h else None
        if hit is not None:
            st.records[e.name] = Record(_with_headroom(st, e.name, hit["entry"], h), hit["lines"], h, key,
                                        files=files)
            st.faults.pop(e.name, None)
            continue
        stale.append(e.name)
    publish(st)
    await server.refresh()
    if not stale:
        return
    if st.job is not None and not st.job.done():
        st.job.cancel()
    st.job = asyncio.ensure_future(_run_job(st, text, lines, stale, settings))


async def _run_job(st: DocState, text: str, lines: list[str], stale: list[str], settings: Settings) -> None:
    path = st.path
    key = settings.analysis_key()
    run_path = path if _on_disk(path, text) else _buffer_copy(settings, path, text)
    entries = stale if len(stale) < len(st.entries) else None
    req = request(run_path, path, settings.analysis_config(), entries)
    token = await _progress_begin(f"solar: analyzing {os.path.basename(path)}")
    st.analyzing = True
    notify_status()

    async def on_message(msg: dict) -> None:
        if msg.get("type") == "bounds":
            _store(st, msg["report"], lines, text, key, phase="bounds")
            _progress_report(token, "bounds ready, verifying")
            publish(st)
            await server.refresh()

    try:
        reply = await server.pool.run(st.uri, req, on_message)
    except JobCancelled:
        _progress_end(token, "superseded")
        return
    except JobFailed as exc:
        server.log(f"job for {os.path.basename(path)} failed: {exc}")
        for name in stale:
            ent = next((e for e in st.entries if e.name == name), None)
            st.faults[name] = (exc.line or (ent.line if ent else 1), f"solar: {exc}")
        _progress_end(token, "failed")
        st.analyzing = False
        publish(st)
        await server.refresh()
        return
    except asyncio.CancelledError:
        _progress_end(token, "superseded")
        raise
    st.analyzing = False
    report = reply["report"]
    server.log(f"analyzed {os.path.basename(path)} {entries or 'all'}: "
               + ", ".join(f"{e['name']} {e['status']}" for e in report.get("entries", [])))
    if report.get("error"):
        st.file_error = (1, f"solar: {report['error']}")
    _store(st, report, lines, text, key, phase="final", files=reply.get("sources") or [])
    _progress_end(token, "done")
    publish(st)
    await server.refresh()


def _store(st: DocState, report: dict, lines: list[str], text: str, key: str, phase: str,
           files: list[str] | None = None) -> None:
    """Keep the entries of ``report``; ``files`` (the user modules the job imported) go into
    each closure hash, so that editing a sibling module makes the result stale."""
    files = sorted(files or [])
    cache = server.cache
    by_name = {e.name: e for e in st.entries}
    for e in report.get("entries", []):
        name = e["name"]
        used = [ln["line"] for ln in e.get("lines", []) if ln.get("line")]
        extra = defs_of_lines(text, used)
        ent = by_name.get(name)
        h = closure_hash(text, name, extra, ent.pragma_line if ent else None, files)
        if h is None:
            continue
        st.records[name] = Record(_with_headroom(st, name, e, h), lines, h, key, phase, files)
        st.faults.pop(name, None)
        if phase == "final" and cache is not None:
            cache.set_closure_extra(st.path, name, extra, files)
            if e.get("status") == "ok":
                cache.put(st.path, name, h, key, {"entry": e, "lines": lines})


def _with_headroom(st: DocState, name: str, entry: dict, closure: str | None) -> dict:
    """``entry`` with the last measured headroom of ``name`` carried over (a copy: the cached
    analysis stays free of measurements), marked ``earlier_code`` when the entry's closure
    changed since the measurement (its ratios are against the bounds of the code it ran)."""
    got = st.measured.get(name)
    if got is None or entry.get("status") != "ok":
        return entry
    h, measured_on = got
    if measured_on is None or measured_on != closure:
        h = {**h, "earlier_code": True}
    return {**entry, "headroom": h}


def _closure_now(uri: str, name: str, text: str) -> str | None:
    """The closure hash of entry ``name`` in ``text``: the record's when it was computed on
    this text (the hash later results are compared with), else as analyze_document does."""
    st = server.docs.get(uri)
    if st is None:
        return None
    rec = st.records.get(name)
    if rec is not None and rec.lines == text.splitlines():
        return rec.closure
    ent = next((e for e in st.entries if e.name == name), None)
    extra, files = server.cache.closure_parts(st.path, name) if server.cache else ([], [])
    return closure_hash(text, name, extra, ent.pragma_line if ent else None, files)


# ------------------------------------------------------------------ progress

async def _progress_begin(title: str) -> str | None:
    if not server.supports_progress():
        return None
    token = str(uuid.uuid4())
    try:
        await server.work_done_progress.create_async(token)
        server.work_done_progress.begin(token, T.WorkDoneProgressBegin(title=title, cancellable=False))
    except Exception:
        return None
    return token


def _progress_report(token: str | None, msg: str) -> None:
    if token:
        with contextlib.suppress(Exception):
            server.work_done_progress.report(token, T.WorkDoneProgressReport(message=msg))


def _progress_end(token: str | None, msg: str) -> None:
    if token:
        with contextlib.suppress(Exception):
            server.work_done_progress.end(token, T.WorkDoneProgressEnd(message=msg))


# ------------------------------------------------------------------ what the editor sees

def _current_lines(uri: str) -> list[str]:
    return server.workspace.get_text_document(uri).source.splitlines()


def _mapped(st: DocState, cur: list[str]):
    """(record, {old 0-based line -> new 0-based line}) for each record."""
    for rec in st.records.values():
        yield rec, line_map(rec.lines, cur)


def publish(st: DocState) -> None:
    cur = _current_lines(st.uri) if st.uri in server.workspace.text_documents else []
    diags: list[T.Diagnostic] = []

    def add(line1: int, sev: str, msg: str) -> None:
        i = max(int(line1 or 1) - 1, 0)
        diags.append(T.Diagnostic(
            range=T.Range(T.Position(i, 0), T.Position(i, len(cur[i]) if i < len(cur) else 0)),
            message=msg, source="solar",
            severity=T.DiagnosticSeverity.Warning if sev == "warning" else T.DiagnosticSeverity.Information))

    if st.file_error:
        add(st.file_error[0], "warning", st.file_error[1])
    if server.settings_error:
        add(1, "warning", f"solar: {server.settings_error}")
    for rec, mp in _mapped(st, cur):
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
    s = server.settings_for(None)
    return {"chip": s.chip, "analyzing": sum(1 for st in server.docs.values() if st.analyzing),
            "errors": sum(1 for st in server.docs.values() if st.file_error or st.faults),
            "jobs": server.pool.jobs if server.pool else 0,
            "workers": server.pool.pids() if server.pool else [],
            "workers_started": server.pool.started if server.pool else 0,
            "worker_error": server.pool.broken if server.pool else None,
            "settings_error": server.settings_error, "version": __version__}


@server.feature(T.INITIALIZE)
def on_initialize(ls: SolarServer, params: T.InitializeParams) -> None:
    ls.root = params.root_path or (params.root_uri and uris.to_fs_path(params.root_uri)) or None
    ls.config_ready = asyncio.Event()
    opts = params.initialization_options
    if isinstance(opts, dict):
        ls.client_settings = dict(opts.get("solar", opts))


@server.feature(T.INITIALIZED)
async def on_initialized(ls: SolarServer, params: T.InitializedParams) -> None:
    try:
        await _pull_configuration()
    finally:
        ls.config_ready.set()
    ls.ensure_runtime()
    notify_status()


async def _pull_configuration() -> None:
    caps = server.client_capabilities
    if not (caps and caps.workspace and caps.workspace.configuration):
        return
    try:
        res = await asyncio.wait_for(server.workspace_configuration_async(
            T.ConfigurationParams(items=[T.ConfigurationItem(section="solar")])), 5)
    except Exception:
        return
    if res and isinstance(res[0], dict):
        server.client_settings = {**server.client_settings, **res[0]}


@server.feature(T.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_config(ls: SolarServer, params: T.DidChangeConfigurationParams) -> None:
    ls.overrides.clear()  # the user's settings now say what they want; earlier commands yield
    settings = params.settings
    if isinstance(settings, dict) and isinstance(settings.get("solar"), dict):
        ls.client_settings = {**ls.client_settings, **settings["solar"]}
    else:
        await _pull_configuration()
    ls.ensure_runtime()
    for uri in list(ls.docs):
        schedule(uri)


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: SolarServer, params: T.DidOpenTextDocumentParams) -> None:
    schedule(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: SolarServer, params: T.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    schedule(uri)
    saved = os.path.realpath(ls.workspace.get_text_document(uri).path)
    for other, st in list(ls.docs.items()):  # models that import the saved module
        if other != uri and any(saved in rec.files for rec in st.records.values()):
            schedule(other)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: SolarServer, params: T.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    st = _doc_state(uri)
    publish(st)  # diagnostics move with the edit or are withheld
    schedule(uri, ls.settings_for(st.path).debounce_s)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
async def did_close(ls: SolarServer, params: T.DidCloseTextDocumentParams) -> None:
    st = ls.docs.pop(params.text_document.uri, None)
    if st is not None:
        for task in (st.debounce, st.job):
            if task is not None:
                task.cancel()
        if ls.pool is not None:
            ls.pool.cancel(st.uri)


@server.feature(T.TEXT_DOCUMENT_INLAY_HINT, T.InlayHintOptions(resolve_provider=True))
def inlay_hints(ls: SolarServer, params: T.InlayHintParams) -> list[T.InlayHint]:
    uri = params.text_document.uri
    st = ls.docs.get(uri)
    if st is None:
        return []
    cur = _current_lines(uri)
    hints = []
    for rec, mp in _mapped(st, cur):
        for ln in rec.entry.get("lines", []):
            if not ln.get("line"):
                continue
            j = mp.get(ln["line"] - 1)
            if j is None or not (params.range.start.line <= j <= params.range.end.line):
                continue
            hints.append(T.InlayHint(
                position=T.Position(j, len(cur[j])), label=present.hint_label(ln), padding_left=True,
                data={"uri": uri, "entry": rec.entry["name"], "line": ln["line"]}))
    return hints


@server.feature(T.INLAY_HINT_RESOLVE)
def inlay_hint_resolve(ls: SolarServer, hint: T.InlayHint) -> T.InlayHint:
    d = hint.data if isinstance(hint.data, dict) else {}
    st = ls.docs.get(d.get("uri", ""))
    rec = st.records.get(d.get("entry", "")) if st else None
    if rec is not None:
        ln = next((x for x in rec.entry.get("lines", []) if x.get("line") == d.get("line")), None)
        if ln is not None:
            hint.tooltip = T.MarkupContent(kind=T.MarkupKind.Markdown,
                                           value=present.line_markdown(ln, rec.entry, rec.phase))
    return hint


@server.feature(T.TEXT_DOCUMENT_HOVER)
def hover(ls: SolarServer, params: T.HoverParams) -> T.Hover | None:
    st = ls.docs.get(params.text_document.uri)
    if st is None:
        return None
    cur = _current_lines(params.text_document.uri)
    want = params.position.line
    for rec, mp in _mapped(st, cur):
        for ln in rec.entry.get("lines", []):
            if ln.get("line") and mp.get(ln["line"] - 1) == want:
                return T.Hover(contents=T.MarkupContent(
                    kind=T.MarkupKind.Markdown, value=present.line_markdown(ln, rec.entry, rec.phase)))
        if mp.get(rec.entry["line"] - 1) == want:
            return T.Hover(contents=T.MarkupContent(
                kind=T.MarkupKind.Markdown, value=present.entry_markdown(rec.entry, rec.phase)))
    return None


@server.feature(T.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: SolarServer, params: T.CodeLensParams) -> list[T.CodeLens]:
    uri = params.text_document.uri
    st = ls.docs.get(uri)
    if st is None:
        return []
    cur = _current_lines(uri)
    s = ls.settings_for(st.path)
    lenses = []
    shown = set()
    for rec, mp in _mapped(st, cur):
        j = mp.get(rec.entry["line"] - 1)
        if j is None:
            continue
        shown.add(rec.entry["name"])
        titles = present.lens_titles(rec.entry, rec.entry.get("totals", {}).get("hardware", s.chip),
                                     s.target_label())
        if rec.phase == "bounds":
            titles[0] += " · verifying…"
        cmds = ["solar.compareChips", "solar.compareChips"]
        for title, cmd in zip(titles, cmds, strict=False):
            lenses.append(T.CodeLens(range=T.Range(T.Position(j, 0), T.Position(j, 0)),
                                     command=T.Command(title=title, command=cmd,
                                                       arguments=[uri, rec.entry["name"]])))
    for e in st.entries:
        if e.name not in shown and st.analyzing:
            i = e.line - 1
            lenses.append(T.CodeLens(range=T.Range(T.Position(i, 0), T.Position(i, 0)),
                                     command=T.Command(title="solar: analyzing…", command="solar.status",
                                                       arguments=[uri])))
    return lenses


@server.feature(T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(
    code_action_kinds=[T.CodeActionKind.Empty, T.CodeActionKind.RefactorRewrite]))
def code_action(ls: SolarServer, params: T.CodeActionParams) -> list[T.CodeAction]:
    uri = params.text_document.uri
    st = ls.docs.get(uri)
    if st is None:
        return []
    line = params.range.start.line + 1
    acts: list[T.CodeAction] = []
    for e in st.entries:
        if not (e.line <= line <= (e.end_line or e.line)) and not (e.pragma_line == line):
            continue
        rec = st.records.get(e.name)
        args = [uri, e.name]

        def cmd(title: str, command: str, kind: str = T.CodeActionKind.Empty, a: list = args) -> None:
            acts.append(T.CodeAction(title=title, kind=kind,
                                     command=T.Command(title=title, command=command, arguments=a)))

        if rec is not None and rec.entry.get("fusion"):
            cmd(f"solar: Show fusion suggestions for {e.name}", "solar.showFusion")
        if rec is not None:
            for r in rec.entry.get("reorder") or []:
                if line in (r.get("lines") or [r.get("line")]):
                    acts.append(_reorder_action(uri, e.name, r))
        cmd(f"solar: Explain headroom of {e.name} (measure it)", "solar.explainHeadroom")
        cmd(f"solar: Show IR of {e.name}", "solar.showIR")
        cmd(f"solar: Compare chips for {e.name}", "solar.compareChips")
    return acts


def _reorder_action(uri: str, entry: str, r: dict) -> T.CodeAction:
    title = f"solar: Reorder contraction chain ({r['flops_before'] / max(r['flops_after'], 1):.1f}× fewer FLOPs)"
    edit = None
    where = local_rewrite(server.workspace.get_text_document(uri).source, r["line"],
                          r.get("operands") or [], r["expression"]) if r.get("line") else None
    if where is not None:
        l0, c0, l1, c1, text = where
        edit = T.WorkspaceEdit(changes={uri: [T.TextEdit(
            range=T.Range(T.Position(l0, c0), T.Position(l1, c1)), new_text=text)]})
    return T.CodeAction(title=title, kind=T.CodeActionKind.RefactorRewrite, edit=edit,
                        command=None if edit else T.Command(title=title, command="solar.showReorder",
                                                            arguments=[uri, entry]))


# ------------------------------------------------------------------ commands

async def _show(name: str, text: str, suffix: str = ".md", open_it: bool = True) -> dict:
    """Write a report where the editor can open it read-only, and ask it to."""
    s = server.settings_for(None)
    d = os.path.join(s.cache_dir, "views")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{name}{suffix}")
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


def _record(uri: str, entry: str) -> Record | None:
    st = server.docs.get(uri)
    return st.records.get(entry) if st else None


@server.command("solar.showFusion")
async def cmd_fusion(ls: SolarServer, *args: Any) -> dict:
    rec = _record(*args[:2])
    if rec is None:
        return {"error": "no result for this entry yet"}
    return await _show(f"{args[1]}-fusion", present.fusion_markdown(rec.entry))


@server.command("solar.showReorder")
async def cmd_reorder(ls: SolarServer, *args: Any) -> dict:
    rec = _record(*args[:2])
    if rec is None:
        return {"error": "no result for this entry yet"}
    return await _show(f"{args[1]}-reorder", present.reorder_markdown(rec.entry))


async def _job(uri: str, entry: str, kind: str, config: dict) -> dict:
    server.ensure_runtime()
    doc = server.workspace.get_text_document(uri)
    s = server.settings_for(doc.path)
    path = doc.path if _on_disk(doc.path, doc.source) else _buffer_copy(s, doc.path, doc.source)
    token = await _progress_begin(f"solar: {kind} {entry}")
    try:
        return await server.pool.run(f"{uri}#{kind}", request(path, doc.path, config, [entry], kind))
    finally:
        _progress_end(token, "done")


@server.command("solar.showIR")
async def cmd_ir(ls: SolarServer, *args: Any) -> dict:
    uri, entry = args[:2]
    s = ls.settings_for(ls.workspace.get_text_document(uri).path)
    try:
        reply = await _job(uri, entry, "ir", s.analysis_config())
    except (JobFailed, JobCancelled) as exc:
        return {"error": str(exc) or "superseded"}
    return await _show(f"{entry}-ir", f"# Affine Loop IR of {entry}\n" + reply["text"], ".py")


@server.command("solar.compareChips")
async def cmd_compare(ls: SolarServer, *args: Any) -> dict:
    from solar_lsp.hardware.chips import list_chips
    uri, entry = args[:2]
    s = ls.settings_for(ls.workspace.get_text_document(uri).path)
    cfg = {**s.analysis_config(), "verify": False, "hw": [s.chip] + [c for c in list_chips() if c != s.chip]}
    try:
        reply = await _job(uri, entry, "analyze", cfg)
    except (JobFailed, JobCancelled) as exc:
        return {"error": str(exc) or "superseded"}
    ents = [e for e in reply["report"]["entries"] if e["name"] == entry]
    if not ents:
        return {"error": f"no entry {entry}"}
    return await _show(f"{entry}-compare", present.compare_markdown(ents[0]))


@server.command("solar.explainHeadroom")
async def cmd_headroom(ls: SolarServer, *args: Any) -> dict:
    """Measure the entry in a worker, keep the result (the hover shows the last ratio), show it."""
    uri, entry = args[:2]
    s = ls.settings_for(ls.workspace.get_text_document(uri).path)
    cfg = {**s.analysis_config(), "verify": False, "device": s.headroom_device}
    closure = _closure_now(uri, entry, ls.workspace.get_text_document(uri).source)  # the code measured
    try:
        reply = await _job(uri, entry, "headroom", cfg)
    except (JobFailed, JobCancelled) as exc:
        return {"error": str(exc) or "superseded"}
    ents = [e for e in reply["report"]["entries"] if e["name"] == entry]
    if not ents:
        return {"error": reply["report"].get("error") or f"no entry {entry}"}
    st = server.docs.get(uri)
    if st is not None and ents[0].get("headroom") and "error" not in ents[0]["headroom"]:
        st.measured[entry] = (ents[0]["headroom"], closure)
        rec = st.records.get(entry)
        if rec is not None:
            rec.entry = _with_headroom(st, entry, rec.entry, rec.closure)
    return await _show(f"{entry}-headroom", present.headroom_markdown(ents[0]))


@server.command("solar.showRoofline")
async def cmd_roofline(ls: SolarServer, *args: Any) -> dict:
    """The roofline SVG of the entry on the active chip (matplotlib, in a worker)."""
    uri, entry = args[:2]
    s = ls.settings_for(ls.workspace.get_text_document(uri).path)
    try:
        reply = await _job(uri, entry, "roofline", {**s.analysis_config(), "verify": False})
    except (JobFailed, JobCancelled) as exc:
        return {"error": str(exc) or "superseded"}
    if reply.get("error"):
        return {"error": reply["error"]}
    shown = await _show(f"{entry}-roofline", reply["svg"], ".svg", open_it=False)  # the client renders it
    return {"svg": reply["svg"], "uri": shown["uri"]}


@server.command("solar.selectChip")
async def cmd_chip(ls: SolarServer, *args: Any) -> dict:
    from solar_lsp.hardware.chips import HardwareError, load_chip
    try:
        load_chip(str(args[0]))
    except (HardwareError, IndexError) as exc:
        return {"error": str(exc)}
    ls.overrides["chip"] = str(args[0])
    for uri in list(ls.docs):
        schedule(uri)
    return {"chip": args[0]}


@server.command("solar.setTarget")
async def cmd_target(ls: SolarServer, *args: Any) -> dict:
    value = str(args[0]).strip() if args else ""
    if value.lower().endswith("hz") or value.replace(".", "").isdigit():
        ls.overrides.update(target_hz=value, target_latency=None)
    else:
        ls.overrides.update(target_latency=value or None, target_hz=None)
    try:
        ls.settings_for(None).target_s  # noqa: B018
    except (ValueError, SettingsError) as exc:
        ls.overrides.pop("target_hz", None)
        ls.overrides.pop("target_latency", None)
        return {"error": str(exc)}
    for uri in list(ls.docs):
        schedule(uri)
    return {"target": value}


@server.command("solar.reanalyze")
async def cmd_reanalyze(ls: SolarServer, *args: Any) -> dict:
    for uri in (args[:1] or list(ls.docs)):
        st = ls.docs.get(uri)
        if st is not None:  # run the analysis again: not from memory, not from the disk cache
            st.records.clear()
            st.force = True
            schedule(uri)
    return {"ok": True}


@server.command("solar.status")
def cmd_status(ls: SolarServer, *args: Any) -> dict:
    return {**status_payload(), "time": time.time()}


@server.feature(T.SHUTDOWN)
async def on_shutdown(ls: SolarServer, params: None) -> None:
    if ls.pool is not None:
        await ls.pool.close()


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    server.start_io()


if __name__ == "__main__":
    main()
