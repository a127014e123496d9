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


def test_train_mode_and_step_target_settings():
    s = merge(Settings(), {"mode": "train", "optimizer": "sgd", "targetStepsPerSecond": 4, "targetLatency": "2ms"}, "c")
    assert s.target_s == pytest.approx(0.25) and s.target_label() == "4 steps/s"  # steps/s wins in train mode
    assert (s.analysis_config()["mode"], s.analysis_config()["optimizer"]) == ("train", "sgd")
    inf = merge(Settings(), {"targetStepsPerSecond": 4, "targetLatency": "2ms"}, "c")
    assert inf.target_s == 0.002 and inf.target_label() == "2ms"  # a step rate means nothing for inference
    # the optimizer changes a training step only: inference results stay cached
    assert inf.analysis_key() == merge(inf, {"optimizer": "sgd"}, "c").analysis_key()
    assert s.analysis_key() != merge(s, {"optimizer": "adamw"}, "c").analysis_key()
    assert Settings().analysis_key() != merge(Settings(), {"symbolic": True}, "c").analysis_key()
    for bad, word in (({"mode": "training"}, "mode"), ({"optimizer": "adam"}, "optimizer"),
                      ({"targetStepsPerSecond": 0}, "targetStepsPerSecond")):
        with pytest.raises(SettingsError, match=word):
            merge(Settings(), bad, "client")


def _phase(flops, tensor, bu, bf, tu, tf):
    return {"flops": flops, "tensor_flops": tensor, "vector_flops": flops - tensor, "bytes_unfused": bu,
            "bytes_fused": bf, "t_unfused_s": tu, "t_fused_s": tf}


def _train_entry() -> dict:
    """A training step's report as the engine writes it (docs/training.md: ``mode``, ``phases``
    per entry and line, ``phase`` per op), built by hand with round numbers."""
    op = {"op": "aten.mm.default", "id": "mm_1", "shapes": [[32, 8], [8, 64]], "dtype": "float32", "flops": 32768,
          "bytes": 11264, "t_s": 3.4e-9, "bound": "memory", "t_compute_s": 1e-9, "phase": "backward"}
    line = {"line": 11, "flops": 94912, "bytes": 190208, "t_unfused_s": 5.68e-8, "bound": "memory",
            "ops": [op], "phases": {"forward": {"flops": 32768, "bytes": 11392, "t_unfused_s": 3.4e-9},
                                    "backward": {"flops": 33024, "bytes": 12416, "t_unfused_s": 3.7e-9},
                                    "optimizer": {"flops": 29120, "bytes": 166400, "t_unfused_s": 4.97e-8}}}
    return {"name": "Model", "line": 5, "status": "ok", "frontend": "torch", "mode": "train",
            "optimizer": "adamw", "verification": {"status": "unverified", "detail": "off"},
            "totals": {"flops": 95424, "tensor_flops": 65536, "bytes_unfused": 191000, "bytes_fused": 79000,
                       "t_unfused_s": 5.74e-8, "t_fused_s": 2.36e-8, "t_cache_aware_s": 2.36e-8,
                       "bound": "memory", "bound_unfused": "memory", "hardware": "h100-sxm",
                       "tensor_flops_by_unit": {"vector.fp32": 65536}},
            "phases": {"forward": _phase(33000, 32768, 12400, 10400, 3.71e-9, 3.1e-9),
                       "backward": _phase(33300, 32768, 13400, 10400, 4.01e-9, 3.09e-9),
                       "optimizer": _phase(29100, 0, 166000, 58200, 4.97e-8, 1.74e-8)},
            "inverse": {"target_s": 0.25, "by_fidelity": {"fused": {"bytes_per_s": 3.2e5, "flops_per_s": 3.8e5,
                                                                    "shortfall": {}}}},
            "lines": [line]}


