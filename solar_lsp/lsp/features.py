"""What the editor asks for at a position: inlay hints (and their tooltips), hover, code lenses
over each entry and code actions. Records computed on an earlier text are mapped to the
current lines; the words come from :mod:`solar_lsp.lsp.present`."""

from __future__ import annotations

from lsprotocol import types as T

from solar_lsp.lsp import present
from solar_lsp.lsp.app import SolarServer, server
from solar_lsp.lsp.present_symbolic import sol_at_title, symbols_of
from solar_lsp.lsp.publish import current_lines, mapped
from solar_lsp.lsp.rewrite import local_rewrite
from solar_lsp.lsp.sizes import fmt_sizes


@server.feature(T.TEXT_DOCUMENT_INLAY_HINT, T.InlayHintOptions(resolve_provider=True))
def inlay_hints(ls: SolarServer, params: T.InlayHintParams) -> list[T.InlayHint]:
    """One hint at the end of each source line with ops: FLOPs, bytes, time, bound."""
    uri = params.text_document.uri
    st = ls.docs.get(uri)
    if st is None:
        return []
    cur = current_lines(uri)
    hints = []
    for rec, mp in mapped(st, cur):
        for ln in rec.entry.get("lines", []):
            if not ln.get("line"):
                continue
            j = mp.get(ln["line"] - 1)
            if j is None or not (params.range.start.line <= j <= params.range.end.line):
                continue
            hints.append(T.InlayHint(
                position=T.Position(j, len(cur[j])), label=present.hint_label(ln, rec.entry), padding_left=True,
                data={"uri": uri, "entry": rec.entry["name"], "line": ln["line"]}))
    return hints


@server.feature(T.INLAY_HINT_RESOLVE)
def inlay_hint_resolve(ls: SolarServer, hint: T.InlayHint) -> T.InlayHint:
    """The hint's tooltip: the line's ops in a table."""
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
    """A line's ops, or on an entry's definition line the entry's bounds."""
    st = ls.docs.get(params.text_document.uri)
    if st is None:
        return None
    cur = current_lines(params.text_document.uri)
    want = params.position.line
    for rec, mp in mapped(st, cur):
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
    """The bounds (and the inverse roofline of a target) over each entry, and with formulas the
    "SOL at S=…" lens; "analyzing…" before."""
    uri = params.text_document.uri
    st = ls.docs.get(uri)
    if st is None:
        return []
    cur = current_lines(uri)
    s = ls.settings_for(st.path)
    lenses = []
    shown = set()
    pragmas = {e.name: e.pragma for e in st.entries}
    for rec, mp in mapped(st, cur):
        j = mp.get(rec.entry["line"] - 1)
        if j is None:
            continue
        name = rec.entry["name"]
        shown.add(name)
        chip = rec.entry.get("totals", {}).get("hardware", s.chip)
        titles = present.lens_titles(rec.entry, chip, s.target_label(), s.mode)
        if rec.phase == "bounds":
            titles[0] += " · verifying…"
        at = T.Range(T.Position(j, 0), T.Position(j, 0))
        for title in titles:
            lenses.append(T.CodeLens(range=at, command=T.Command(
                title=title, command="solar.compareChips", arguments=[uri, name])))
        symbols = symbols_of(rec.entry, pragmas.get(name))
        if symbols and rec.entry.get("status") == "ok" and (s.symbolic or rec.entry.get("symbolic")):
            lenses.append(T.CodeLens(range=at, command=T.Command(
                title=sol_at_title(symbols, chip, st.sol_at.get(name)), command="solar.solAt",
                arguments=[uri, name, "", fmt_sizes(symbols)])))
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
    """The commands of the entry at the cursor, and the rewrite of a contraction chain."""
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
