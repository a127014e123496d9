"""Analysis scheduling: a document's entries are discovered from its text (AST only), results
whose source closure, shapes and settings are unchanged come from memory or the on-disk cache,
and the stale entries run as one job in a worker (bounds first, then the verified result).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import traceback

from solar_lsp.lsp import buffers
from solar_lsp.lsp.app import DocState, Record, server
from solar_lsp.lsp.closure import closure_hash, defs_of_lines
from solar_lsp.lsp.pool import JobCancelled, JobFailed, request
from solar_lsp.lsp.progress import progress_begin, progress_end, progress_report
from solar_lsp.lsp.publish import notify_status, publish
from solar_lsp.lsp.settings import Settings
from solar_lsp.lsp.views import is_view
from solar_lsp.source.discover import DiscoveryError, Entry, discover


def doc_state(uri: str) -> DocState:
    """The server's state of document ``uri``, created on first use; a document closed while
    its job ran gets that state (its results so far, the running job) back."""
    st = server.docs.get(uri)
    if st is None:
        st = server.detached.pop(uri, None)
        if st is not None and st.job_text != _text(uri):  # reopened with other text (the
            st.job.cancel()  # buffer was closed unsaved): what the job computes is not shown
            st = None
        if st is None:
            st = DocState(uri, server.path_of(uri))
        st.closed = False
        server.docs[uri] = st
    return st


def _text(uri: str) -> str | None:
    try:
        return server.workspace.get_text_document(uri).source
    except (OSError, UnicodeDecodeError):
        return None


def runnable_path(settings: Settings, path: str, text: str) -> str:
    """The file a worker runs for the buffer ``text`` of ``path``: the file itself when the
    buffer is saved, else a copy of the buffer with the same file name."""
    return buffers.runnable_path(settings.cache_dir, path, text)


def schedule(uri: str, delay: float = 0.0) -> None:
    """Analyze the open document after ``delay`` seconds; a later call replaces a pending one."""
    if not server.is_open(uri) or is_view(server.path_of(uri)):
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
    if not server.is_open(uri):  # closed meanwhile
        return
    server.ensure_runtime()
    st = doc_state(uri)
    text, path = server.workspace.get_text_document(uri).source, st.path
    settings = server.settings_for(path)
    key = settings.analysis_key()
    try:
        entries = discover(text, path, {"dims": settings.dims, "entries": settings.entries})
    except DiscoveryError as exc:
        st.file_error = (getattr(exc, "line", None) or 1, f"solar: {exc}")
        publish(st)
        await server.refresh()
        return
    _take_entries(st, entries)
    force = st.force
    stale = _stale_entries(st, text, path, key)
    publish(st)
    await server.refresh()
    if not stale:
        return
    if st.job is not None and not st.job.done():
        if not force and key == st.job_key and all(st.job_closures.get(n, "-") == h for n, h in stale.items()):
            return  # the running job computes exactly this (say, the document was closed and reopened)
        st.job.cancel()
    st.job_text, st.job_key, st.job_closures = text, key, dict(stale)
    st.job = asyncio.ensure_future(_run_job(st, text, stale, settings))
    st.job.add_done_callback(lambda task: job_raised(st, task))


def job_raised(st: DocState, task: asyncio.Future) -> None:
    """A job that raised (a bug of ours: the user's code failing is a JobFailed, handled in
    the job) says so in the log and on its entries, instead of leaving the document's hints
    behind its text with nothing said; no task's exception goes unread."""
    if task.cancelled() or task.exception() is None:
        return
    exc = task.exception()
    server.log(f"internal error finishing the job of {os.path.basename(st.path)}: "
               + "".join(traceback.format_exception(exc)).rstrip())
    for e in st.entries:
        st.faults[e.name] = (e.line, f"solar: internal error ({type(exc).__name__}: {exc}); please report it")
    st.analyzing = False
    with contextlib.suppress(Exception):  # (the editor may be gone)
        publish(st)
        asyncio.ensure_future(server.refresh())


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