def test_a_training_step_is_shown_per_phase():
    e = _train_entry()
    line = e["lines"][0]
    assert present.hint_label(line, e) == "train step: 94.9 KFLOP · 190 KB · 56.8 ns mem"
    hov = present.entry_markdown(e)
    assert "**train step** (optimizer adamw)" in hov
    assert "| backward | 33.3 KFLOP | 32.8 KFLOP | 13.4 KB | 10.4 KB | 4.01 ns | 3.09 ns |" in hov
    assert "| optimizer | 29.1 KFLOP | 0 FLOP |" in hov
    assert "65.5 KFLOP of GEMM/conv at the vector fp32 peak" in hov and "tensor cores" not in hov
    lh = present.line_markdown(line, e)
    assert "· **train step** ·" in lh and "| optimizer | 29.1 KFLOP | 166 KB | 49.7 ns |" in lh
    assert "| `mm` | backward | 32×8, 8×64 |" in lh  # friendly name and the op's phase
    titles = present.lens_titles(e, "h100-sxm", "4 steps/s", "train")
    assert titles[0].startswith("SOL train step h100-sxm: unfused 57.4 ns · fused 23.6 ns")
    assert titles[1] == "per phase (fused): forward 3.1 ns · backward 3.09 ns · optimizer 17.4 ns"
    assert titles[2].startswith("4 steps/s needs ≥ 320 KB/s")


def test_an_inference_report_has_no_training_words():
    e = _train_entry()
    for k in ("mode", "phases", "optimizer"):
        e.pop(k)
    line = e["lines"][0]
    line.pop("phases")
    line["ops"][0].pop("phase")
    text = present.entry_markdown(e) + present.line_markdown(line, e) + present.hint_label(line, e)
    assert "train" not in text and "phase" not in text and "optimizer" not in text
    assert "| `mm` | 32×8, 8×64 |" in present.line_markdown(line, e)
    assert present.lens_titles(e, "h100-sxm", None)[0].startswith("SOL h100-sxm: unfused")
    # a forward-only result while the settings ask for a training step says so
    assert "forward only" in present.lens_titles(e, "h100-sxm", None, "train")[0]
    failed = {"name": "Model", "line": 5, "status": "error", "error": "no backward for aten.foo"}
    assert present.lens_titles(failed, "h100-sxm", None, "train")[0] == \
        "solar: Model train step failed — no backward for aten.foo"


def test_the_unit_a_gemm_is_priced_on(tmp_path):
    """Named as bounds/sol.py prices it: tensor cores only for FLOPs priced there."""
    from solar_lsp.hardware.chips import load_chips
    from solar_lsp.lsp.worker import _config
    from solar_lsp.pipeline.analyze import analyze_file
    f = tmp_path / "g.py"
    f.write_text("# solar: x=bf16[64,128], w=bf16[128,128]\ndef mm16(x, w):\n    return x @ w\n\n\n"
                 "# solar: x=f32[64,128], w=f32[128,128]\ndef mm32(x, w):\n    return x @ w\n")
    words = {}
    for chip, tf32 in (("h100-sxm", "conv"), ("h100-sxm", "all"), ("t4", "conv")):
        cfg = _config({"hw": [chip], "verify": False, "tf32": tf32}, None)
        chips = load_chips(cfg.hw)
        for er in analyze_file(str(f), cfg, chips).entries:
            assert sum(er.totals["tensor_flops_by_unit"].values()) == er.totals["tensor_flops"] == 2 * 64 * 128 * 128
            words[chip, tf32, er.name] = present.entry_markdown(er.to_json()).split("in all: ")[1].split("\n")[0]
    assert words["h100-sxm", "conv", "mm16"] == "2.10 MFLOP on tensor cores (bf16)"
    assert words["h100-sxm", "conv", "mm32"] == "2.10 MFLOP of GEMM/conv at the vector fp32 peak (fp32 without TF32)"
    assert words["h100-sxm", "all", "mm32"] == "2.10 MFLOP on tensor cores (tf32)"
    # Turing has no bf16 tensor-core path (hardware/t4.toml [unsupported])
    assert words["t4", "conv", "mm16"].endswith("(no bf16 tensor-core path on this chip)")


def test_sizes_a_user_types_and_formulas_shown():
    from solar_lsp.lsp.present_symbolic import pretty
    from solar_lsp.lsp.sizes import SizesError, parse_sizes, pragma_dims
    assert parse_sizes("S=4096, B=8") == {"S": 4096, "B": 8} == parse_sizes("S=4096 B=8")
    assert parse_sizes({"S": 4096}) == {"S": 4096}
    for bad in ("S", "S=0", "S=big", "", "4096"):
        with pytest.raises(SizesError):
            parse_sizes(bad)
    assert pragma_dims("# solar: B=4, S=512, x=f32[B,S], n=int:3, y=f32[S, 8]") == {"B": 4, "S": 512}
    assert pretty("4*B*S*D**2 + 2*B*S") == "4·B·S·D² + 2·B·S"


