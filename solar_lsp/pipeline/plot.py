"""``solar plot``: a roofline per chip with every op of every entry as a point and the entry's
three fidelities marked (matplotlib, Agg backend; PNG or SVG by the file suffix).

x: arithmetic intensity (FLOP per DRAM byte), y: attainable FLOP/s (FLOPs / SOL time). Roofs:
the DRAM slope, then the peak of each (unit, dtype) the ops' work is priced at. Each unit has one
color in every panel, labels are placed apart by adjustText, and the fidelity markers are drawn
largest first so none hides another (docs/cli.md, ``solar plot``). The SVG keeps its text as
text and gives every op point an id, so an editor can show and search it.
"""

from __future__ import annotations

import logging

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from adjustText import adjust_text  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402
from matplotlib.transforms import Affine2D, Bbox  # noqa: E402

from solar_lsp.bounds.sol import OpCost, Policy, op_costs, unit_peak  # noqa: E402
from solar_lsp.hardware.chips import Chip  # noqa: E402
from solar_lsp.pipeline.report import FileReport  # noqa: E402

#: One color per unit, the same in every panel: a roof, and the ring of an op bound by that unit.
UNIT_COLORS = {"matrix": "tab:blue", "vector": "tab:orange", "sfu": "tab:green", "dram": "dimgray"}
#: One line style per dtype, the same in every panel (a unit may have roofs at several types).
DTYPE_STYLES = {"fp32": "-", "tf32": "--", "bf16": "-.", "fp16": ":", "fp8": (0, (5, 1)),
                "int8": (0, (3, 1, 1, 1)), "fp4": (0, (1, 1)), "fp64": (0, (6, 2, 1, 2))}
