"""From measured times to a headroom result: the ratios to each SOL fidelity, the lines
with the largest gap, the diagnosis, and the warnings a run faster than a bound raises.
Shared by the torch and JAX measurements."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

# Per-op dispatch/launch overhead of eager mode, typical figures: PyTorch's CPU dispatcher
# ~2-5 µs per op; a CUDA kernel launch ~4-6 µs from Python (PyTorch performance tuning guide,
# "CUDA graphs" section).
OVERHEAD_S = {"cpu": 3e-6, "cuda": 5e-6}


class HeadroomError(Exception):
    """The entry cannot be measured; the message says why and what to do."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


@dataclass
class LineGap:
    """One source line's measured time against its unfused bound."""

    line: int
    measured_s: float
    t_sol_s: float
    ratio: float


@dataclass
class Headroom:
    """A measured entry against its bounds: ratios per fidelity, top lines, diagnosis."""

    device: str
    chip: str
    measured_s: float
    compiled_s: float | None
    ratios: dict[str, float | None]
    top_lines: list[LineGap] = field(default_factory=list)
    diagnosis: str = ""
    reasons: list[str] = field(default_factory=list)
    runs: int = 0
    ops_per_run: int = 0
    warnings: list[str] = field(default_factory=list)
    scale_lines: bool = True
    op_share: float | None = None  # of the profiled call's wall time spent in ops (None: not profiled)
    per_line: dict[int, float] = field(default_factory=dict, repr=False)  # every line, for re-finishing

    def to_json(self) -> dict:
        d = asdict(self)
        d["top_lines"] = [asdict(t) for t in self.top_lines]
        del d["per_line"], d["scale_lines"]
        return d


def diagnose(h: Headroom, entry: dict, device: str) -> tuple[str, list[str]]:
    """The main reason for the gap, and every rule that applied (docs/headroom.md)."""
    tot = entry["totals"]
    reasons: list[tuple[str, str]] = []
    if h.op_share is not None:
        # the profiler slows the call, so its op time is used as a share of the measured time
        # (like the per-line times); the rest of the call is dispatch, launch and Python
        overhead = h.measured_s * max(0.0, 1.0 - h.op_share)
        how = (f"measured − profiled op time ({h.op_share:.0%} of the profiled call in "
               f"{'kernels' if device == 'cuda' else 'aten ops'}) = ")
    else:
        overhead = h.ops_per_run * OVERHEAD_S[device]
        how = (f"no op times profiled, so the typical figure: {h.ops_per_run} ops × "
               f"~{OVERHEAD_S[device] * 1e6:.0f} µs dispatch = ")
    if overhead >= 0.5 * h.measured_s:
        reasons.append(("launch/overhead-bound",
                        f"{how}{overhead * 1e6:.0f} µs of the {h.measured_s * 1e6:.0f} µs measured is "
                        "outside the ops: batch more work per call, use CUDA graphs or torch.compile"))
    if entry.get("reorder"):
        r = max(entry["reorder"], key=lambda x: x["flops_before"] / max(x["flops_after"], 1))
        reasons.append(("algorithmic", f"line {r['line']} computes {r['flops_before'] / max(r['flops_after'], 1):.1f}× "
                                       f"the FLOPs its contraction needs: {r['expression']}"))
    fusion_gain = tot["t_unfused_s"] / tot["t_fused_s"] if tot.get("t_fused_s") else 1.0
    if fusion_gain >= 1.5 and (h.ratios.get("unfused") or 0) <= 2.0:
        reasons.append(("missing fusion", f"unfused/fused = {fusion_gain:.1f}× and the run is within "
                                          f"{h.ratios['unfused']:.1f}× of the unfused bound: intermediates go "
                                          "through DRAM; fuse the ops the fusion suggestions name"))
    ca = tot.get("t_cache_aware_s")
    if ca and tot.get("t_fused_s") and ca / tot["t_fused_s"] >= 1.5:
        reasons.append(("tiling", f"cache-aware/fused = {ca / tot['t_fused_s']:.1f}×: the on-chip capacity "
                                  "forces re-reads; choose tiles that keep the reused operand resident"))
    if not reasons:
        reasons.append(("kernel efficiency", f"{h.ratios.get('unfused') or 0:.1f}× the unfused bound: the ops "
                                             "themselves run far from their roofline (small shapes, a dtype "
                                             "without a fast path, or slow kernels)"))
    return reasons[0][0], [f"{k}: {v}" for k, v in reasons]


def finish(entry: dict, device: str, chip, measured: float, compiled: float | None, runs: int,
           per_line: dict[int, float], ops: int, scale_lines: bool = True,
           op_share: float | None = None) -> Headroom:
    """Ratios, the lines with the largest gap and the diagnosis, from the measurements."""
    tot = entry["totals"]
    ratios = {"unfused": measured / tot["t_unfused_s"] if tot["t_unfused_s"] else None,
              "fused": measured / tot["t_fused_s"] if tot["t_fused_s"] else None,
              "cache_aware": measured / tot["t_cache_aware_s"] if tot.get("t_cache_aware_s") else None}
    # the profiled run is slowed by the profiler; its per-line times are used as shares of the
    # measured (flushed, unprofiled) time
    raw = dict(per_line)
    total = sum(per_line.values())
    scale = measured / total if scale_lines and per_line and total > 0 else 1.0
    per_line = {ln: t * scale for ln, t in per_line.items()}
    sol_line = {ln["line"]: ln["t_unfused_s"] for ln in entry.get("lines", []) if ln.get("line")}
    gaps = [LineGap(line, t, sol_line.get(line, 0.0), t / sol_line[line] if sol_line.get(line) else float("inf"))
            for line, t in per_line.items()]
    gaps.sort(key=lambda g: g.measured_s - g.t_sol_s, reverse=True)
    h = Headroom(device, chip.name, measured, compiled, ratios, gaps[:5], runs=runs, ops_per_run=ops,
                 scale_lines=scale_lines, op_share=op_share, per_line=raw)
    h.diagnosis, h.reasons = diagnose(h, entry, device)
    h.warnings = beaten_bounds(measured, tot, chip)
    return h


def beaten_bounds(measured: float, tot: dict, chip) -> list[str]:
    """A measured run faster than a fused or cache-aware bound means a chip figure is not a
    ceiling: say which bound, by how much, and what to do."""
    out = []
    for fid in ("fused", "cache_aware"):
        t = tot.get(f"t_{fid}_s")
        if t and measured < t:
            what = ("re-probe with `solar hw probe` on an idle machine" if chip.name == "host"
                    else f"check the figures of {chip.path}")
            out.append(f"SOL violation: the measured {measured * 1e3:.3f} ms beats the {fid} bound "
                       f"{t * 1e3:.3f} ms on {chip.name}; {what}")
    return out


def seen_bandwidth(measured: float, tot: dict, chip) -> float | None:
    """The DRAM bytes/s a run must have moved to beat the fused or cache-aware bound on
    memory alone: the fewest bytes any implementation moves (the larger of the two byte
    lower bounds) over the measured time; None when the run did not beat them on memory."""
    need = max(tot.get("bytes_fused") or 0, tot.get("bytes_cache_aware") or 0)
    if measured <= 0 or need <= 0:
        return None
    seen = need / measured
    return seen if seen > chip.dram_bytes_per_s else None
