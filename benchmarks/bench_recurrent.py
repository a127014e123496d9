"""Trace time and graph size of recurrent layers kept whole (docs/architecture.md §2), against time steps.

Usage::

    python benchmarks/bench_recurrent.py                    # LSTM 2 layers, bidirectional
    python benchmarks/bench_recurrent.py --steps 16 64 256 --cell gru
    python benchmarks/bench_recurrent.py --decomposed       # also export with full decomposition

For each number of steps, one warm process analyzes a generated ``nn.LSTM``/``nn.GRU`` model
without verification and prints the trace seconds (torch.export on fake tensors plus the
selective decomposition), the lowering seconds, the ATen nodes, the IR ops and kernels and
the einsum-graph nodes. ``--decomposed`` also exports the same model with torch's default
decomposition table (what the layer costs without ``KEEP_WHOLE``) and prints its ATen nodes
and seconds. Nothing is asserted: these are measurements.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODEL = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.{cls}({i}, {h}, num_layers={layers}, bidirectional={bidir})

    def forward(self, x):
        return self.rnn(x)[0]


def get_inputs():
    return [torch.randn({t}, {b}, {i})]


def get_init_inputs():
    return []
'''


def decomposed(path: str) -> tuple[int, float]:
    """ATen nodes and seconds of export + the default (full) decomposition."""
    import torch

    from solar_lsp.frontend.torch.trace import build, load_module
    from solar_lsp.source.discover import discover_file

    entry = discover_file(path)[0]
    model, inputs = build(load_module(path), entry, path, "meta")
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), torch.device("meta"):
        ep = torch.export.export(model, inputs, strict=False)
        ep = ep.run_decompositions(torch.export.default_decompositions())
    nodes = sum(1 for n in ep.graph.nodes if n.op == "call_function")
    return nodes, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cell", choices=("lstm", "gru", "rnn"), default="lstm")
    ap.add_argument("--steps", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--unidirectional", action="store_true")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--decomposed", action="store_true")
    args = ap.parse_args(argv)

    import warnings

    warnings.filterwarnings("ignore")
    from solar_lsp.frontend.torch.trace import warm_up
    from solar_lsp.pipeline.analyze import Config, analyze_file

    warm_up()
    cls = {"lstm": "LSTM", "gru": "GRU", "rnn": "RNN"}[args.cell]
    bidir = not args.unidirectional
    table = Table(title=f"{cls}: {args.layers} layer(s), {'bi' if bidir else 'uni'}directional, "
                        f"hidden {args.hidden}")
    for col in ("steps", "trace s", "lower s", "ATen", "IR ops", "kernels", "graph nodes",
                "decomposed ATen", "decomposed s"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        for t in args.steps:
            path = os.path.join(tmp, f"rnn_{t}.py")
            Path(path).write_text(MODEL.format(cls=cls, i=args.hidden, h=args.hidden, t=t, b=8,
                                               layers=args.layers, bidir=bidir))
            e = analyze_file(path, Config(verify=False)).entries[0]
            if e.status != "ok":
                print(f"{t} steps: {e.error}", file=sys.stderr)
                continue
            dec = decomposed(path) if args.decomposed else None
            table.add_row(str(t), f"{e.timings['trace_s']:.2f}", f"{e.timings['lower_s']:.3f}",
                          str(e.graph["aten_nodes"]), str(e.graph["ops"]), str(e.graph["kernels"]),
                          str(e.graph["nodes"]), str(dec[0]) if dec else "-",
                          f"{dec[1]:.1f}" if dec else "-")
    Console(width=140).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
