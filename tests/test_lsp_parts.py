"""The server's pure parts: which edits change an entry's closure, how old lines map to new
ones, and how settings from pyproject and the client combine."""

from __future__ import annotations

import pytest

from solar_lsp.lsp import present
from solar_lsp.lsp.closure import closure_hash, defs_of_lines
from solar_lsp.lsp.linemap import line_map
from solar_lsp.lsp.settings import Settings, SettingsError, merge, pyproject_settings

SRC = '''import torch
import torch.nn as nn

D = 64


def helper(x):
    return x * 2


def unrelated(x):
    return x + 1


class Block(nn.Module):
    def forward(self, x):
        return helper(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x)


class Other(nn.Module):
    def forward(self, x):
        return unrelated(x)


def get_inputs():
    return [torch.randn(8, D)]


def get_init_inputs():
    return []
'''


def test_unrelated_edit_keeps_the_closure():
    h = closure_hash(SRC, "Model")
    assert closure_hash(SRC.replace("return x + 1", "return x + 3"), "Model") == h
    assert closure_hash(SRC.replace("return x + 1", "return x + 3"), "Other") != closure_hash(SRC, "Other")
    assert closure_hash("\n\n" + SRC, "Model") == h  # moving code is not changing it


@pytest.mark.parametrize("edit", [
    ("return x * 2", "return x * 3"),            # a helper reached through a submodule
    ("return self.block(x)", "return self.block(x) + 1"),  # the entry itself
    ("torch.randn(8, D)", "torch.randn(16, D)"),  # shapes
    ("D = 64", "D = 128"),                        # a module-level constant
])
def test_edits_that_matter_change_the_closure(edit):
    assert closure_hash(SRC.replace(*edit), "Model") != closure_hash(SRC, "Model")


def test_dynamic_part_and_syntax_error():
    lines = [SRC.splitlines().index("    return x + 1") + 1]
    assert defs_of_lines(SRC, lines) == ["unrelated"]
    base = closure_hash(SRC, "Model", ["unrelated"])
    assert closure_hash(SRC.replace("return x + 1", "return x + 3"), "Model", ["unrelated"]) != base
    assert closure_hash("def broken(:\n", "Model") is None


def test_line_map_moves_and_withholds():
    old = ["a", "b", "c", "d"]
    assert line_map(old, ["new", "a", "b", "c", "d"]) == {0: 1, 1: 2, 2: 3, 3: 4}
    m = line_map(old, ["a", "B!", "c", "d"])
    assert 1 not in m and m[0] == 0 and m[2] == 2 and m[3] == 3


def test_settings_precedence(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.solar]\nchip = "b200"\ntarget_latency = "2ms"\nworkers = 2\n')
    sub = tmp_path / "pkg"
    sub.mkdir()
    tool, path = pyproject_settings(sub)
    assert path == tmp_path / "pyproject.toml"
    s = merge(Settings(), tool, "[tool.solar]")
    assert (s.chip, s.target_s, s.workers) == ("b200", 0.002, 2)
    s = merge(s, {"chip": "a6000", "targetHz": "500", "targetLatency": None}, "client")
    assert s.chip == "a6000" and s.target_s == 0.002  # latency from pyproject still set
    assert merge(Settings(), {"targetHz": "500"}, "c").target_s == pytest.approx(0.002)
    assert Settings().analysis_key() != merge(Settings(), {"chip": "b200"}, "c").analysis_key()
    assert Settings().analysis_key() == merge(Settings(), {"debounce": 3}, "c").analysis_key()


@pytest.mark.parametrize("bad", [{"tf32": "sometimes"}, {"workers": 0}, {"timeout": "soon"},
                                 {"memoryLimit": "lots"}, {"targetLatency": "fast"}])
def test_bad_settings_name_the_field(bad):
    with pytest.raises(SettingsError, match="client"):
        merge(Settings(), bad, "client")


def test_presentation_of_a_failed_entry_and_mismatch():
    failed = {"name": "Model", "line": 5, "status": "error", "error": "boom", "error_line": 9}
    assert present.diagnostics(failed) == [(9, "warning", "solar: Model could not be analyzed: boom")]
    assert present.lens_titles(failed, "h100-sxm", None)[0].startswith("solar: Model failed")
    ok = {"name": "M", "line": 1, "status": "ok", "unsupported": [{"op": "aten.fft", "line": 3, "reason": "r"}],
          "verification": {"status": "mismatch", "issues": [
              {"op": "relu_1", "line": 4, "status": "mismatch", "detail": "d", "worst": {"at": [0]}}]}}
    d = present.diagnostics(ok)
    assert [x[0] for x in d] == [3, 4] and "no lowering" in d[0][2] and "does not match" in d[1][2]


def test_local_rewrite_only_when_the_value_is_the_chain():
    from solar_lsp.lsp.rewrite import local_rewrite
    src = "def f(a, b, c):\n    return a @ b @ c\n"
    new = 'torch.einsum("ac,cd->ad", a, torch.einsum("cb,bd->cd", b, c))'
    assert local_rewrite(src, 2, ["a", "b", "c"], new) == (1, 11, 1, 20, new)
    assert local_rewrite("def f(a, b, c):\n    return (a @ b @ c) + 1\n", 2, ["a", "b", "c"], new) is None
    assert local_rewrite("def f(a, b, c):\n    y = torch.matmul(torch.mm(a, b), c)\n", 2, ["a", "b", "c"], new)[4] == new
    assert local_rewrite(src, 2, ["a", "b"], new) is None


def test_llm_jobs_get_the_agent_time_limit():
    from solar_lsp.lsp.pool import LLM_JOB_TIMEOUT_S, Pool, request
    pool = Pool(1, 60.0)
    assert pool.job_timeout(request("a.py", "a.py", {"llm": False})) == 60.0
    assert pool.job_timeout(request("a.py", "a.py", {"llm": True})) == LLM_JOB_TIMEOUT_S >= 3 * 120
    pool.timeout_s = 1200.0
    assert pool.job_timeout(request("a.py", "a.py", {"llm": True})) == 1200.0


def test_entry_hover_shows_the_count_check():
    from solar_lsp.pipeline.analyze import Config, analyze_file
    doc = analyze_file("examples/mlp.py", Config(verify=True)).to_json()
    [entry] = doc["entries"]
    assert entry["verification"]["counts"]["status"] == "checked"
    text = present.entry_markdown(entry)
    assert "counts: **checked**" in text and "FlopCounterMode" in text