def test_formulas_at_sizes_equal_the_analysis_there(tmp_path):
    """The lens's evaluation (sizes.evaluate_formulas) against the entry analyzed at sizes the
    fit never saw: counts exactly, times to float precision."""
    import random

    from solar_lsp.hardware.chips import load_chips
    from solar_lsp.lsp.sizes import evaluate_formulas
    from solar_lsp.pipeline.analyze import Config, analyze_file
    from solar_lsp.pipeline.symbolic_costs import add_symbolic, entry_evaluator
    f = tmp_path / "a.py"
    f.write_text("import torch\n\n\n# solar: S=64, D=32, x=f32[S,D], w=f32[D,D]\ndef f(x, w):\n"
                 "    return torch.softmax(x @ w, -1)\n")
    cfg, chips = Config(verify=False), load_chips(["h100-sxm"])
    rep = analyze_file(str(f), cfg, chips)
    add_symbolic(rep, str(f), cfg, chips)
    sym = rep.entries[0].to_json()["symbolic"]
    _, analyze = entry_evaluator(str(f), "f", cfg, chips)
    rng = random.Random(7)
    for _ in range(2):
        sizes = {"S": rng.randint(65, 3000), "D": rng.randint(33, 300)}
        got, want = evaluate_formulas(sym, sizes, chips[0].dram_bytes_per_s), analyze(sizes).totals
        for k in ("tensor_flops", "vector_flops", "transcendentals", "bytes_unfused", "bytes_fused"):
            assert got[k] == want[k], (k, sizes)
        assert got["t_fused_s"] == pytest.approx(want["t_fused_s"], rel=1e-9)
        assert got["t_unfused_s"] == pytest.approx(want["t_unfused_s"], rel=1e-9)
        assert got["bound"] == want["bound"]
    with pytest.raises(ValueError, match="Q is not a shape symbol"):
        evaluate_formulas(sym, {"Q": 3}, 1e12)


def test_symbolic_jobs_get_a_longer_time_limit():
    from solar_lsp.lsp.pool import SYMBOLIC_TIMEOUT_FACTOR, Pool, request
    pool = Pool(1, 60.0)
    assert pool.job_timeout(request("a.py", "a.py", {"symbolic": True})) == 60.0 * SYMBOLIC_TIMEOUT_FACTOR
    assert pool.job_timeout(request("a.py", "a.py", {"symbolic": True}, ["f"], "ir")) == 60.0
    assert pool.job_timeout({**request("a.py", "a.py", {}, ["f"], "sol_at"), "symbolic": {"symbols": ["S"]}}) == 60.0


def test_a_job_that_raises_says_so_on_its_entries(monkeypatch):
    """A bug of ours while a job finishes (not the user's code, which is a JobFailed) is
    logged with its traceback and shown on each entry, so that the document does not keep
    stale hints with nothing said."""
    import asyncio
    import contextlib

    from solar_lsp.lsp import analysis
    from solar_lsp.lsp.app import DocState
    from solar_lsp.source.discover import discover

    logged: list = []
    published: list = []

    async def refresh() -> None:
        return None

    monkeypatch.setattr(analysis.server, "log", logged.append)
    monkeypatch.setattr(analysis.server, "refresh", refresh)
    monkeypatch.setattr(analysis, "publish", published.append)
    src = ("import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
           "        return x * 2\n\ndef get_inputs():\n    return [torch.randn(4)]\n")
    st = DocState("file:///tmp/m.py", "/tmp/m.py", entries=discover(src, "/tmp/m.py", {}))

    async def job() -> None:
        raise KeyError("a bug")

    async def main() -> None:
        task = asyncio.ensure_future(job())
        task.add_done_callback(lambda t: analysis.job_raised(st, t))
        with contextlib.suppress(KeyError):
            await task
        await asyncio.sleep(0)

    asyncio.run(main())
    assert "internal error" in logged[0] and "KeyError: 'a bug'" in logged[0], logged
    assert st.faults["Model"][1].startswith("solar: internal error (KeyError"), st.faults
    assert published == [st]
