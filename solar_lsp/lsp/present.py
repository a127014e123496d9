"""What the editor shows, as pure functions of the engine's JSON (one entry of
``FileReport.to_json()``): inlay-hint labels, hover tables, lens titles, diagnostics and the
markdown reports behind the code actions."""

from __future__ import annotations

from solar_lsp import units
from solar_lsp.lsp.present_symbolic import entry_formulas, line_formulas

PHASES = ("forward", "backward", "optimizer")


def is_train(entry: dict) -> bool:
    """Whether ``entry`` is a training step's report (``mode`` "train", docs/training.md)."""
    return entry.get("mode") == "train"


def hint_label(line: dict, entry: dict | None = None) -> str:
    """``2.1 GFLOP · 48 MB · 21 µs mem`` (docs/architecture.md §8); in train mode prefixed
    ``train step:`` (the line's forward, backward and optimizer work together)."""
    bound = "mem" if line.get("bound") == "memory" else "compute"
    text = (f"{units.flops(line['flops'])} · {units.nbytes(line['bytes'])} · "
            f"{units.seconds(line['t_unfused_s'])} {bound}")
    return f"train step: {text}" if entry is not None and is_train(entry) else text


def phase_rows(phases: dict | None, bytes_key: str = "bytes") -> list[str]:
    """A markdown table of a line's or an entry's work per training phase (empty without
    ``phases``: an inference report)."""
    if not phases:
        return []
    entry_level = "bytes_unfused" in next(iter(phases.values()), {})
    if entry_level:
        rows = ["| phase | FLOPs | GEMM/conv FLOPs | bytes unfused | bytes fused | unfused | fused |",
                "|---|---:|---:|---:|---:|---:|---:|"]
    else:
        rows = ["| phase | FLOPs | bytes | unfused |", "|---|---:|---:|---:|"]
    for name in [*PHASES, *sorted(set(phases) - set(PHASES))]:
        ph = phases.get(name)
        if not ph:
            continue
        if entry_level:
            rows.append(f"| {name} | {units.flops(ph.get('flops', 0))} | {units.flops(ph.get('tensor_flops', 0))} | "
                        f"{units.nbytes(ph.get('bytes_unfused', 0))} | {units.nbytes(ph.get('bytes_fused', 0))} | "
                        f"{units.seconds(ph.get('t_unfused_s'))} | {units.seconds(ph.get('t_fused_s'))} |")
        else:
            rows.append(f"| {name} | {units.flops(ph.get('flops', 0))} | {units.nbytes(ph.get(bytes_key, 0))} | "
                        f"{units.seconds(ph.get('t_unfused_s'))} |")
    return rows


def op_state(entry: dict, op_id: str, phase: str) -> str:
    """Whether the IR of op ``op_id`` was verified, failed a check, or is still being verified."""
    if phase == "bounds":
        return "verifying…"
    v = entry.get("verification") or {}
    for issue in v.get("issues", []):
        if issue.get("op") == op_id:
            return issue.get("status", "?")
    return "verified" if v.get("status") == "verified" else v.get("status", "unverified")


def line_markdown(line: dict, entry: dict, phase: str = "final") -> str:
    """The ops on one source line: the hover and the hint's tooltip."""
    tot = entry.get("totals") or {}
    chip = tot.get("hardware", "?")
    train = is_train(entry)
    rows = op_rows(line["ops"], entry, phase, with_phase=train)
    what = " · **train step**" if train else ""
    head = (f"**{entry['name']}** · line {line['line']}{what} · SOL on **{chip}**: "
            f"{units.flops(line['flops'])}, {units.nbytes(line['bytes'])} DRAM unfused, "
            f"{_at_least(line['t_unfused_s'])} ({line.get('bound', '?')}-bound)")
    top = [head, *line_formulas(line)]
    if train and line.get("phases"):
        top += ["", *phase_rows(line["phases"])]
    foot = [f"Entry: unfused {units.seconds(tot.get('t_unfused_s'))} · fused "
            f"{units.seconds(tot.get('t_fused_s'))} · cache-aware "
            f"{units.seconds(tot.get('t_cache_aware_s'))}"]
    v = entry.get("verification") or {}
    foot.append("verification: **verifying…**" if phase == "bounds" else
                f"verification: **{v.get('status', '?')}** — {v.get('detail', '')}")
    foot += counts_line(v)
    h = entry.get("headroom") or {}
    r = (h.get("ratios") or {}).get("fused")
    if r and "error" not in h:
        foot.append(f"last measured: {units.seconds(h.get('measured_s'))} on {h.get('device')} "
                    f"= {r:.1f}× the fused bound" + (f" ({_EARLIER})" if h.get("earlier_code") else ""))
    return "\n".join([*top, "", *rows, "", *foot])


