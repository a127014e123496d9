"""Analysis scheduling: a document's entries are discovered from its text (AST only), results
whose source closure, shapes and settings are unchanged come from memory or the on-disk cache,
and the stale entries run as one job in a worker (bounds first, then the verified result).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os

from solar_lsp.lsp.app import DocState, Record, server
from solar_lsp.lsp.closure import closure_hash, defs_of_lines
from solar_lsp.lsp.pool import JobCancelled, JobFailed, request
from solar_lsp.lsp.progress import progress_begin, progress_end, progress_report
from solar_lsp.lsp.publish import notify_status, publish
from solar_lsp.lsp.settings import Settings
from solar_lsp.lsp.views import is_view
from solar_lsp.source.discover import DiscoveryError, Entry, discover


def doc_state(uri: str) -> DocState:
    """The server's state of document ``uri``, created on first use."""
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


def runnable_path(settings: Settings, path: str, text: str) -> str:
    """The file a worker runs for the buffer ``text`` of ``path``: the file itself when the
    buffer is saved, else a copy of the buffer with the same file name."""
    return path if _on_disk(path, text) else _buffer_copy(settings, path, text)


def schedule(uri: str, delay: float = 0.0) -> None:
    """Analyze the document after ``delay`` seconds; a later call replaces a pending one."""
    if is_view(server.workspace.get_text_document(uri).path):
        return
    st = doc_state(uri)
    if st.debounce is not None:
        st.debounce.cancel()

    async def later() -> None:
        if delay:
            await asyncio.sleep(delay)
        await analyze_document(uri)

    st.debounce = asyncio.ensure_future(later())


async def analyze_document(uri: str) -> None:
    """Discover the document's entries, show what is known, and start a job for the rest."""
    if server.config_ready is not None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.config_ready.wait(), 10)
    server.ensure_runtime()
    st = doc_state(uri)
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
    _take_entries(st, entries)
    stale = _stale_entries(st, text, path, key)
    publish(st)
    await server.refresh()
    if not stale:
        return
    if st.job is not None and not st.job.done():
        st.job.cancel()
    st.job = asyncio.ensure_future(_run_job(st, text, lines, stale, settings))


def _take_entries(st: DocState, entries: list[Entry]) -> None:
    """Keep the discovered entries; forget results of entries that are gone."""
    st.file_error = None
    st.entries = entries
    if server.pool is not None and any(e.frontend == "jax" for e in entries):
        server.pool.jax = True  # workers started from now on warm up jax too
    names = {e.name for e in entries}
    for gone in set(st.records) - names:
        del st.records[gone]
    for gone in set(st.measured) - names:
        del st.measured[gone]


def _stale_entries(st: DocState, text: str, path: str, key: str) -> list[str]:
    """Entries whose result is neither in memory nor in the disk cache (all of them after
    solar.reanalyze); cache hits become the document's records."""
    stale: list[str] = []
    cache = server.cache
    force, st.force = st.force, False
    for e in st.entries:
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
            st.records[e.name] = Record(with_headroom(st, e.name, hit["entry"], h), hit["lines"], h, key,
                                        files=files)
            st.faults.pop(e.name, None)
            continue
        stale.append(e.name)
    return stale


async def _run_job(st: DocState, text: str, lines: list[str], stale: list[str], settings: Settings) -> None:
    path = st.path
    key = settings.analysis_key()
    run_path = runnable_path(settings, path, text)
    entries = stale if len(stale) < len(st.entries) else None
    req = request(run_path, path, settings.analysis_config(), entries)
    token = await progress_begin(f"solar: analyzing {os.path.basename(path)}")
    st.analyzing = True
    notify_status()

    async def on_message(msg: dict) -> None:
        if msg.get("type") == "bounds":
            _store(st, msg["report"], lines, text, key, phase="bounds")
            progress_report(token, "bounds ready, verifying")
            publish(st)
            await server.refresh()

    try:
        reply = await server.pool.run(st.uri, req, on_message)
    except JobCancelled:
        progress_end(token, "superseded")
        return
    except JobFailed as exc:
        await _job_failed(st, stale, exc, token)
        return
    except asyncio.CancelledError:
        progress_end(token, "superseded")
        raise
    st.analyzing = False
    report = reply["report"]
    server.log(f"analyzed {os.path.basename(path)} {entries or 'all'}: "
               + ", ".join(f"{e['name']} {e['status']}" for e in report.get("entries", [])))
    if report.get("error"):
        st.file_error = (1, f"solar: {report['error']}")
    _store(st, report, lines, text, key, phase="final", files=reply.get("sources") or [])
    progress_end(token, "done")
    publish(st)
    await server.refresh()


async def _job_failed(st: DocState, stale: list[str], exc: JobFailed, token: str | None) -> None:
    """A job that ended without a result: each of its entries shows why, on the line it was at."""
    server.log(f"job for {os.path.basename(st.path)} failed: {exc}")
    for name in stale:
        ent = next((e for e in st.entries if e.name == name), None)
        st.faults[name] = (exc.line or (ent.line if ent else 1), f"solar: {exc}")
    progress_end(token, "failed")
    st.analyzing = False
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
        st.records[name] = Record(with_headroom(st, name, e, h), lines, h, key, phase, files)
        st.faults.pop(name, None)
        if phase == "final" and cache is not None:
            cache.set_closure_extra(st.path, name, extra, files)
            if e.get("status") == "ok":
                cache.put(st.path, name, h, key, {"entry": e, "lines": lines})


def with_headroom(st: DocState, name: str, entry: dict, closure: str | None) -> dict:
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


def closure_now(uri: str, name: str, text: str) -> str | None:
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
