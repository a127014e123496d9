"""The human-readable output of ``solar analyze``: a per-line table per entry, the three
fidelities, suggestions, the inverse roofline and the verification status."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from solar_lsp import units


def render(report, console: Console, chips) -> None:
    """The per-line table of each entry, then its fidelities, suggestions and verification."""
    chip = chips[0]
    for e in report.entries:
        head = f"[bold]{e.name}[/bold] (line {e.line}, {e.frontend})"
        if e.status != "ok":
            where = f" at line {e.error_line}" if e.error_line else ""
            console.print(f"{head}: [red]error{where}[/red]: {e.error}")
            continue
        tot = e.totals
        if getattr(e, "mode", "inference") == "train":
            console.print(train_table(e, f"{head}, one training step on {chip.display_name}"))
            _render_phases(e, console)
        else:
            console.print(_table(e, f"{head} on {chip.display_name}"))
        console.print(f"  fused: {units.seconds(tot['t_fused_s'])} ({tot['bound']}-bound, "
                      f"{units.nbytes(tot['bytes_fused'])} DRAM) · cache-aware: "
                      f"{units.seconds(tot.get('t_cache_aware_s'))} ({_nb(tot.get('bytes_cache_aware'))} DRAM"
                      f" in {_nb(tot.get('onchip_bytes'))} on chip) · unfused: {units.seconds(tot['t_unfused_s'])}"
                      f" · {units.tensor_units(tot['tensor_flops'], tot.get('tensor_flops_by_unit'))}")
        if tot.get("incomplete"):
            console.print(f"  [yellow]incomplete[/yellow]: {tot['incomplete']}")
        if len(e.by_hardware) > 1:
            for name, h in e.by_hardware.items():
                console.print(f"  {name}: unfused {units.seconds(h['t_unfused_s'])} · fused "
                              f"{units.seconds(h['t_fused_s'])} · cache-aware "
                              f"{units.seconds(h.get('t_cache_aware_s'))} ({h['bound']})")
        _render_suggestions(e, console)
        if e.inverse:
            _render_inverse(e.inverse, console)
        v = e.verification
        color = {"verified": "green", "mismatch": "red"}.get(v["status"], "yellow")
        console.print(f"  verification: [{color}]{v['status']}[/{color}] — {v['detail']}")
        c = v.get("counts")
        if c:  # counts checked beside the values (docs/sol-model.md, Verification)
            cc = {"checked": "green", "mismatch": "red"}.get(c["status"], "yellow")
            console.print(f"  counts: [{cc}]{c['status']}[/{cc}] — {c['detail']}")
        for u in e.unsupported:
            console.print(f"  [yellow]unsupported[/yellow] {u['op']} (line {u['line']}): {u['reason']}")
        for n in getattr(e, "notes", []):  # loop trip counts, the cond branch counted (docs/jax.md)
            console.print(f"  note (line {n['line']}): {n['note']}", markup=False)
        if getattr(e, "symbolic", None):
            render_symbolic(e, console)


def _table(e, title: str) -> Table:
    """The per-line table of an inference entry."""
    t = Table(title=title, title_justify="left")
    for col, j in (("line", "right"), ("ops", "left"), ("FLOPs", "right"), ("bytes", "right"),
                   ("unfused", "right"), ("bound", "left")):
        t.add_column(col, justify=j)
    for ln in e.lines:
        ops = ", ".join(sorted({units.op_name(o.target) for o in ln.ops}))
        t.add_row(str(ln.line) if ln.line else "?", ops, units.flops(ln.flops), units.nbytes(ln.bytes),
                  units.seconds(ln.t_unfused_s), ln.bound)
    tot = e.totals
    t.add_section()
    t.add_row("total", "", units.flops(tot["flops"]), units.nbytes(tot["bytes_unfused"]),
              units.seconds(tot["t_unfused_s"]), tot["bound_unfused"])
    return t


PHASES = ("forward", "backward", "optimizer")


def train_table(e, title: str) -> Table:
    """A training step's table (docs/training.md): a row per line and phase (backward work is
    on the forward line it differentiates, an update on its parameter's first line), then the
    totals of each phase and of the step."""
    t = Table(title=title, title_justify="left")
    for col, j in (("line", "right"), ("phase", "left"), ("ops", "left"), ("FLOPs", "right"),
                   ("bytes", "right"), ("unfused", "right"), ("bound", "left")):
        t.add_column(col, justify=j)
    for ln in e.lines:
        first = True
        for ph in PHASES:
            ops = [o for o in ln.ops if o.phase == ph]
            if not ops:
                continue
            comp = sum(o.t_s for o in ops if o.bound == "compute")
            mem = sum(o.t_s for o in ops if o.bound == "memory")
            t.add_row((str(ln.line) if ln.line else "?") if first else "", ph,
                      ", ".join(sorted({units.op_name(o.target) for o in ops})),
                      units.flops(sum(o.flops for o in ops)), units.nbytes(sum(o.bytes for o in ops)),
                      units.seconds(sum(o.t_s for o in ops)), "compute" if comp > mem else "memory")
            first = False
    t.add_section()
    for ph, d in (e.phases or {}).items():
        t.add_row("total", ph, "", units.flops(d["flops"]), units.nbytes(d["bytes_unfused"]),
                  units.seconds(d["t_unfused_s"]), "")
    tot = e.totals
    t.add_row("total", "step", "", units.flops(tot["flops"]), units.nbytes(tot["bytes_unfused"]),
              units.seconds(tot["t_unfused_s"]), tot["bound_unfused"])
    return t


def _render_phases(e, console: Console) -> None:
    """The fused SOL of each phase and the activation memory kept for the backward."""
    parts = [f"{ph} {units.seconds(d['t_fused_s'])} ({units.nbytes(d['bytes_fused'])} DRAM)"
             for ph, d in (e.phases or {}).items()]
    console.print("  fused per phase: " + " · ".join(parts))
    act = e.totals.get("activation_bytes")
    if act is not None:
        console.print(f"  activations kept for the backward: {units.nbytes(act)} (weights, "
                      "gradients and optimizer state not included)")


def render_symbolic(e, console: Console) -> None:
    """The entry's formulas (``--symbolic``), one ``where  quantity = formula`` row each."""
    sym = e.symbolic
    fit = sym["fit"]
    checked = "; ".join(", ".join(f"{k}={v}" for k, v in c.items()) for c in fit["checked_at"])
    say = lambda text: console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
    per = [f"{n} mod {fit['steps'][n] * p}" for n, p in fit["periods"].items() if p > 1]
    per_text = f"; per residue class of {', '.join(per)}" if per else ""
    say(f"  symbolic in {', '.join(sym['symbols']) or 'no symbols'} ({fit['analyses']} analyses, "
        f"degree ≤ {fit['max_degree']} per symbol{per_text}; checked at {checked or 'no other size'}):")
    rows = [("total", q, sym.get(q)) for q in _QUANTITIES]
    rows += [("total", f"{t} ({sym['hardware']})", sym.get(t)) for t in ("t_unfused_s", "t_fused_s")]
    for ln in e.lines:
        where = f"line {ln.line}" if ln.line else "line ?"
        rows += [(where, q, (ln.symbolic or {}).get(q)) for q in _QUANTITIES]
    width = max(len(r[0]) for r in rows)
    qwidth = max(len(r[1]) for r in rows)
    for where, q, formula in rows:
        say(f"    {where:<{width}}  {q:<{qwidth}} = {formula if formula is not None else '(no formula)'}")
    for nf in sym.get("not_fitted", []):
        where = "total" if nf["line"] is None else f"line {nf['line']}"
        say(f"    {where} {nf['quantity']}: {nf['why']}")
    for note in sym.get("notes", []):
        say(f"    note: {note}")