def _at_least(t: float | None) -> str:
    """``≥ 21 µs``; ``< 1 ns`` stays as it is (a time that small is noise, not a bound)."""
    text = units.seconds(t)
    return text if text.startswith("<") else f"≥ {text}"


def op_rows(ops: list[dict], entry: dict, phase: str, with_phase: bool = False) -> list[str]:
    """The op table of a line: friendly op names (``batch_norm``, not
    ``aten._native_batch_norm_legit_no_training.default``), and in train mode each op's phase."""
    ph_head, ph_sep = ("phase | ", "---|") if with_phase else ("", "")
    rows = [f"| op | {ph_head}shapes | dtype | FLOPs | bytes | unfused | compute-only | bound | check |",
            f"|---|{ph_sep}---|---|---:|---:|---:|---:|---|---|"]
    for op in ops:
        comp = op.get("t_compute_s")
        ph = f"{op.get('phase') or '—'} | " if with_phase else ""
        rows.append(
            f"| `{units.op_name(op['op'])}` | {ph}{_shapes(op['shapes'])} | {op['dtype']} | "
            f"{units.flops(op['flops'])} | {units.nbytes(op['bytes'])} | {units.seconds(op['t_s'])} | "
            f"{units.seconds(comp) if comp is not None else '—'} | {op['bound']} | "
            f"{op_state(entry, op.get('id', ''), phase)} |")
    return rows


_EARLIER = "measured on an earlier version of the code"


def last_measured(entry: dict) -> list[str]:
    """The last Explain headroom result, for the entry's hover: time, device, measured/bound
    for the fused and cache-aware fidelities, the diagnosis; empty when never measured."""
    h = entry.get("headroom") or {}
    if not h.get("measured_s") or "error" in h:
        return []
    ratios = h.get("ratios") or {}
    parts = [f"{ratios[k]:.1f}× the {name} bound" for k, name in (("fused", "fused"), ("cache_aware", "cache-aware"))
             if ratios.get(k)]
    out = [f"last measured: **{units.seconds(h['measured_s'])}** on {h.get('device')} "
           f"(bounds on {h.get('chip')})" + (": " + ", ".join(parts) if parts else "")]
    if h.get("diagnosis"):
        out.append(f"diagnosis: **{h['diagnosis']}**")
    if h.get("earlier_code"):
        out.append(f"_{_EARLIER}: run Explain headroom again_")
    return out


def _shapes(shapes: list) -> str:
    return ", ".join("×".join(str(d) for d in s) if s else "scalar" for s in shapes[:4]) + \
        (" …" if len(shapes) > 4 else "")


def entry_markdown(entry: dict, phase: str = "final") -> str:
    """Hover on an entry's definition line."""
    if entry.get("status") != "ok":
        return f"**{entry['name']}**: analysis failed — {entry.get('error')}"
    tot = entry["totals"]
    what = " · **train step**" + (f" (optimizer {entry['optimizer']})" if entry.get("optimizer") else "") \
        if is_train(entry) else ""
    out = [f"**{entry['name']}** ({entry.get('frontend', 'torch')}){what} on **{tot.get('hardware')}**", "",
           "| fidelity | time | bytes | bound |", "|---|---:|---:|---|",
           f"| unfused | {units.seconds(tot['t_unfused_s'])} | {units.nbytes(tot['bytes_unfused'])} | "
           f"{tot.get('bound_unfused')} |",
           f"| fused | {units.seconds(tot['t_fused_s'])} | {units.nbytes(tot['bytes_fused'])} | {tot.get('bound')} |"]
    if tot.get("t_cache_aware_s") is not None:
        out.append(f"| cache-aware | {units.seconds(tot['t_cache_aware_s'])} | "
                   f"{units.nbytes(tot.get('bytes_cache_aware') or 0)} | |")
    out += ["", f"{units.flops(tot['flops'])} in all: "
            f"{units.tensor_units(tot['tensor_flops'], tot.get('tensor_flops_by_unit'))}"]
    if is_train(entry) and entry.get("phases"):
        out += ["", *phase_rows(entry["phases"])]
        if tot.get("activation_bytes") is not None:
            out += ["", f"activations kept for the backward: {units.nbytes(tot['activation_bytes'])}"]
    out += entry_formulas(entry)
    v = entry.get("verification") or {}
    out.append("verification: **verifying…**" if phase == "bounds" else
               f"verification: **{v.get('status')}** — {v.get('detail', '')}")
    out += counts_line(v)
    measured = last_measured(entry)
    if measured:
        out += ["", *measured]
    return "\n".join(out)


