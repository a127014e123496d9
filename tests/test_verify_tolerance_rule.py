"""One tolerance rule everywhere (issue 16 item 4): an accumulating composition call
(scatter_add), a JAX loop output replayed step by step and the LLM agent's whole-entry answer
are judged like every op in verify/op_check.py, each point within its own rounding-error bound
(verify/propagate.py), not by a coarse tolerance scaled by the tensor's largest value. A
relative error of 1e-4 (3e-5 in the agent's answer), which that coarse tolerance let pass, is
caught; right answers still verify."""

from __future__ import annotations

import pathlib

import numpy as np
from conftest import ROOT, only_entry

PERTURB = 1.0 + 1e-4


def _analyze(path: str):
    from solar_lsp.pipeline.analyze import Config, analyze_file
    return only_entry(analyze_file(path, Config()))


def test_scatter_add_is_judged_point_by_point(monkeypatch):
    from solar_lsp.ir import execute

    path = str(ROOT / "tests" / "corpus" / "ops_scatter_add.py")
    v = _analyze(path).verification
    assert v["status"] == "verified", v
    # the call's sums 1e-4 too large: a scaled term, not a rounding difference
    orig = execute.apply_call

    def scaled(call, ins):
        out = orig(call, ins)
        return out * PERTURB if call[0] == "scatter" and isinstance(out, np.ndarray) else out

    monkeypatch.setattr(execute, "apply_call", scaled)
    v = _analyze(path).verification
    assert v["status"] == "mismatch", v
    assert "scatter_add" in v["detail"]


def test_jax_loop_replay_is_judged_point_by_point(monkeypatch):
    from solar_lsp.verify import check_jax

    path = str(ROOT / "tests" / "corpus_jax" / "lstm_scan.py")
    v = _analyze(path).verification
    assert v["status"] == "verified", v
    # every value the replay computes 1e-4 too large (the body's ops themselves are checked
    # at their first iteration, unchanged): only the replay's comparison can see it
    orig = check_jax._Replay.value
    monkeypatch.setattr(check_jax._Replay, "value", lambda self, h, arrays: orig(self, h, arrays) * PERTURB)
    v = _analyze(path).verification
    assert v["status"] == "mismatch", v
    assert " at step " in v["detail"]


def test_llm_whole_entry_answer_off_by_3e_5_is_rejected():
    from solar_lsp.frontend.torch.trace import load_module
    from solar_lsp.llm import prompt
    from solar_lsp.llm.check import check_entry, entry_golden
    from solar_lsp.source.discover import discover

    src, ir = prompt.worked_examples()
    path = str(pathlib.Path(prompt._EXAMPLES) / "worked.py")
    text = next("# solar IR v1 — program " + c for c in ir.split("# solar IR v1 — program ")[1:]
                if c.split("'")[1] == "running_sum")
    module = load_module(path)
    entry = next(e for e in discover(src, path, {}) if e.name == "running_sum")
    golden = entry_golden(module, entry, path, src, "", 2**30)
    assert check_entry(text, golden, 1e9).ok
    step = "cumsum[i0, i1 + 1] = cumsum[i0, i1] + x[i0, i1 + 1]"
    assert step in text
    # the running sum's step 3e-5 too large (the coarse tolerance let it pass: 2e-5 times
    # sqrt(reduction length) times the largest value)
    res = check_entry(text.replace(step, f"cumsum[i0, i1 + 1] = {1 + 3e-5!r} * (cumsum[i0, i1] + x[i0, i1 + 1])"),
                      golden, 1e9)
    assert not res.ok and res.kind == "mismatch", res.reason
