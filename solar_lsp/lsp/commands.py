"""``workspace/executeCommand``: the code lens and code action commands (reports written as
read-only views), chip and target overrides, re-analysis, the status, and ``solar.entries``
(a document's entry points, for a client that asks the user which one)."""

from __future__ import annotations

import time
from typing import Any

from solar_lsp.hardware.chips import HardwareError, list_chips, load_chip
from solar_lsp.lsp import present, present_symbolic
from solar_lsp.lsp.analysis import closure_now, runnable_path, schedule, with_headroom
from solar_lsp.lsp.app import Record, SolarServer, server
from solar_lsp.lsp.pool import JobCancelled, JobFailed, request
from solar_lsp.lsp.progress import progress_begin, progress_end
from solar_lsp.lsp.publish import status_payload
from solar_lsp.lsp.settings import SettingsError
from solar_lsp.lsp.sizes import SizesError, parse_sizes
from solar_lsp.lsp.views import show_view
from solar_lsp.source.discover import DiscoveryError, Entry, discover

NEEDS_TARGET = "this command needs the arguments [document URI, entry name]"


def _target(args: tuple) -> tuple[str, str] | None:
    """The ``[uri, entry]`` a command is about (both strings), or None."""
    if len(args) < 2 or not all(isinstance(a, str) for a in args[:2]):
        return None
    return args[0], args[1]


def _record(uri: str, entry: str) -> Record | None:
    st = server.docs.get(uri)
    return st.records.get(entry) if st else None


def _settings(uri: str):
    return server.settings_for(server.path_of(uri))


async def _job(uri: str, entry: str, kind: str, config: dict, extra: dict | None = None) -> dict:
    server.ensure_runtime()
    path = server.path_of(uri)
    try:
        text = server.workspace.get_text_document(uri).source
    except (OSError, UnicodeDecodeError) as exc:
        raise JobFailed(f"cannot read {path}: {exc}") from exc
    run_path = runnable_path(server.settings_for(path), path, text)
    token = await progress_begin(f"solar: {kind} {entry}")
    try:
        return await server.pool.run(f"{uri}#{kind}", {**request(run_path, path, config, [entry], kind),
                                                       **(extra or {})})
    finally:
        progress_end(token, "done")


@server.command("solar.showFusion")
async def cmd_fusion(ls: SolarServer, *args: Any) -> dict:
    """The entry's fusion suggestions, as a view."""
    if (target := _target(args)) is None:
        return {"error": NEEDS_TARGET}
    rec = _record(*target)
    if rec is None:
        return {"error": "no result for this entry yet"}
    return await show_view(f"{target[1]}-fusion", present.fusion_markdown(rec.entry))


@server.command("solar.showReorder")
async def cmd_reorder(ls: SolarServer, *args: Any) -> dict:
    """The entry's cheaper contraction orders, as a view."""
    if (target := _target(args)) is None:
        return {"error": NEEDS_TARGET}
    rec = _record(*target)
    if rec is None:
        return {"error": "no result for this entry yet"}
    return await show_view(f"{target[1]}-reorder", present.reorder_markdown(rec.entry))


@server.command("solar.showIR")
async def cmd_ir(ls: SolarServer, *args: Any) -> dict:
    """The entry's Affine Loop IR (lowered in a worker), as a view."""
    if (target := _target(args)) is None:
        return {"error": NEEDS_TARGET}
    uri, entry = target
    s = _settings(uri)
    try:
        reply = await _job(uri, entry, "ir", s.analysis_config())
    except (JobFailed, JobCancelled) as exc:
        return {"error": str(exc) or "superseded"}
    return await show_view(f"{entry}-ir", f"# Affine Loop IR of {entry}\n" + reply["text"], ".py")


@server.command("solar.compareChips")
async def cmd_compare(ls: SolarServer, *args: Any) -> dict:
    """The entry's bounds on every bundled chip, the active one first, as a view."""
    if (target := _target(args)) is None:
        return {"error": NEEDS_TARGET}
    uri, entry = target
    s = _settings(uri)
    cfg = {**s.analysis_config(), "verify": False, "symbolic": False,
           "hw": [s.chip] + [c for c in list_chips() if c != s.chip]}
    try:
        reply = await _job(uri, entry, "analyze", cfg)
    except (JobFailed, JobCancelled) as exc:
        return {"error": str(exc) or "superseded"}
    ents = [e for e in reply["report"]["entries"] if e["name"] == entry]
    if not ents:
        return {"error": f"no entry {entry}"}
    return await show_view(f"{entry}-compare", present.compare_markdown(ents[0]))


@server.command("solar.explainHeadroom")
async def cmd_headroom(ls: SolarServer, *args: Any) -> dict:
    """Measure the entry in a worker, keep the result (the hover shows the last ratio), show it."""
    if (target := _target(args)) is None:
        return {"error": NEEDS_TARGET}
    uri, entry = target
    s = _settings(uri)
    cfg = {**s.analysis_config(), "verify": False, "device": s.headroom_device}
    closure = (closure_now(uri, entry, ls.workspace.get_text_document(uri).source)  # the code measured
               if uri in ls.docs else None)
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
            rec.entry = with_headroom(st, entry, rec.entry, rec.closure)
    return await show_view(f"{entry}-headroom", present.headroom_markdown(ents[0]))


