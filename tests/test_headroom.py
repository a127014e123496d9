"""Headroom: measured runs against the bounds. A SOL bound must never exceed a measured
time; the host profile's peaks must be ceilings of what this CPU does; bad requests say why."""

from __future__ import annotations

import json
import os
import pathlib
import time

import pytest
import torch

from solar_lsp.cli.main import main
from solar_lsp.hardware.chips import load_chip
from solar_lsp.hardware.hostprobe import probe, to_toml
from solar_lsp.measure import headroom as H

pytestmark = pytest.mark.serial  # times real runs against this machine's bounds: nothing may run beside it

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
CORPUS = ROOT / "tests" / "corpus"
HERE = ROOT / "tests" / "headroom"


@pytest.fixture(scope="module", autouse=True)
def fast_timing():
    old = H.MIN_RUNS, H.MIN_TIME_S
    H.MIN_RUNS, H.MIN_TIME_S = 5, 0.1
    yield
    H.MIN_RUNS, H.MIN_TIME_S = old


@pytest.fixture(scope="module", autouse=True)
def fresh_host_profile(tmp_path_factory):
    """This module probes the host itself, into its own cache directory: a profile left in
    ~/.cache by an earlier run (maybe probed on a busy machine) is not what is under test."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOLAR_CACHE_DIR", str(tmp_path_factory.mktemp("solar-cache")))
        yield


@pytest.fixture(scope="module")
def host():
    return load_chip("host")


def test_probe_writes_a_loadable_chip(tmp_path):
    d = probe(measure=False)
    path = tmp_path / "host.toml"
    path.write_text(to_toml(d))
    chip = load_chip(str(path))
    assert chip.sm_count == len(os.sched_getaffinity(0))
    assert chip.peak("vector", "fp32") > 0 and "FMA" in chip.sources["vector"]


def test_host_peaks_are_ceilings(host):
    """What this CPU does must never beat the probed peaks (else bounds would not be bounds)."""
    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = min(_timed(lambda: torch.mm(a, b)) for _ in range(5))
    assert 2 * n**3 / best <= host.peak("vector", "fp32")
    x = torch.randn(64 * 1024**2 // 4)
    y = torch.empty_like(x)
    best = min(_timed(lambda: torch.mul(x, 2.0, out=y)) for _ in range(5))
    assert 2 * x.numel() * 4 / best <= host.dram_bytes_per_s * 1.05  # 5%: timer noise on a shared box


def test_a_low_profile_is_raised_to_what_a_run_moved(host, tmp_path, monkeypatch):
    """A host profile probed too low (say, under load) is raised by the first run that moves
    more, and the bounds are recomputed from it: never a bound above the measured time."""
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path))
    d = probe(measure=False)
    d["dram_bytes_per_s"] = 1e8  # far below any DRAM, and below what a run moves on a loaded box
    (tmp_path / "host.toml").write_text(to_toml(d))
    report = H.headroom_file(str(CORPUS / "ops_norm_layer_noaffine.py"), "cpu", "host")
    e = report.entries[0]
    h = e.headroom
    raised = load_chip("host")
    assert raised.dram_bytes_per_s > 1e8 and "raised from 0.1 GB/s" in raised.sources["dram_bytes_per_s"]
    assert any("raised from 0.1" in w for w in h["warnings"]), h["warnings"]
    assert not any("SOL violation" in w for w in h["warnings"]), h["warnings"]
    assert h["measured_s"] >= e.totals["t_fused_s"]
    assert h["measured_s"] >= e.totals["t_cache_aware_s"]
    assert len(h["top_lines"]) >= 1


def test_a_probe_from_an_older_version_is_redone(tmp_path, monkeypatch):
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path))
    old = to_toml(probe(measure=False)).replace("solar hw probe v", "solar hw probe v0", 1)
    (tmp_path / "host.toml").write_text(old)
    chip = load_chip("host")
    assert chip.sources["dram_bytes_per_s"].startswith("measured")
    assert (tmp_path / "host.toml").read_text() != old


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _sample() -> list[pathlib.Path]:
    files = list(EXAMPLES)
    corpus = sorted(CORPUS.glob("*.py")) if CORPUS.is_dir() else []
    jax_dir = ROOT / "tests" / "corpus_jax"
    jax_files = [jax_dir / n for n in ("mlp_linen.py", "transformer_block_fn.py", "rnn_scan.py")]
    return files + corpus[:: max(1, len(corpus) // 12)][:12] + [p for p in jax_files if p.exists()]


@pytest.mark.parametrize("path", _sample(), ids=lambda p: p.name)
def test_no_sol_violation_on_cpu(path, host):
    """Measured ≥ fused and ≥ cache-aware bound on the host profile, entry by entry."""
    report = H.headroom_file(str(path), "cpu", "host")
    assert report.error is None, report.error
    measured = 0
    for e in report.entries:
        if e.status != "ok" or not e.headroom or "error" in e.headroom:
            continue
        h = e.headroom
        measured += 1
        assert not h["warnings"], h["warnings"]  # the fresh probe held: nothing raised, nothing beaten
        assert h["measured_s"] >= e.totals["t_fused_s"], (e.name, h["measured_s"], e.totals)
        if e.totals.get("t_cache_aware_s") is not None:
            assert h["measured_s"] >= e.totals["t_cache_aware_s"], (e.name, h, e.totals)
        assert h["ratios"]["fused"] >= 1.0
        assert h["top_lines"] and all(g["line"] > 0 for g in h["top_lines"])
        if e.frontend == "torch":  # profile shares of the measured time (JAX: eager op-by-op times)
            assert sum(g["measured_s"] for g in h["top_lines"]) <= h["measured_s"] * 1.001
    assert measured >= 1


def test_json_schema_from_the_cli(capsys):
    rc = main(["headroom", str(ROOT / "examples" / "mlp.py"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    h = doc["entries"][0]["headroom"]
    assert set(h) >= {"device", "measured_s", "compiled_s", "ratios", "top_lines", "diagnosis"}
    assert set(h["ratios"]) == {"unfused", "fused", "cache_aware"}
    assert set(h["top_lines"][0]) == {"line", "measured_s", "t_sol_s", "ratio"}
    assert h["device"] == "cpu" and h["chip"] == "host"


def test_bad_dim_is_a_clear_error(capsys):
    rc = main(["headroom", str(ROOT / "examples" / "mlp.py"), "--dim", "x=abc"])
    assert rc == 2 and "--dim 'x=abc': expected NAME=INTEGER" in capsys.readouterr().err


def test_too_big_is_refused_with_its_size():
    report = H.headroom_file(str(HERE / "too_big.py"), "cpu", "host")
    h = report.entries[0].headroom
    assert "error" in h and "68.7 GB" in h["error"] and "available" in h["error"]


def test_runtime_error_reports_its_line():
    report = H.headroom_file(str(HERE / "raises_at_runtime.py"), "cpu", "host")
    h = report.entries[0].headroom
    src = (HERE / "raises_at_runtime.py").read_text().splitlines()
    assert "error" in h and "IndexError" in h["error"]
    assert src[h["line"] - 1].strip().startswith("return self.table(idx)")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_gpu_says_so(capsys):
    rc = main(["headroom", str(ROOT / "examples" / "mlp.py"), "--device", "cuda"])
    assert rc == 2 and "no CUDA GPU" in capsys.readouterr().err


def _entry(unfused: float, fused: float, cache: float | None = None, reorder=()) -> dict:
    return {"totals": {"t_unfused_s": unfused, "t_fused_s": fused, "t_cache_aware_s": cache},
            "reorder": list(reorder)}


def _h(measured: float, ops: int, entry: dict) -> H.Headroom:
    t = entry["totals"]
    return H.Headroom("cuda", "h100-sxm", measured, None,
                      {"unfused": measured / t["t_unfused_s"], "fused": measured / t["t_fused_s"],
                       "cache_aware": measured / t["t_cache_aware_s"] if t["t_cache_aware_s"] else None},
                      ops_per_run=ops)


@pytest.mark.parametrize("measured,ops,entry,want", [
    (100e-6, 40, _entry(5e-6, 4e-6), "launch/overhead-bound"),           # 40 × 5 µs = 200 µs ≥ half
    (1.2e-3, 10, _entry(1e-3, 0.3e-3), "missing fusion"),                # ≈ unfused, fusion 3.3×
    (5e-3, 10, _entry(1e-3, 0.9e-3, 2e-3), "tiling"),                    # cache-aware ≫ fused
    (5e-3, 10, _entry(1e-3, 0.9e-3, reorder=[{"line": 7, "flops_before": 8e9, "flops_after": 1e9,
                                               "expression": "a @ (b @ c)"}]), "algorithmic"),
    (5e-3, 10, _entry(1e-3, 0.9e-3), "kernel efficiency"),
])
def test_diagnosis_rules(measured, ops, entry, want):
    h = _h(measured, ops, entry)
    diag, reasons = H.diagnose(h, entry, "cuda")
    assert diag == want and reasons[0].startswith(want)


@pytest.mark.parametrize("name,chip", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H200", "h200"),
    ("NVIDIA B200", "b200"), ("NVIDIA A100-SXM4-40GB", "a100-sxm"), ("NVIDIA RTX A6000", "a6000"),
    ("NVIDIA H100 NVL", None), ("NVIDIA GH200 480GB", None), ("NVIDIA GB200", None),
    ("NVIDIA RTX 6000 Ada Generation", None), ("NVIDIA GeForce RTX 4090", None)])
def test_gpu_names_map_only_to_files_that_bound_them(name, chip):
    """A variant faster than the file its name resembles (H100 NVL: 3.9 TB/s vs the SXM file's
    3.35) is refused, not mapped: its bound would exceed a real run."""
    if chip is None:
        with pytest.raises(H.HeadroomError, match="--hw"):
            H.chip_for_gpu_name(name)
    else:
        assert H.chip_for_gpu_name(name) == chip


def _h_profiled(measured: float, ops: int, entry: dict, op_share: float | None) -> H.Headroom:
    h = _h(measured, ops, entry)
    h.op_share = op_share
    return h


@pytest.mark.parametrize("op_share,ops,want", [
    (0.3, 2, "launch/overhead-bound"),   # 70 % of the call outside ops, though 2 ops × 5 µs is tiny
    (0.95, 40, "kernel efficiency"),     # 40 × 5 µs would say overhead-bound; the profile says ops
    (1.4, 40, "kernel efficiency"),      # op time above the wall time: overhead clamped at 0
])
def test_overhead_comes_from_the_profiled_op_time(op_share, ops, want):
    entry = _entry(5e-6, 4e-6)
    h = _h_profiled(100e-6, ops, entry, op_share)
    diag, reasons = H.diagnose(h, entry, "cuda")
    assert diag == want, reasons
    if want == "launch/overhead-bound":
        assert "measured − profiled op time (30% of the profiled call in kernels)" in reasons[0]
        assert "70 µs of the 100 µs measured" in reasons[0]


def test_overhead_falls_back_to_the_typical_figure_without_op_times():
    entry = _entry(5e-6, 4e-6)
    diag, reasons = H.diagnose(_h_profiled(100e-6, 40, entry, None), entry, "cuda")
    assert diag == "launch/overhead-bound"
    assert "no op times profiled" in reasons[0] and "40 ops × ~5 µs" in reasons[0]


def test_profile_ops_separates_op_time_from_the_rest_of_the_call():
    a = torch.randn(384, 384)
    small = torch.ones(4)

    def mostly_ops():
        return a @ a @ a

    def mostly_python():
        time.sleep(0.01)
        return small + 1

    mostly_ops()
    op, wall = H.profile_ops(mostly_ops, "cpu")
    assert 0 < op <= wall * 1.05 and op / wall > 0.5, (op, wall)
    op, wall = H.profile_ops(mostly_python, "cpu")
    assert wall >= 0.01 and op / wall < 0.2, (op, wall)


def test_time_outside_the_ops_is_diagnosed_from_the_profile(tmp_path):
    """Two tiny ops around Python work: the fixed figure (2 ops × 3 µs) would miss the
    overhead; the profile finds most of the call outside the ops and says that is how."""
    src = tmp_path / "python_bound.py"
    src.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                   "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                   "        s = sum(i * 0.5 for i in range(20000)) * 1e-9\n"
                   "        return torch.relu(x * s)\n\n\n"
                   "def get_inputs():\n    return [torch.randn(8)]\n")
    report = H.headroom_file(str(src), "cpu", "host")
    h = report.entries[0].headroom
    assert "error" not in h, h
    assert 0 < h["op_share"] < 0.5, h
    assert h["ops_per_run"] * H.OVERHEAD_S["cpu"] < 0.5 * h["measured_s"]  # the old rule would not fire
    assert h["diagnosis"] == "launch/overhead-bound", h["reasons"]
    assert "measured − profiled op time" in h["reasons"][0]


def test_cpu_timing_uses_the_benchmark_timer_not_cuda_events(monkeypatch):
    """The CPU path is torch.utils.benchmark with the flush in its setup, one call per
    measurement; the CUDA-event path (untestable without a GPU) is never entered."""
    def no_events(*a, **k):
        raise AssertionError("CUDA events used on the CPU")
    monkeypatch.setattr(H, "_cuda_event_times", no_events)
    flushes = []

    def fn():
        time.sleep(0.002)

    t, runs = H.time_call(fn, "cpu", lambda: flushes.append(1), min_time=0.05)
    assert runs >= H.MIN_RUNS and len(flushes) >= runs  # a flush before every measured call
    assert 0.002 <= t < 0.02, t


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_timing_uses_events():
    x = torch.randn(4096, 4096, device="cuda")

    def fn():
        x @ x
        torch.cuda.synchronize()
    flush = H._flusher("cuda", 50 * 1024**2)
    t, runs = H.time_call(fn, "cuda", flush, min_time=0.05)
    host = _timed(fn)
    assert runs >= H.MIN_RUNS and 0 < t <= host * 1.5
