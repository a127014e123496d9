"""The operator-coverage gate: every corpus file analyzed and verified with no unsupported op,
the corpus size, the matrix-unit FLOPs of every entry against torch's FlopCounterMode, and
unit tests of solar_lsp/pipeline/coverage.py.

The whole corpus runs once per session, through the real CLI in a child process
(``python -m solar_lsp.cli.main coverage tests/corpus --json``): one process for all files, as
in CI, and a crash in native code fails these tests instead of killing pytest.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import ROOT, write
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from solar_lsp.frontend.torch.trace import build, load_module
from solar_lsp.pipeline.coverage import (
    CoverageResult,
    EntryResult,
    FileResult,
    corpus_files,
    percentile,
)
from solar_lsp.source.discover import discover_file

pytestmark = pytest.mark.slow  # the corpus gate: every corpus file analyzed and verified (the slow tier)

# SOLAR_CORPUS_DIR runs the same gate on another directory (e.g. a copy with one file left out)
CORPUS = Path(os.environ.get("SOLAR_CORPUS_DIR", ROOT / "tests" / "corpus"))
FILES = corpus_files(str(CORPUS))
ENTRIES = [(f, e.name) for f in FILES for e in discover_file(f)]


def _rel(path: str) -> str:
    return os.path.relpath(path, CORPUS)


@pytest.fixture(scope="module")
def corpus() -> dict:
    """The CLI's JSON for the whole corpus, run once (about 1 s per file on 2 cores)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "solar_lsp.cli.main", "coverage", str(CORPUS), "--json"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    if not proc.stdout.strip():
        pytest.fail(f"solar coverage died (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    doc = json.loads(proc.stdout)
    doc["exit_code"] = proc.returncode
    return doc


@pytest.fixture(scope="module")
def by_file(corpus) -> dict[str, dict]:
    return {_rel(f["file"]): f for f in corpus["files"]}


def test_corpus_has_150_files():
    assert len(FILES) >= 150, f"only {len(FILES)} corpus files"


def test_architecture_half_has_60_files():
    arch = [f for f in FILES if os.path.basename(f).startswith(("arch_", "fused_"))]
    assert len(arch) >= 60, len(arch)


@pytest.mark.timeout(1700)  # the corpus fixture runs here (its own limit 1500 s), not pytest's 600 s
def test_every_corpus_file_analyzed_and_verified(corpus):
    """The CI gate: every entry analyzed, verified, and without an unsupported op."""
    failures = []
    for f in corpus["files"]:
        if f["passed"]:
            continue
        why = f["errors"] + [f"unsupported {u['op']} (line {u['line']}): {u['reason']}"
                             for u in f["unsupported"]]
        why += [f"{e['name']}: {e['verification']}: {e['detail']}" for e in f["detail"]
                if e["status"] == "ok" and e["verification"] != "verified"]
        failures.append(f"{_rel(f['file'])}: {'; '.join(why)}")
    s = corpus["summary"]
    assert s["files"] == len(FILES)
    assert not failures, f"{len(failures)} of {s['files']} files fail:\n" + "\n".join(failures)
    assert s["entries"] == s["analyzed"] == s["verified"] == len(ENTRIES)
    assert corpus["exit_code"] == 0 and corpus["ok"]


@pytest.mark.parametrize("path,name", ENTRIES, ids=[f"{_rel(p)}::{n}" for p, n in ENTRIES])
def test_tensor_flops_equal_flop_counter(by_file, path, name):
    f = by_file[_rel(path)]
    assert f["errors"] == [], f["errors"]
    e = next(x for x in f["detail"] if x["name"] == name)
    assert e["status"] == "ok" and not e["unsupported"], (e["error"], e["unsupported"])
    entry = next(x for x in discover_file(path) if x.name == name)
    model, inputs = build(load_module(path), entry, path, device="cpu")
    # FlopCounterMode's module tracker hooks autograd on inputs that require grad; a view of a
    # parameter made under no_grad (Perceiver's latents) has no grad_fn and trips it.
    model.requires_grad_(False)
    # On the CPU, sdpa dispatches to a flash kernel FlopCounterMode does not count; its math
    # backend runs the same contractions as matmuls, which it does count. Likewise the fused
    # fast path of nn.MultiheadAttention / TransformerEncoderLayer in eval mode.
    fast = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    recurrent: list[tuple[str, int]] = []  # (module name, gate FLOPs by the hand formula)
    hooks = [m.register_forward_pre_hook(
        lambda m, args, fqn=fqn: recurrent.append((fqn, _rnn_flops(m, args[0]))))
        for fqn, m in model.named_modules() if isinstance(m, torch.nn.RNNBase)]
    try:
        with sdpa_kernel([SDPBackend.MATH]), FlopCounterMode(display=False) as fc, torch.no_grad():
            model(*inputs)
    finally:
        torch.backends.mha.set_fastpath_enabled(fast)
        for h in hooks:
            h.remove()
    counted = fc.get_total_flops()
    # FlopCounterMode names a module's counts "<root class>.<fqn>"; a recurrent layer it saw
    # nothing in (the CPU's fused LSTM) gets the formula instead.
    per_module = {k: sum(v.values()) for k, v in fc.get_flop_counts().items()}
    root = type(model).__name__
    unseen = sum(f for fqn, f in recurrent if per_module.get(f"{root}.{fqn}", 0) == 0)
    # FlopCounterMode has no formula for aten._int_mm: the int8 matmul's M x K x N MACs by hand
    blind = BLIND_TO_FLOPCOUNTER.get(_rel(path), 0)
    # an entry with no contraction at all must report none either (the engine inventing matrix
    # FLOPs would break the bound as surely as missing them)
    # a causal mask's skipped upper triangle is left out of tensor_flops; FlopCounterMode prices
    # the full square, which is tensor_flops_dense
    assert e["tensor_flops_dense"] == counted + unseen + blind
    assert e["tensor_flops"] <= e["tensor_flops_dense"]


BLIND_TO_FLOPCOUNTER = {"ops_dtype_int8_mm.py": 2 * 64 * 1024 * 512}  # torch._int_mm(a[64,1024], b[1024,512])


def _rnn_flops(m: torch.nn.RNNBase, x: torch.Tensor) -> int:
    """FLOPs of the matmuls of nn.RNN/GRU/LSTM: per layer, direction and step,
    B x (gates * H) x (input + R) MACs for the gates, R = proj_size or H the recurrent width, plus
    B x H x proj_size for an LSTM projection. On the CPU, nn.LSTM runs as one fused op that
    FlopCounterMode does not count (nn.GRU runs as bmm/addmm, which it does)."""
    gates = {"LSTM": 4, "GRU": 3}.get(m.mode, 1)
    h, p = m.hidden_size, m.proj_size
    r = p or h
    t, b = (x.shape[0], x.shape[1]) if not m.batch_first else (x.shape[1], x.shape[0])
    if x.dim() == 2:  # unbatched
        t, b = x.shape[0], 1
    dirs = 2 if m.bidirectional else 1
    macs = 0
    for layer in range(m.num_layers):
        width = m.input_size if layer == 0 else r * dirs
        macs += dirs * t * b * (gates * h * (width + r) + h * p)
    return 2 * macs


# ------------------------------------------------------------------ coverage.py unit tests

def _file(name: str, seconds: float, *entries: EntryResult, error: str | None = None) -> FileResult:
    return FileResult(file=name, entries=list(entries), error=error, seconds=seconds)


def _ok(name: str = "Model") -> EntryResult:
    return EntryResult(name=name, line=1, status="ok", verification="verified")


def test_summary_counts_and_times():
    bad_op = {"op": "aten.foo.default", "line": 3, "reason": "no lowering for this op yet"}
    files = [
        _file("a.py", 1.0, _ok()),
        _file("b.py", 3.0, _ok("f"), EntryResult("g", 9, "ok", "unverified", unsupported=[bad_op, bad_op])),
        _file("c.py", 2.0, EntryResult("Model", 1, "error", "unverified", error="trace failed")),
        _file("d.py", 7.0, error="analysis crashed: RuntimeError: boom"),
        _file("e.py", 0.5, EntryResult("h", 4, "ok", "mismatch", unsupported=[bad_op])),
    ]
    r = CoverageResult(root=".", hardware="h100-sxm", verify=True, files=files)
    s = r.summary()
    times = [f.seconds for f in files]
    assert (s["files"], s["files_passed"], s["file_errors"]) == (5, 1, 1)
    assert (s["entries"], s["analyzed"], s["verified"]) == (5, 4, 2)
    assert s["verification"] == {"verified": 2, "unverified": 2, "mismatch": 1}
    assert s["unsupported_ops"] == {"aten.foo.default": {"count": 3, "files": ["b.py", "e.py"]}}
    assert s["time_median_s"] == statistics.median(times)
    assert s["time_p95_s"] == max(times)  # nearest rank: ceil(0.95 * 5) = 5th of 5
    assert s["time_total_s"] == sum(times)
    assert r.exit_code == 1
    assert files[1].errors == [] and files[2].errors == ["Model: trace failed"]


def test_exit_code_zero_only_when_everything_passes():
    good = CoverageResult(".", "h100-sxm", True, [_file("a.py", 1, _ok()), _file("b.py", 1, _ok())])
    assert good.exit_code == 0
    unverified = EntryResult("Model", 1, "ok", "unverified")
    assert CoverageResult(".", "h100-sxm", True, [_file("a.py", 1, unverified)]).exit_code == 1
    # without verification an analyzed entry with no unsupported op passes
    assert CoverageResult(".", "h100-sxm", False, [_file("a.py", 1, unverified)]).exit_code == 0
    assert CoverageResult(".", "h100-sxm", True, [_file("empty.py", 1)]).exit_code == 1  # no entries
    assert CoverageResult(".", "h100-sxm", True, []).exit_code == 1  # no files


def test_percentile_is_nearest_rank():
    vals = [float(v) for v in range(1, 21)]  # 1..20
    assert percentile(vals, 95) == 19.0  # ceil(0.95 * 20) = 19th
    assert percentile(vals, 50) == 10.0
    assert percentile([4.0], 95) == 4.0
    with pytest.raises(ValueError):
        percentile([], 95)


GOOD = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
'''

UNSUPPORTED = '''
import torch


# solar: a=f32[8,8]
def det(a):
    return torch.linalg.det(a)
'''

RAISES_IN_FORWARD = '''
import torch


# solar: x=f32[4]
def boom(x):
    raise RuntimeError("user bug")
'''

RAISES_AT_IMPORT = '''
import torch

raise ImportError("missing dependency")


# solar: x=f32[4]
def f(x):
    return x * 2
'''

EXITS_AT_IMPORT = '''
import sys

import torch

print("hello from user code")
torch.set_default_dtype(torch.float64)
sys.exit(3)


# solar: x=f32[4]
def f(x):
    return x * 2
'''

HANGS = '''
import torch

while True:
    pass


# solar: x=f32[4]
def f(x):
    return x * 2
'''


@pytest.fixture
def mixed_dir(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    for name, src in (("a_good.py", GOOD), ("b_unsupported.py", UNSUPPORTED),
                      ("c_raises.py", RAISES_IN_FORWARD), ("d_import_error.py", RAISES_AT_IMPORT),
                      ("e_exits.py", EXITS_AT_IMPORT), ("f_hangs.py", HANGS),
                      ("g_no_entry.py", "x = 1\n"), ("_helper.py", "raise SystemExit\n")):
        write(d, name, src)
    return d


def test_bad_files_are_reported_not_fatal(cli, mixed_dir):
    r = cli("coverage", str(mixed_dir), "--json", "--timeout", "8")
    assert r.code == 1
    doc = r.json()  # user prints did not leak into stdout
    files = {os.path.basename(f["file"]): f for f in doc["files"]}
    assert sorted(files) == ["a_good.py", "b_unsupported.py", "c_raises.py", "d_import_error.py",
                             "e_exits.py", "f_hangs.py", "g_no_entry.py"]
    assert files["a_good.py"]["passed"] and files["a_good.py"]["verified"] == 1
    un = files["b_unsupported.py"]
    assert not un["passed"] and un["analyzed"] == 1 and un["verified"] == 0
    assert [(u["op"], u["line"]) for u in un["unsupported"]] == [("aten._linalg_det.default", 6)]
    assert files["c_raises.py"]["analyzed"] == 0 and "user bug" in files["c_raises.py"]["errors"][0]
    assert "missing dependency" in files["d_import_error.py"]["errors"][0]
    assert "SystemExit" in files["e_exits.py"]["errors"][0]
    assert "timed out after 8 s" in files["f_hangs.py"]["errors"][0]
    assert 8 <= files["f_hangs.py"]["seconds"] < 30
    assert "no entry points" in files["g_no_entry.py"]["errors"][0]
    assert torch.get_default_dtype() == torch.float32  # the user file's change was undone
    s = doc["summary"]
    assert (s["files"], s["files_passed"]) == (7, 1)
    assert s["unsupported_ops"]["aten._linalg_det.default"]["count"] == 1
    assert "[1/7]" in r.err and "f_hangs.py" in r.err  # the per-file log of a non-terminal stderr


def test_cli_passing_dir_exits_zero_and_renders(cli, tmp_path):
    write(tmp_path, "good.py", GOOD)
    r = cli("coverage", str(tmp_path))
    assert r.code == 0, r.out
    assert "1/1 files passed" in r.out and "good.py" in r.out
    r = cli("coverage", str(tmp_path), "--no-verify", "--json")
    assert r.code == 0
    doc = r.json()
    assert doc["verify"] is False and doc["summary"]["verified"] == 0 and doc["summary"]["analyzed"] == 1


def test_cli_bad_arguments(cli, tmp_path):
    assert cli("coverage", str(tmp_path / "missing")).code == 2
    assert cli("coverage", str(tmp_path), "--hw", "no-such-chip").code == 2
    assert cli("coverage", str(tmp_path)).code == 1  # an empty directory covers nothing