def _stale_entries(st: DocState, text: str, path: str, key: str) -> dict[str, str | None]:
    """Entries whose final result is neither in memory nor in the disk cache (all of them after
    solar.reanalyze), with their closure hash; cache hits become the document's records, and
    the bounds of a job that did not get to verify them are shown while the entry runs again."""
    stale: dict[str, str | None] = {}
    cache = server.cache
    force, st.force = st.force, False
    for e in st.entries:
        extra, files = cache.closure_parts(path, e.name) if cache else ([], [])
        h = closure_hash(text, e.name, extra, e.pragma_line, files)
        rec = st.records.get(e.name)
        if force:
            st.records.pop(e.name, None)
            stale[e.name] = h
            continue
        if rec is not None and rec.closure == h and rec.key == key and rec.phase == "final":
            continue
        hit = cache.get(path, e.name, h, key) if cache and h else None
        if hit is not None:
            st.records[e.name] = Record(with_headroom(st, e.name, hit["entry"], h), hit["lines"], h, key,
                                        files=files)
            st.faults.pop(e.name, None)
            continue
        bounds = cache.get(path, e.name, h, key, "bounds") if cache and h else None
        if bounds is not None and not (rec is not None and rec.closure == h and rec.key == key):
            st.records[e.name] = Record(with_headroom(st, e.name, bounds["entry"], h), bounds["lines"], h,
                                        key, "bounds", files)
        stale[e.name] = h
    return stale


async def _run_job(st: DocState, text: str, stale: dict[str, str | None], settings: Settings) -> None:
    """Run the stale entries in a worker: bounds first, then the verified result. A document
    closed meanwhile still gets its results into the cache; nothing is shown for it."""
    path, lines = st.path, text.splitlines()
    key = settings.analysis_key()
    entries = list(stale) if len(stale) < len(st.entries) else None
    req = request(runnable_path(settings, path, text), path, settings.analysis_config(), entries)
    token = await progress_begin(f"solar: analyzing {os.path.basename(path)}")
    st.analyzing = True
    notify_status()

    async def on_message(msg: dict) -> None:
        if msg.get("type") == "bounds":
            _store(st, msg["report"], lines, text, key, phase="bounds", started=stale)
            progress_report(token, "bounds ready, verifying")
            publish(st)
            await server.refresh()

    try:
        reply = await server.pool.run(st.uri, req, on_message)
    except JobCancelled:
        progress_end(token, "superseded")
        return
    except asyncio.CancelledError:
        progress_end(token, "superseded")
        raise
    except JobFailed as exc:
        st.analyzing = False
        await _job_failed(st, list(stale), exc, token)
        return
    finally:
        _job_ended(st)
    report = reply["report"]
    server.log(f"analyzed {os.path.basename(path)} {entries or 'all'}: "
               + ", ".join(f"{e['name']} {e['status']}" for e in report.get("entries", [])))
    if report.get("error"):
        st.file_error = (1, f"solar: {report['error']}")
    _store(st, report, lines, text, key, phase="final", files=reply.get("sources") or [])
    progress_end(token, "done")
    publish(st)
    await server.refresh()


def _job_ended(st: DocState) -> None:
    """The job of ``st`` is over: it is no longer analyzing, and no longer kept when closed."""
    st.analyzing = False
    if st.closed and server.detached.get(st.uri) is st:
        del server.detached[st.uri]  # what it computed is in the cache now


async def _job_failed(st: DocState, stale: list[str], exc: JobFailed, token: str | None) -> None:
    """A job that ended without a result: each of its entries shows why, on the line it was at."""
    server.log(f"job for {os.path.basename(st.path)} failed: {exc}")
    for name in stale:
        ent = next((e for e in st.entries if e.name == name), None)
        st.faults[name] = (exc.line or (ent.line if ent else 1), f"solar: {exc}")
    progress_end(token, "failed")
    publish(st)
    await server.refresh()


def _store(st: DocState, report: dict, lines: list[str], text: str, key: str, phase: str,
           files: list[str] | None = None, started: dict[str, str | None] | None = None) -> None:
    """Keep the entries of ``report``; ``files`` (the user modules the job imported) go into
    each closure hash, so that editing a sibling module makes the result stale. Bounds are
    cached under the closure hash the job ``started`` with (what the next open computes)."""
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
        prev = st.records.get(name)
        if prev is None or (prev.closure, prev.key) != (h, key):
            st.sol_at.pop(name, None)  # evaluated on other code or settings: the lens asks again
        st.records[name] = Record(with_headroom(st, name, e, h), lines, h, key, phase, files)
        st.faults.pop(name, None)
        if cache is None or e.get("status") != "ok":
            if phase == "final" and cache is not None:
                cache.set_closure_extra(st.path, name, extra, files)
            continue
        if phase == "final":
            cache.set_closure_extra(st.path, name, extra, files)
            cache.put(st.path, name, h, key, {"entry": e, "lines": lines})
        elif (started or {}).get(name):
            cache.put(st.path, name, started[name], key, {"entry": e, "lines": lines}, "bounds")


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