def lens_titles(entry: dict, chip: str, target_label: str | None, mode: str = "inference") -> list[str]:
    """Titles of the code lenses over an entry: the three SOL times (of one training step in
    train mode, then each phase's), then the inverse roofline. ``mode`` is what the settings
    ask for: a result of another mode says so instead of passing for it."""
    if entry.get("status") != "ok":
        what = " train step" if mode == "train" else ""
        return [f"solar: {entry['name']}{what} failed — {_short(entry.get('error') or '')}"]
    tot = entry["totals"]
    train = is_train(entry)
    t = [f"SOL{' train step' if train else ''} {chip}: unfused {units.seconds(tot['t_unfused_s'])} · fused "
         f"{units.seconds(tot['t_fused_s'])} · cache-aware {units.seconds(tot.get('t_cache_aware_s'))}"
         f" ({tot.get('bound')}-bound)"]
    if mode == "train" and not train:
        t[0] += " · forward only: this result is not a training step"
    phases = entry.get("phases") or {}
    if train and phases:
        t.append("per phase (fused): " + " · ".join(
            f"{name} {units.seconds(phases[name].get('t_fused_s'))}" for name in PHASES if phases.get(name)))
    inv = entry.get("inverse")
    if inv and target_label:
        t.append(inverse_title(inv, chip, target_label, entry.get("chip_specs", {}).get(chip)))
    return t


def inverse_title(inv: dict, chip: str, target_label: str, spec: dict | None = None) -> str:
    """``500 Hz needs ≥ 19 TB/s · h100-sxm has 3.35`` — for the tightest fidelity available."""
    by = inv.get("by_fidelity") or {}
    fid = next((f for f in ("cache_aware", "fused", "unfused") if by.get(f)), None)
    if fid is None:
        return f"{target_label}: no inverse roofline"
    d = by[fid]
    short = (d.get("shortfall") or {}).get(chip) or {}
    need_bw = d["bytes_per_s"]
    need_fl = d["flops_per_s"]
    bw_ok = short.get("bandwidth", 0) <= 1
    comp_ok = short.get("compute", 0) <= 1
    have_bw = need_bw / short["bandwidth"] if short.get("bandwidth") else None
    verdict = "meets it" if bw_ok and comp_ok else "misses it"
    has = f" · {chip} has {units.rate(have_bw, 'B/s')}" if have_bw else ""
    return (f"{target_label} needs ≥ {units.rate(need_bw, 'B/s')} and "
            f"≥ {units.rate(need_fl, 'FLOP/s')} ({fid.replace('_', '-')}){has} · {chip} {verdict}")