#: Entry colors: none of them is a unit color.
ENTRY_COLORS = ("tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "black")
#: (name, time key, bytes key, marker, size in points², zorder): drawn largest first, so where two
#: fidelities coincide the smaller marker lies on top of the larger one and both stay visible.
FIDELITIES = (("unfused", "t_unfused_s", "bytes_unfused", "s", 200, 5),
              ("cache-aware", "t_cache_aware_s", "bytes_cache_aware", "D", 80, 6),
              ("fused", "t_fused_s", "bytes_fused", "*", 70, 7))
_OP_MARKERS = "osv^<>pPXh"


def priced_on(chip: Chip, unit: str, dtype: str) -> tuple[str, float]:
    """The unit work on (``unit``, ``dtype``) actually runs on and its rate (``unit_peak``):
    matrix work of a type the chip has no matrix path for runs on the vector unit."""
    peak, how = unit_peak(chip, unit, dtype)
    return ("vector" if unit == "matrix" and how.startswith("no matrix path") else unit), peak


def _roof_type(unit: str, dtype: str) -> str:
    """The type a roof is named by: CUDA cores compute a TF32 input as fp32 (``Chip.peak``)."""
    return "fp32" if unit == "vector" and dtype == "tf32" else dtype


def roofs(costs: list[OpCost], chip: Chip) -> list[tuple[str, str, float]]:
    """(unit, dtype, FLOP/s) of each compute roof the ops' work runs at on ``chip`` (the unit and
    rate ``unit_peak`` prices it at, so an fp32 GEMM priced at the vector peak shows the vector
    roof), fastest first. SFU work is counted in transcendentals, not FLOPs: no roof on this axis."""
    keys = {k for c in costs for k in c.work.work if k[0] != "sfu"} or {("vector", "fp32")}
    out = set()
    for u, d in keys:
        unit, peak = priced_on(chip, u, d)
        if peak != float("inf"):
            out.add((unit, _roof_type(unit, d), peak))
    return sorted(out, key=lambda r: (-r[2], r[0], r[1]))


def points(entry, chip: Chip, policy: Policy | None = None) -> list[dict]:
    """Each op with work and traffic: (intensity, FLOP/s of its unfused SOL time on ``chip``) and
    the unit that bounds it ("matrix", "vector", "sfu" or "dram": the one its time is longest on)."""
    out = []
    for c in entry_costs(entry, policy):
        if c.counts.flops <= 0 or c.bytes <= 0:
            continue
        t, bound = c.time(chip)
        ts: dict[str, float] = {}
        for (u, d), w in c.work.work.items():
            unit, peak = priced_on(chip, u, d)
            ts[unit] = ts.get(unit, 0.0) + w / peak
        unit = max(ts, key=lambda u: ts[u]) if bound == "compute" and ts else "dram"
        out.append({"id": c.op.id, "target": c.op.target, "line": c.op.line,
                    "intensity": c.counts.flops / c.bytes, "bound": unit,
                    "flops_per_s": c.counts.flops / t if t else 0.0})
    return out


def entry_costs(entry, policy: Policy | None = None) -> list[OpCost]:
    """The op costs of an analyzed entry (none without a program and einsum graph)."""
    p, g = getattr(entry, "program", None), getattr(entry, "einsum_graph", None)
    return [] if p is None or g is None else op_costs(p, g, policy or Policy())


def fidelities(entry, chip: Chip) -> list[tuple[str, float, float, str]]:
    """(name, intensity, FLOP/s, marker) of the entry's three fidelities on ``chip``."""
    h = entry.by_hardware.get(chip.name) or {}
    tot = entry.totals
    out = []
    for name, tkey, bkey, mk, _, _ in FIDELITIES:
        t = h.get(tkey)
        b = h.get(bkey, tot.get(bkey))
        if t and b and tot.get("flops"):
            out.append((name, tot["flops"] / b, tot["flops"] / t, mk))
    return out


def roofline(report: FileReport, chips: list[Chip], path: str, policy: Policy | None = None) -> str:
    """Write the figure to ``path`` (format from its suffix) and return the path."""
    fig = roofline_figure(report, chips, policy)
    try:
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def roofline_figure(report: FileReport, chips: list[Chip], policy: Policy | None = None) -> Figure:
    """The roofline figure, one panel per chip, laid out with its op labels placed (the caller
    saves and closes it)."""
    plt.rcParams["svg.fonttype"] = "none"  # text stays text in the SVG
    n = len(chips)
    fig, axes = plt.subplots(1, n, figsize=(7 * n, 6.5), squeeze=False)
    entries = [e for e in report.entries if e.status == "ok"]
    costs = {e.name: entry_costs(e, policy) for e in entries}
    labels = []
    for ax, chip in zip(axes[0], chips):
        labels.append(_panel(ax, chip, entries, costs, policy))
    fig.suptitle(f"SOL roofline: {report.file}", fontsize=9)
    fig.tight_layout()
    for ax, texts in zip(axes[0], labels):
        _place_labels(ax, texts)
    return fig


def _panel(ax, chip: Chip, entries: list, costs: dict, policy: Policy | None) -> list:
    """Draw one chip's roofs, op points and fidelities on ``ax``; return the op labels."""
    pts = {e.name: points(e, chip, policy) for e in entries}
    fids = {e.name: fidelities(e, chip) for e in entries}
    xs = [p["intensity"] for v in pts.values() for p in v] + [f[1] for v in fids.values() for f in v]
    ys = [p["flops_per_s"] for v in pts.values() for p in v] + [f[2] for v in fids.values() for f in v]
    rs = roofs([c for e in entries for c in costs[e.name]], chip)
    _draw_roofs(ax, chip, rs, min(xs + [0.1]) / 4, max(xs + [1e3]) * 4)
    texts = []
    for k, e in enumerate(entries):
        color = ENTRY_COLORS[k % len(ENTRY_COLORS)]
        texts += _draw_ops(ax, e.name, pts[e.name], color, _OP_MARKERS[k % len(_OP_MARKERS)])
        _draw_fidelities(ax, e.name, fids[e.name], color)
    bounds = {p["bound"] for v in pts.values() for p in v}
    for unit in ("matrix", "vector", "sfu", "dram"):  # legend only: what an op's ring color says
        if unit in bounds:
            ax.scatter([], [], s=30, facecolors="white", edgecolors=UNIT_COLORS[unit], linewidths=1.5,
                       label=f"op bound by {'SFU' if unit == 'sfu' else unit.upper() if unit == 'dram' else unit}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    top = max([r[2] for r in rs] + ys + [1.0])
    ax.set_ylim(min(ys + [top]) / 8, top * 3)
    ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
    ax.set_ylabel("attainable FLOP/s")
    ax.set_title(chip.display_name)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    return texts


def _draw_roofs(ax, chip: Chip, rs: list[tuple[str, str, float]], lo: float, hi: float) -> None:
    """The DRAM slope up to the highest ridge, then each compute roof flat from its ridge on."""
    beta = chip.dram_bytes_per_s
    top = max((p for _, _, p in rs), default=beta * hi)  # no compute figure: the slope alone
    ax.plot([lo, top / beta], [beta * lo, top], lw=1.5, color=UNIT_COLORS["dram"], gid="roof dram",
            label=f"roof: DRAM {beta / 1e12:.3g} TB/s × intensity")
    for unit, dt, peak in rs:
        ax.plot([peak / beta, hi], [peak, peak], lw=1.5, color=UNIT_COLORS[unit],
                ls=DTYPE_STYLES.get(dt, "-"), gid=f"roof {unit} {dt}",
                label=f"roof: {unit} {dt} {peak / 1e12:.4g} TFLOP/s")


def _draw_ops(ax, entry: str, pts: list[dict], color: str, marker: str) -> list:
    """Op points (ring color: the unit that bounds the op), one label per distinct position."""
    at: dict[tuple[float, float], list[dict]] = {}
    for p in pts:
        ax.scatter([p["intensity"]], [p["flops_per_s"]], s=22, marker=marker, color=color, alpha=0.8,
                   edgecolors=UNIT_COLORS[p["bound"]], linewidths=1.0, zorder=3,
                   gid=f"op {entry} {p['id']}")
        at.setdefault((float(f"{p['intensity']:.4g}"), float(f"{p['flops_per_s']:.4g}")), []).append(p)
    texts = []
    for group in at.values():
        text = "\n".join(f"{p['id']} (line {p['line']})" for p in group)  # narrow: one op a row
        texts.append(ax.text(group[0]["intensity"], group[0]["flops_per_s"], text, fontsize=6,
                             color="black", zorder=8, gid=f"label {entry} {group[0]['id']}"))
    return texts


def _draw_fidelities(ax, entry: str, fids: list[tuple[str, float, float, str]], color: str) -> None:
    """The entry's fidelity markers, largest below; a legend entry notes where two coincide."""
    size = {name: (s, z) for name, _, _, _, s, z in FIDELITIES}
    for name, x, y, mk in fids:
        same = [o for o, ox, oy, _ in fids if o != name and abs(ox - x) <= 1e-6 * x and abs(oy - y) <= 1e-6 * y]
        note = f" (same point as {', '.join(same)})" if same else ""
        s, z = size[name]
        ax.scatter([x], [y], s=s, marker=mk, color=color, edgecolors="black", linewidths=1.0, zorder=z,
                   gid=f"fidelity {entry} {name}", label=f"{entry}: {name}{note}")


def marker_extent(coll, renderer) -> Bbox:
    """Display-space box of the marker a one-point scatter ``coll`` draws (its size included)."""
    side = coll.get_sizes()[0] ** 0.5 * renderer.points_to_pixels(1.0)  # size: points² of the marker box
    ext = coll.get_paths()[0].get_extents().transformed(Affine2D().scale(side))
    x, y = coll.get_offset_transform().transform(coll.get_offsets()[0])
    return ext.translated(x, y)


def _place_labels(ax, texts: list) -> None:
    """Move the op labels apart with adjustText, shift any label that still touches another one
    up or down until none overlaps, then draw a leader line from each moved label to its point."""
    if not texts:
        return
    targets = [t.get_position() for t in texts]
    renderer = ax.figure.canvas.get_renderer()
    markers = [marker_extent(c, renderer) for c in ax.collections
               if (c.get_gid() or "").startswith(("fidelity ", "op "))]
    quiet = logging.getLogger("adjustText")  # it logs "labels too long" to stderr: we handle it
    level, quiet.level = quiet.level, logging.ERROR
    try:
        adjust_text(texts, ax=ax, objects=markers or None, expand=(1.1, 1.3), time_lim=5)
    finally:
        quiet.setLevel(level)
    placed: list = [m.padded(1) for m in markers]  # a label may cover no marker either
    for t in sorted(texts, key=lambda t: t.get_window_extent(renderer).y0):
        box, dy = t.get_window_extent(renderer).padded(1), 0.0
        for step in range(1, 400):
            if not any(box.translated(0, dy).overlaps(b) for b in placed):
                break
            dy = box.height * ((step + 1) // 2) * (1 if step % 2 else -1)
        x, y = ax.transData.transform(t.get_position())
        t.set_position(ax.transData.inverted().transform((x, y + dy)))
        placed.append(box.translated(0, dy))
    for t, target in zip(texts, targets):
        a, b = ax.transData.transform(t.get_position()), ax.transData.transform(target)
        if abs(a - b).max() >= 5:
            ax.add_patch(FancyArrowPatch(posA=t.get_position(), posB=target, patchA=t, arrowstyle="-",
                                         color="grey", lw=0.5, shrinkB=2, zorder=2))


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