_QUANTITIES = ("tensor_flops", "vector_flops", "transcendentals", "bytes_unfused", "bytes_fused")


def _nb(n) -> str:
    return units.nbytes(n) if n is not None else "—"


def _render_suggestions(e, console: Console, limit: int = 3) -> None:
    """The top fusion and reorder suggestions of an entry, a line each."""
    for f in e.fusion[:limit]:
        lines = ",".join(str(x) for x in f["lines"])
        console.print(f"  [cyan]fuse[/cyan] lines {lines}: {f['pattern']} — saves "
                      f"{units.nbytes(f['bytes_saved'])} DRAM, {units.seconds(f['t_saved_s'])}")
    if len(e.fusion) > limit:
        console.print(f"  … {len(e.fusion) - limit} more fusion suggestions (--json)")
    for r in e.reorder[:limit]:
        console.print(f"  [cyan]reorder[/cyan] line {r['line']}: {units.flops(r['flops_before'])} → "
                      f"{units.flops(r['flops_after'])} as {r['expression']}")


def _render_inverse(inv: dict, console: Console) -> None:
    tgt = inv["target_s"]
    for fid, d in inv["by_fidelity"].items():
        if not d:
            continue
        ok = [c for c, s in d["shortfall"].items() if s["compute"] <= 1 and s["bandwidth"] <= 1]
        console.print(f"  {units.seconds(tgt)} {fid}: needs ≥ {units.rate(d['flops_per_s'], 'FLOP/s')}"
                      f" and ≥ {units.rate(d['bytes_per_s'], 'B/s')}; meets it: {', '.join(ok) or 'none'}")