def _short(text: str, n: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def diagnostics(entry: dict) -> list[tuple[int, str, str]]:
    """(1-based line, severity warning|information, message) for one entry."""
    out: list[tuple[int, str, str]] = []
    name = entry["name"]
    if entry.get("status") != "ok":
        out.append((entry.get("error_line") or entry["line"], "warning",
                    f"solar: {name} could not be analyzed: {entry.get('error')}"))
        return out
    for u in entry.get("unsupported", []):
        out.append((u.get("line") or entry["line"], "information",
                    f"solar: {u['op']} has no lowering ({u['reason']}); the bound leaves it out. "
                    "Rewrite it with supported ops, or enable the LLM translator (solar.llm)."))
    v = entry.get("verification") or {}
    for issue in v.get("issues", []):
        if issue.get("status") == "mismatch":
            w = issue.get("worst") or {}
            out.append((issue.get("line") or entry["line"], "warning",
                        f"solar: the IR of {issue['op']} does not match PyTorch ({issue.get('detail')}"
                        f"{', worst point ' + str(w) if w else ''}); treat this line's bound with care "
                        "and report it."))
    return out


def fusion_markdown(entry: dict) -> str:
    """The fusion suggestions of an entry and what each saves (the Show fusion action)."""
    items = entry.get("fusion") or []
    if not items:
        return f"# {entry['name']}: no fusion suggestions\n\nEvery op already reads and writes DRAM once."
    out = [f"# Fusion suggestions for {entry['name']}", "",
           "| lines | ops | DRAM saved | time saved |", "|---|---|---:|---:|"]
    for f in items:
        t = f.get("t_saved_s")
        if isinstance(t, dict):
            t = max(t.values(), default=0.0)
        out.append(f"| {', '.join(map(str, f.get('lines', [])))} | {', '.join(map(str, f.get('ops', [])))[:80]} | "
                   f"{units.nbytes(f.get('bytes_saved', 0))} | {units.seconds(t)} |")
    return "\n".join(out)


def reorder_markdown(entry: dict) -> str:
    """The cheaper orders of the entry's contraction chains (the Reorder action's report)."""
    items = entry.get("reorder") or []
    if not items:
        return f"# {entry['name']}: every contraction chain is already in its best order"
    out = [f"# Contraction order for {entry['name']}", ""]
    for r in items:
        ratio = r["flops_before"] / max(r["flops_after"], 1)
        out += [f"- line {r['line']}: {units.flops(r['flops_before'])} → {units.flops(r['flops_after'])} "
                f"({ratio:.1f}× fewer): `{r['expression']}`"]
    return "\n".join(out)


def compare_markdown(entry: dict) -> str:
    """The three fidelities on every chip (the Compare chips action)."""
    by = entry.get("by_hardware") or {}
    out = [f"# {entry['name']} on every chip", "",
           "| chip | unfused | fused | cache-aware | bound | fusion benefit |", "|---|---:|---:|---:|---|---:|"]
    for chip, h in by.items():
        benefit = h["t_unfused_s"] / h["t_fused_s"] if h.get("t_fused_s") else float("nan")
        out.append(f"| {chip} | {units.seconds(h['t_unfused_s'])} | {units.seconds(h['t_fused_s'])} | "
                   f"{units.seconds(h.get('t_cache_aware_s'))} | {h.get('bound')} | {benefit:.2f}× |")
    return "\n".join(out)


def headroom_markdown(entry: dict) -> str:
    """The Explain headroom report: measured against each fidelity, the worst lines, why."""
    h = entry.get("headroom") or {}
    if "error" in h:
        where = f" (line {h['line']})" if h.get("line") else ""
        return f"# Headroom of {entry['name']}\n\nCould not measure{where}: {h['error']}"
    tot = entry.get("totals") or {}
    out = [f"# Headroom of {entry['name']}", "",
           f"Measured **{units.seconds(h['measured_s'])}** on {h['device']} ({h.get('runs', '?')} runs, caches "
           f"flushed), bounds on **{h['chip']}**."
           + (f" Under torch.compile: {units.seconds(h['compiled_s'])}." if h.get("compiled_s") else ""), "",
           "| fidelity | bound | measured / bound |", "|---|---:|---:|"]
    for fid, key in (("unfused", "t_unfused_s"), ("fused", "t_fused_s"), ("cache_aware", "t_cache_aware_s")):
        r = (h.get("ratios") or {}).get(fid)
        out.append(f"| {fid.replace('_', '-')} | {units.seconds(tot.get(key))} | {f'{r:.1f}×' if r else '—'} |")
    out += ["", f"**Diagnosis: {h['diagnosis']}**", ""] + [f"- {r}" for r in h.get("reasons", [])]
    out += [f"\n> ⚠ {w}" for w in h.get("warnings", [])]
    if h.get("top_lines"):
        out += ["", "| line | measured | SOL (unfused) | ratio |", "|---:|---:|---:|---:|"]
        for g in h["top_lines"]:
            ratio = f"{g['ratio']:.1f}×" if g["ratio"] != float("inf") else "—"
            out.append(f"| {g['line']} | {units.seconds(g['measured_s'])} | {units.seconds(g['t_sol_s'])} | {ratio} |")
    return "\n".join(out)


def counts_line(verification: dict) -> list[str]:
    """The run-time count check beside the values (FlopCounterMode / XLA), when it ran."""
    c = verification.get("counts")
    return [f"counts: **{c.get('status')}** — {c.get('detail', '')}"] if c else []
