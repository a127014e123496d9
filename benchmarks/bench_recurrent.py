"""Trace time and graph size of recurrent layers kept whole (docs/architecture.md §2), against time steps.

Usage::

    python benchmarks/bench_recurrent.py                    # LSTM 2 layers, bidirectional
    python benchmarks/bench_recurrent.py --steps 16 64 256 --cell gru
    python benchmarks/bench_recurrent.py --decomposed       # also export with full decomposition
    python benchmarks/bench_recurrent.py --kernelbench /work/kb-head/KernelBench/level3 --rounds 2

For each number of steps, one warm process analyzes a generated ``nn.LSTM``/``nn.GRU`` model
without verification and prints the trace seconds (torch.export on fake tensors plus the
selective decomposition), the lowering seconds, the ATen nodes, the IR ops and kernels and
the einsum-graph nodes. ``--decomposed`` also exports the same model with torch's default
decomposition table (what the layer costs without ``KEEP_WHOLE``) and prints its ATen nodes
and seconds. Nothing is asserted: these are measurements.

``--kernelbench DIR`` instead times cold processes on KernelBench's recurrent problems (the
files of level 3 built on ``nn.LSTM``/``nn.GRU``/``nn.RNN``, and those stepping a Python loop
over time, ``for t in range(...)``, which the tracer unrolls and frontend/loops.py rolls back
into one body run T times; ``--files F ...`` names the files instead, e.g. both KernelBench
versions of 34_VanillaRNNHidden): per problem and round, ``python -c "import torch"``, then
``solar analyze FILE --json --no-verify``, then ``solar analyze FILE --json``, interleaved in
that order so that all three see the same load. It prints per problem the median wall time of
each, the stage timings the report gives (trace, lower, bounds, verify), the ratio to the
import time (issue 17's target: at most 2x, verification included) and the largest resident
set of the analyzing processes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
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


KB_LAYERS = ("nn.LSTM(", "nn.GRU(", "nn.RNN(")  # files built on torch's recurrent layers
KB_LOOPS = ("for t in range(",)  # files stepping a Python loop over time


def _cold(argv: list[str]) -> tuple[float, dict, int]:
    """Wall seconds of one child process, the first entry of its JSON report (if any) and its
    largest resident set in bytes."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, text=True, cwd=ROOT)
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    try:
        entry = json.loads(stdout)["entries"][0]
    except (ValueError, KeyError, IndexError):
        entry = {"status": "error", "error": (stderr.strip().splitlines() or ["no output"])[-1]}
    return wall, entry, usage.ru_maxrss * 1024


def kernelbench(folder: str, rounds: int) -> int:
    """Cold runs on KernelBench's recurrent problems against a cold ``import torch``."""
    files = sorted((f for f in Path(folder).glob("*.py")
                    if any(k in f.read_text() for k in KB_LAYERS + KB_LOOPS)),
                   key=lambda f: int(f.name.split("_")[0]) if f.name.split("_")[0].isdigit() else 0)
    return cold_table([str(f) for f in files], rounds, "KernelBench recurrent problems")


def cold_table(files: list[str], rounds: int, title: str) -> int:
    """Cold runs on ``files`` against a cold ``import torch``, interleaved per round."""
    solar = [sys.executable, "-m", "solar_lsp.cli", "analyze"]
    table = Table(title=f"{title}, cold processes, median of {rounds} round(s)")
    for col in ("problem", "import torch s", "--no-verify s", "ratio", "verify s", "ratio",
                "trace s", "lower s", "bounds s", "verify stage s", "max RSS MB", "verification"):
        table.add_column(col, justify="right")
    ratios = []
    for f in files:
        imp, nv, v, last, rss = [], [], [], {}, 0
        for _ in range(rounds):
            imp.append(_cold([sys.executable, "-c", "import torch"])[0])
            wall, _, r1 = _cold(solar + [f, "--json", "--no-verify"])
            nv.append(wall)
            wall, last, r2 = _cold(solar + [f, "--json"])
            v.append(wall)
            rss = max(rss, r1, r2)
        i, a, b = (statistics.median(x) for x in (imp, nv, v))
        tm = last.get("timings", {})
        ver = last.get("verification") or {}
        status = ver.get("status", last.get("error", "?")) if last.get("status") == "ok" else \
            f"error: {last.get('error', '?')}"[:40]
        ratios.append(b / i)
        table.add_row(f"{Path(f).parent.parent.parent.name}/{Path(f).stem}", f"{i:.2f}", f"{a:.2f}",
                      f"{a / i:.2f}", f"{b:.2f}", f"{b / i:.2f}",
                      f"{tm.get('trace_s', 0):.2f}", f"{tm.get('lower_s', 0):.2f}",
                      f"{tm.get('sol_s', 0):.2f}", f"{tm.get('verify_s', 0):.2f}", f"{rss / 2**20:.0f}",
                      status)
    Console(width=200).print(table)
    if ratios:
        print(f"median ratio (with verification) / import torch: {statistics.median(ratios):.2f}; "
              f"max {max(ratios):.2f}; load average {os.getloadavg()[0]:.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cell", choices=("lstm", "gru", "rnn"), default="lstm")
    ap.add_argument("--steps", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--unidirectional", action="store_true")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--decomposed", action="store_true")
    ap.add_argument("--kernelbench", metavar="DIR", help="cold runs on KernelBench's recurrent problems")
    ap.add_argument("--files", nargs="+", metavar="F", help="cold runs on these files (as --kernelbench)")
    ap.add_argument("--rounds", type=int, default=1, help="--kernelbench, --files: rounds per problem")
    args = ap.parse_args(argv)
    if args.kernelbench:
        return kernelbench(args.kernelbench, args.rounds)
    if args.files:
        return cold_table(args.files, args.rounds, "Files")

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
