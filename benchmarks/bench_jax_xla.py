"""Our counts next to XLA's own ``cost_analysis()`` for every JAX corpus entry.

Usage::

    python benchmarks/bench_jax_xla.py                          # every file in tests/corpus_jax/
    python benchmarks/bench_jax_xla.py tests/corpus_jax/mlp_fn.py
    python benchmarks/bench_jax_xla.py --json > jax_xla.json

For each entry: our fused DRAM bytes (graph inputs, weights and outputs once) and XLA's
"bytes accessed" of the compiled CPU program (the sum over its HLO ops, after XLA's own
fusion, of operand and output bytes), with their ratio; and our FLOPs next to XLA's
"flops". XLA's figures come from ``jax.jit(f).lower(*ShapeDtypeStructs).compile()`` on the
host, so nothing is allocated. See docs/jax.md, "Comparison with XLA".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def xla_costs(module, entry, path: str) -> dict:
    import jax

    from solar_lsp.frontend.jax.trace import build
    built = build(module, entry, path)
    compiled = jax.jit(built.fn).lower(*built.abstract).compile()
    ca = compiled.cost_analysis()
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    return {"flops": float(ca.get("flops", 0.0)), "bytes_accessed": float(ca.get("bytes accessed", 0.0))}


def measure(path: str) -> list[dict]:
    from solar_lsp.frontend.torch.trace import load_module
    from solar_lsp.pipeline.analyze import Config, analyze_file
    report = analyze_file(path, Config(verify=False))
    module = load_module(path)
    from solar_lsp.source.discover import discover_file
    entries = {e.name: e for e in discover_file(path)}
    rows = []
    for er in report.entries:
        row = {"file": Path(path).name, "entry": er.name, "status": er.status}
        if er.status != "ok":
            row["error"] = er.error
            rows.append(row)
            continue
        t = time.perf_counter()
        try:
            xla = xla_costs(module, entries[er.name], path)
        except Exception as exc:  # report, keep going
            row["error"] = f"XLA: {type(exc).__name__}: {exc}"
            rows.append(row)
            continue
        row.update({
            "ours_bytes_fused": er.totals["bytes_fused"], "ours_bytes_unfused": er.totals["bytes_unfused"],
            "xla_bytes_accessed": xla["bytes_accessed"],
            "bytes_ratio": er.totals["bytes_fused"] / xla["bytes_accessed"] if xla["bytes_accessed"] else None,
            "ours_flops": er.totals["flops"], "ours_tensor_flops": er.totals["tensor_flops"],
            "xla_flops": xla["flops"],
            "flops_ratio": er.totals["flops"] / xla["flops"] if xla["flops"] else None,
            "xla_compile_s": time.perf_counter() - t,
        })
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--json", action="store_true", help="all figures as JSON on stdout")
    args = ap.parse_args(argv)
    files = args.files or sorted(str(p) for p in (ROOT / "tests" / "corpus_jax").glob("*.py"))
    rows = [r for f in files for r in measure(f)]
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    from rich.console import Console
    from rich.table import Table

    from solar_lsp import units
    t = Table(title="fused bytes and FLOPs: solar-lsp vs XLA cost_analysis (CPU)")
    for col in ("entry", "ours fused", "XLA bytes accessed", "ratio", "ours FLOPs", "XLA flops", "ratio "):
        t.add_column(col, justify="left" if col == "entry" else "right", no_wrap=True)
    for r in rows:
        if "error" in r:
            t.add_row(f"{Path(r['file']).stem}::{r['entry']}", "error", r["error"][:60], "", "", "", "")
            continue
        br, fr = r["bytes_ratio"], r["flops_ratio"]
        t.add_row(f"{Path(r['file']).stem}::{r['entry']}", units.nbytes(r["ours_bytes_fused"]),
                  units.nbytes(int(r["xla_bytes_accessed"])), f"{br:.2f}" if br is not None else "-",
                  units.flops(r["ours_flops"]), units.flops(int(r["xla_flops"])),
                  f"{fr:.2f}" if fr is not None else "-")
    Console(width=200).print(t)
    ok = [r for r in rows if r.get("bytes_ratio")]
    if ok:
        import statistics
        print(f"median bytes ratio (ours fused / XLA) {statistics.median(r['bytes_ratio'] for r in ok):.3f}; "
              f"max {max(r['bytes_ratio'] for r in ok):.3f} over {len(ok)} entries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
