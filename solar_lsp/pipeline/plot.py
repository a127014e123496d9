"""``solar plot``: a roofline per chip with every op of every entry as a point and the entry's
three fidelities marked (matplotlib, Agg backend; PNG or SVG by the file suffix).

x: arithmetic intensity (FLOP per DRAM byte), y: attainable FLOP/s (FLOPs / SOL time). Roofs:
DRAM bandwidth × intensity, capped by each compute peak the chip lists for the entry's dtypes.
The SVG keeps its text as text and gives every op point an id, so an editor can show and
search it.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from solar_lsp.bounds.sol import Policy, op_costs  # noqa: E402
from solar_lsp.hardware.chips import Chip, canonical_dtype  # noqa: E402
from solar_lsp.pipeline.report import FileReport  # noqa: E402

FIDELITIES = (("unfused", "t_unfused_s", "bytes_unfused", "s"),
              ("fused", "t_fused_s", "bytes_fused", "*"),
              ("cache-aware", "t_cache_aware_s", "bytes_cache_aware", "D"))


def _roofs(chip: Chip, dtypes: set[str]) -> list[tuple[str, float]]:
    out = []
    for dt in sorted(dtypes):
        for unit in ("matrix", "vector"):
            p = chip.peak(unit, dt)
            if p:
                out.append((f"{unit} {dt}", p))
    if not out:
        p = chip.peak("vector", "fp32")
        if p:
            out.append(("vector fp32", p))
    return sorted(set(out), key=lambda x: -x[1])


def points(entry, chip: Chip, policy: Policy | None = None) -> list[dict]:
    """Each op with work and traffic: (intensity, FLOP/s of its unfused SOL time on ``chip``)."""
    p, g = getattr(entry, "program", None), getattr(entry, "einsum_graph", None)
    out = []
    if p is None or g is None:
        return out
    for c in op_costs(p, g, policy or Policy()):
        if c.counts.flops <= 0 or c.bytes <= 0:
            continue
        t, _ = c.time(chip)
        out.append({"id": c.op.id, "target": c.op.target, "line": c.op.line,
                    "intensity": c.counts.flops / c.bytes,
                    "flops_per_s": c.counts.flops / t if t else 0.0})
    return out


def fidelities(entry, chip: Chip) -> list[tuple[str, float, float, str]]:
    """(name, intensity, FLOP/s, marker) of the entry's three fidelities on ``chip``."""
    h = entry.by_hardware.get(chip.name) or {}
    tot = entry.totals
    out = []
    for name, tkey, bkey, mk in FIDELITIES:
        t = h.get(tkey)
        b = h.get(bkey, tot.get(bkey))
        if t and b and tot.get("flops"):
            out.append((name, tot["flops"] / b, tot["flops"] / t, mk))
    return out


def roofline(report: FileReport, chips: list[Chip], path: str, policy: Policy | None = None) -> str:
    """Write the figure to ``path`` (format from its suffix) and return the path."""
    plt.rcParams["svg.fonttype"] = "none"  # text stays text in the SVG
    n = len(chips)
    fig, axes = plt.subplots(1, n, figsize=(6.5 * n, 5), squeeze=False)
    entries = [e for e in report.entries if e.status == "ok"]
    markers = "osv^<>pPXh"
    for ax, chip in zip(axes[0], chips):
        dtypes = {canonical_dtype(op.dtype) or "fp32" for e in entries for ln in e.lines for op in ln.ops}
        pts = {e.name: points(e, chip, policy) for e in entries}
        fids = {e.name: fidelities(e, chip) for e in entries}
        xs = [p["intensity"] for v in pts.values() for p in v] + [f[1] for v in fids.values() for f in v]
        lo = min(xs + [0.1]) / 4
        hi = max(xs + [1e3]) * 4
        beta = chip.dram_bytes_per_s
        grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        for label, peak in _roofs(chip, dtypes):
            ax.plot(grid, [min(peak, beta * x) for x in grid], lw=1.5, label=f"roof: {label}",
                    gid=f"roof {label}")
        for k, e in enumerate(entries):
            for p in pts[e.name]:
                ax.scatter([p["intensity"]], [p["flops_per_s"]], s=18, alpha=0.7,
                           marker=markers[k % len(markers)], color=f"C{k}", gid=f"op {e.name} {p['id']}")
                ax.annotate(f"{p['id']} (line {p['line']})", (p["intensity"], p["flops_per_s"]),
                            fontsize=6, alpha=0.8, xytext=(3, 2), textcoords="offset points")
            for name, x, y, mk in fids[e.name]:
                ax.scatter([x], [y], s=90, marker=mk, edgecolors="black", color=f"C{k}", zorder=5,
                           gid=f"fidelity {e.name} {name}", label=f"{e.name}: {name}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
        ax.set_ylabel("attainable FLOP/s")
        ax.set_title(chip.display_name)
        ax.grid(True, which="both", alpha=0.2)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"SOL roofline: {report.file}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def sweep_figure(sweeps: list, path: str, title: str = "") -> str:
    """Write each entry's SOL times against one symbol (``pipeline.sweep.Sweep``), log-log, with
    the fused time's compute/memory crossover marked; return the path."""
    plt.rcParams["svg.fonttype"] = "none"
    fig, axes = plt.subplots(1, len(sweeps), figsize=(6.5 * len(sweeps), 5), squeeze=False)
    for ax, sw in zip(axes[0], sweeps):
        ax.plot(sw.xs, sw.unfused, marker="s", ms=3, label="unfused", gid=f"sweep {sw.entry} unfused")
        ax.plot(sw.xs, sw.fused, marker="*", ms=4, label="fused", gid=f"sweep {sw.entry} fused")
        ax.plot(sw.xs, sw.compute, ls="--", lw=0.8, color="grey", label="fused: work / peak",
                gid=f"sweep {sw.entry} compute")
        ax.plot(sw.xs, sw.memory, ls=":", lw=0.8, color="black", label="fused: bytes / bandwidth",
                gid=f"sweep {sw.entry} memory")
        if sw.cache_xs:
            ax.plot(sw.cache_xs, sw.cache_aware, ls="none", marker="D", ms=5, label="cache-aware",
                    gid=f"sweep {sw.entry} cache-aware")
        for c in sw.crossovers:
            ax.axvline(c["x"], ls="-.", lw=0.8, color="red", gid=f"crossover {sw.entry} {sw.name}={c['x']}")
            ax.scatter([c["x"]], [c["t_s"]], marker="X", s=80, color="red", zorder=5,
                       label=f"crossover {sw.name}={c['x']} (→ {c['to']}-bound)")
            ax.annotate(f"compute/memory crossover {sw.name}={c['x']}", (c["x"], c["t_s"]),
                        fontsize=7, xytext=(4, -12), textcoords="offset points")
        if not sw.crossovers:
            bound = "compute" if sw.compute[0] >= sw.memory[0] else "memory"
            ax.text(0.02, 0.98, f"no compute/memory crossover in {sw.name}={sw.xs[0]}..{sw.xs[-1]}: "
                    f"{bound}-bound throughout", transform=ax.transAxes, fontsize=7, va="top",
                    gid="no crossover")
        for i, note in enumerate(sw.notes[:3]):
            ax.text(0.02, 0.02 + 0.04 * i, note[:110], transform=ax.transAxes, fontsize=6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(sw.name)
        ax.set_ylabel("SOL time (s)")
        ax.set_title(f"{sw.entry} on {sw.chip}")
        ax.grid(True, which="both", alpha=0.2)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
