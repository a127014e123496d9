"""benchmarks/bench_train.py without running the CLI: what one child's JSON gives, the
ratios, and the forward path's rules applied to train mode (benchmarks/README.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_train as bt  # noqa: E402
from bench_stages import Run  # noqa: E402


def _run(wall: float, rss_mib: float, doc: dict | None, rc: int = 0) -> bt.Run:
    return Run(wall, int(rss_mib * 1024), rc, json.dumps(doc) if doc is not None else "", "boom")


def _doc(trace: float, lower: float, sol: float, verification: str = "verified") -> dict:
    return {"error": None, "entries": [{
        "name": "Model", "status": "ok", "error": None, "verification": {"status": verification},
        "timings": {"trace_s": trace, "lower_s": lower, "sol_s": sol, "verify_s": 9.0}}]}


def test_a_child_gives_times_rss_core_and_verdict():
    r = bt.ModeResult("train")
    r.add(_run(5.0, 700, _doc(0.25, 0.125, 0.5)), 4.0, noverify=False)
    r.add(_run(3.0, 340, _doc(0.5, 0.5, 0.5, "unverified")), 2.5, noverify=True)
    assert (r.wall_s, r.cpu_s, r.wall_noverify_s, r.cpu_noverify_s) == ([5.0], [4.0], [3.0], [2.5])
    assert (r.rss_mib, r.rss_noverify_mib) == ([700.0], [340.0])
    assert r.core_s == [0.875]  # trace + lower + SOL of the verifying run only
    assert r.entries == {"Model": "ok/verified"} and r.errors == []


def test_a_failed_child_is_reported_not_dropped():
    r = bt.ModeResult("train")
    r.add(_run(1.0, 300, None, rc=1), 1.0, noverify=False)
    assert r.errors == ["exit 1, no JSON: boom"]
    doc = {"error": None, "entries": [{"name": "Model", "status": "error",
                                       "error": "--mode train: no training step", "timings": {}}]}
    r.add(_run(1.0, 300, doc, rc=2), 1.0, noverify=True)
    assert r.errors[1:] == ["exit 2", "Model: --mode train: no training step"]


def test_ratios_and_rules():
    assert bt.times(3.0, 2.0) == "1.50×" and bt.times(None, 2.0) == "-" and bt.times(1.0, 0) == "-"
    assert bt.both_times((3.0, 2.0), (1.0, 4.0)) == "1.50× / 0.25×"
    inf, train = bt.ModeResult("inference"), bt.ModeResult("train")
    inf.add(_run(3.0, 600, _doc(0.2, 0.1, 0.3)), 2.0, noverify=False)
    inf.add(_run(2.0, 330, _doc(0.2, 0.1, 0.3)), 1.5, noverify=True)
    train.add(_run(5.0, 1600, _doc(0.4, 0.2, 0.6)), 3.5, noverify=False)
    train.add(_run(2.5, 340, _doc(0.4, 0.2, 0.6)), 2.0, noverify=True)
    by_mode = {"inference": inf, "train": train}
    got = {name: (limit, m, met) for name, limit, m, met in bt.rules("examples/mlp.py", by_mode)}
    assert got["peak RSS (MiB)"] == (1536.0, {"inference": 600.0, "train": 1600.0}, False)
    assert got["cold CLI wall (s)"] == (4.0, {"inference": 3.0, "train": 5.0}, False)
    assert got["cold CLI CPU (s)"] == (4.0, {"inference": 2.0, "train": 3.5}, True)
    assert got["trace + lower + SOL (s)"][2] is False  # 1.2 s > 1 s
    # the e2e and core targets are the for examples/mlp.py only
    assert [x[0] for x in bt.rules("/kb/level3/1_MLP.py", by_mode)] == ["peak RSS (MiB)"]