@server.command("solar.showRoofline")
async def cmd_roofline(ls: SolarServer, *args: Any) -> dict:
    """The roofline SVG of the entry on the active chip (matplotlib, in a worker)."""
    if (target := _target(args)) is None:
        return {"error": NEEDS_TARGET}
    uri, entry = target
    s = _settings(uri)
    try:
        reply = await _job(uri, entry, "roofline", {**s.analysis_config(), "verify": False})
    except (JobFailed, JobCancelled) as exc:
        return {"error": str(exc) or "superseded"}
    if reply.get("error"):
        return {"error": reply["error"]}
    shown = await show_view(f"{entry}-roofline", reply["svg"], ".svg", open_it=False)  # the client renders it
    return {"svg": reply["svg"], "uri": shown["uri"]}


@server.command("solar.solAt")
async def cmd_sol_at(ls: SolarServer, *args: Any) -> dict:
    """The entry's SOL at other sizes of its shape symbols (``[uri, entry, "S=4096"]``): its
    formulas evaluated there (fitted in a worker first when the analysis has none) and the entry
    analyzed there, as a view; the lens then shows the three fidelities. Without sizes, the
    formulas alone."""
    if (target := _target(args)) is None:
        return {"error": NEEDS_TARGET}
    uri, entry = target
    try:
        sizes = parse_sizes(args[2]) if len(args) > 2 and args[2] not in (None, "", {}) else {}
    except SizesError as exc:
        return {"error": str(exc)}
    s = _settings(uri)
    rec = _record(uri, entry)
    known = (rec.entry.get("symbolic") or None) if rec is not None else None
    cfg = {**s.analysis_config(), "verify": False, "symbolic": False}
    try:
        reply = await _job(uri, entry, "sol_at", cfg, {"sizes": sizes, "symbolic": known})
    except (JobFailed, JobCancelled) as exc:
        return {"error": str(exc) or "superseded"}
    chip = (rec.entry.get("totals", {}).get("hardware") if rec is not None else None) or s.chip
    if rec is not None and not known and reply.get("symbolic"):  # fitted now: the hover shows them
        rec.entry = {**rec.entry, "symbolic": reply["symbolic"], "lines": [
            {**ln, "symbolic": (reply.get("lines") or {}).get(str(ln.get("line")), ln.get("symbolic"))}
            for ln in rec.entry.get("lines", [])]}
    st = ls.docs.get(uri)
    if st is not None and sizes:
        st.sol_at[entry] = {**reply, "asked": sizes}
        await ls.refresh()
    shown = await show_view(f"{entry}-sol-at", present_symbolic.sol_at_markdown(entry, chip, reply))
    return {**shown, "formulas_at": reply.get("formulas_at"), "analysis_at": reply.get("analysis_at")}


@server.command("solar.selectChip")
async def cmd_chip(ls: SolarServer, *args: Any) -> dict:
    """Use another chip (a bundled name or a chip file) until the client's settings change."""
    try:
        load_chip(str(args[0]))
    except (HardwareError, IndexError, OSError, ValueError) as exc:
        return {"error": str(exc)}
    ls.overrides["chip"] = str(args[0])
    for uri in list(ls.docs):
        schedule(uri)
    return {"chip": args[0]}


@server.command("solar.setTarget")
async def cmd_target(ls: SolarServer, *args: Any) -> dict:
    """Set the target of the inverse roofline: a latency (``2ms``) or a rate (``500Hz``, ``500``)."""
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
    """Analyze the document (or every open one) again, past the memory and the disk cache."""
    for uri in (args[:1] or list(ls.docs)):
        st = ls.docs.get(uri) if isinstance(uri, str) else None
        if st is not None:  # run the analysis again: not from memory, not from the disk cache
            st.records.clear()
            st.force = True
            schedule(uri)
    return {"ok": True}


@server.command("solar.status")
def cmd_status(ls: SolarServer, *args: Any) -> dict:
    """The status payload of ``solar/status``, with the server's time."""
    return {**status_payload(), "time": time.time()}


def entry_json(e: Entry) -> dict:
    """What a client needs to name and locate an entry (lines 1-based, as in the reports)."""
    return {"name": e.name, "kind": e.kind, "frontend": e.frontend, "line": e.line,
            "end_line": e.end_line, "pragma_line": e.pragma_line}


@server.command("solar.entries")
def cmd_entries(ls: SolarServer, *args: Any) -> dict:
    """The entry points of document ``args[0]``, discovered from its text (AST only, no worker):
    ``{"entries": [...]}``, or ``{"entries": [], "error": why}`` when the text has none to give."""
    if not args or not isinstance(args[0], str):
        return {"entries": [], "error": "solar.entries needs a document URI"}
    path = ls.path_of(args[0])
    try:
        text = ls.workspace.get_text_document(args[0]).source
    except (OSError, UnicodeDecodeError) as exc:
        return {"entries": [], "error": f"cannot read {path}: {exc}"}
    s = ls.settings_for(path)
    try:
        entries = discover(text, path, {"dims": s.dims, "entries": s.entries})
    except DiscoveryError as exc:
        return {"entries": [], "error": str(exc)}
    return {"entries": [entry_json(e) for e in entries]}
