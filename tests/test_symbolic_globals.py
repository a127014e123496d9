"""Symbolic costs in the sizes of a KernelBench-style file's module globals (``batch_size``,
``dim``) read by ``get_inputs()`` / ``get_init_inputs()``, marked as symbols by ``--symbol`` or
``[tool.solar] symbols`` (docs/sol-model.md, "Symbolic costs")."""

from __future__ import annotations

import json
import math

import pytest
import sympy
from hypothesis import example, given, settings
from hypothesis import strategies as st

from solar_lsp.hardware.chips import load_chips
from solar_lsp.pipeline.analyze import analyze_file
from solar_lsp.pipeline.config import Config
from solar_lsp.pipeline.symbolic import parse
from solar_lsp.pipeline.symbolic_costs import add_symbolic

QUANTITIES = ("tensor_flops", "vector_flops", "transcendentals", "bytes_unfused", "bytes_fused")

KB = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.softmax(self.lin(x), dim=-1)


batch_size = {batch_size}
dim = {dim}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
'''


@pytest.fixture(scope="module")
def chips():
    return load_chips(["h100-sxm"])


@pytest.fixture(scope="module")
def kb(tmp_path_factory, chips):
    path = str(tmp_path_factory.mktemp("h11sym") / "kb.py")
    with open(path, "w") as f:
        f.write(KB.format(batch_size=16, dim=64))
    cfg = Config(verify=False, symbols={"batch_size": "B", "dim": "dim"})
    report = analyze_file(path, cfg, chips)
    assert report.error is None and report.entries[0].status == "ok"
    add_symbolic(report, path, cfg, chips)
    assert report.error is None
    return report.entries[0]


def _at(text: str, symbols: list[str], sizes: dict[str, int]):
    return parse(text, symbols).subs({sympy.Symbol(n, positive=True, integer=True): v for n, v in sizes.items()})


def test_globals_are_the_symbols_with_the_files_values(kb):
    sym = kb.symbolic
    assert sym["symbols"] == ["B", "dim"] and sym["values"] == {"B": 16, "dim": 64}
    assert sym["not_fitted"] == [] and all(sym[q] is not None for q in QUANTITIES)
    B, D = (sympy.Symbol(n, positive=True, integer=True) for n in ("B", "dim"))
    # one Linear of B*dim*dim multiply-adds, 2 FLOPs each (the bias rides along); one exp per
    # element in the softmax
    assert sympy.expand(parse(sym["tensor_flops"], sym["symbols"]) - 2 * B * D * D) == 0
    assert sympy.expand(parse(sym["transcendentals"], sym["symbols"]) - B * D) == 0
    # fused, fp32: x, the weight, the bias and the output once
    assert sympy.expand(parse(sym["bytes_fused"], sym["symbols"]) - 4 * (2 * B * D + D * D + D)) == 0


@settings(max_examples=5, deadline=None)
@given(st.fixed_dictionaries({"batch_size": st.integers(1, 40), "dim": st.integers(1, 40)}))
@example({"batch_size": 1, "dim": 33})  # the grid is B in 3, 4 and dim in 3, 4, 5
def test_formulas_equal_a_fresh_analysis_of_the_file_at_other_globals(kb, chips, tmp_path_factory, sizes):
    sym = kb.symbolic
    path = tmp_path_factory.mktemp("h11fresh") / "kb.py"
    path.write_text(KB.format(**sizes))  # the file itself at other sizes, no symbols involved
    [got] = analyze_file(str(path), Config(verify=False), chips).entries
    assert got.status == "ok", got.error
    at = {"B": sizes["batch_size"], "dim": sizes["dim"]}
    for q in QUANTITIES:
        assert _at(sym[q], sym["symbols"], at) == got.totals[q], (q, sizes)
    for t in ("t_unfused_s", "t_fused_s"):
        assert math.isclose(float(_at(sym[t], sym["symbols"], at)), got.totals[t], rel_tol=1e-9)
    for ln, fresh in zip(kb.lines, got.lines):
        assert ln.line == fresh.line
        assert _at(ln.symbolic["tensor_flops"], sym["symbols"], at) == sum(o.tensor_flops for o in fresh.ops)
        assert _at(ln.symbolic["bytes_unfused"], sym["symbols"], at) == fresh.bytes


def test_a_dim_of_the_symbols_name_sets_the_global(tmp_path, chips):
    path = tmp_path / "kb.py"
    path.write_text(KB.format(batch_size=16, dim=64))
    cfg = Config(verify=False, symbols={"batch_size": "B"}, dims={"B": 5})
    [e] = analyze_file(str(path), cfg, chips).entries
    assert e.inputs[0]["shape"] == [5, 64]


def _write_kb(tmp_path, **sizes) -> str:
    path = tmp_path / "kb.py"
    path.write_text(KB.format(**sizes))
    return str(path)


def test_cli_symbol_names_the_global_in_the_formulas(cli, tmp_path):
    path = _write_kb(tmp_path, batch_size=16, dim=64)
    r = cli("analyze", path, "--json", "--no-verify", "--symbol", "batch_size=B", "--symbol", "dim")
    assert r.code == 0, r.err
    sym = json.loads(r.out)["entries"][0]["symbolic"]
    assert sym["symbols"] == ["B", "dim"]
    B, D = (sympy.Symbol(n, positive=True, integer=True) for n in ("B", "dim"))
    assert sympy.expand(parse(sym["tensor_flops"], sym["symbols"]) - 2 * B * D * D) == 0


def test_pyproject_symbols_apply_to_the_globals_a_file_has(cli, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.solar]\nsymbols = ["batch_size", "dim", "seq_len"]\n')
    path = _write_kb(tmp_path, batch_size=16, dim=64)  # no seq_len here: not a symbol of it
    r = cli("analyze", path, "--json", "--no-verify", "--symbolic")
    assert r.code == 0, r.err
    sym = json.loads(r.out)["entries"][0]["symbolic"]
    assert sym["symbols"] == ["batch_size", "dim"] and sym["values"] == {"batch_size": 16, "dim": 64}


def test_an_unknown_global_is_an_error_naming_it(cli, tmp_path):
    path = _write_kb(tmp_path, batch_size=16, dim=64)
    r = cli("analyze", path, "--no-verify", "--symbol", "seq_len")
    assert r.code == 2
    assert "seq_len" in r.err and "no module global" in r.err


def test_a_global_that_is_not_an_int_is_an_error_naming_it(cli, tmp_path):
    path = _write_kb(tmp_path, batch_size=16, dim=64)
    with open(path, "a") as f:
        f.write("scale = 0.5\n")
    r = cli("analyze", path, "--no-verify", "--symbol", "scale")
    assert r.code == 2
    assert "scale" in r.err and "not an int" in r.err


def test_a_malformed_symbol_option_is_a_usage_error(cli, tmp_path):
    path = _write_kb(tmp_path, batch_size=16, dim=64)
    r = cli("analyze", path, "--no-verify", "--symbol", "batch_size=2B")
    assert r.code == 2 and "batch_size=2B" in r.err


def test_the_servers_symbols_setting_reaches_the_formulas(tmp_path):
    """In the editor: `[tool.solar] symbols` (settings `symbols`, with `symbolic` on) makes the
    worker vary those globals, so hovers and the "SOL at" lens show formulas in them."""
    import io

    from solar_lsp.lsp.settings import Settings, SettingsError, merge
    from solar_lsp.lsp.worker import Worker
    path = _write_kb(tmp_path, batch_size=16, dim=64)
    s = merge(Settings(), {"symbolic": True, "verify": False, "symbols": {"batch_size": "B", "seq": "S"}},
              "[tool.solar]")
    out = io.StringIO()
    Worker(out).handle({"kind": "analyze", "id": 1, "path": path, "config": s.analysis_config()})
    result = [json.loads(line) for line in out.getvalue().splitlines() if '"result"' in line][-1]
    sym = result["report"]["entries"][0]["symbolic"]
    assert sym["symbols"] == ["B"] and sym["values"] == {"B": 16}  # `seq`: not in this file
    B = sympy.Symbol("B", positive=True, integer=True)
    assert sympy.expand(parse(sym["tensor_flops"], sym["symbols"]) - 2 * B * 64 * 64) == 0
    with pytest.raises(SettingsError, match="symbols"):
        merge(Settings(), {"symbols": ["not an identifier"]}, "[tool.solar]")


def test_plot_sweeps_a_module_global(cli, tmp_path):
    """`solar plot --sweep B=8..512 --symbol batch_size=B` draws the times against the global."""
    path = _write_kb(tmp_path, batch_size=16, dim=64)
    out = tmp_path / "sweep.svg"
    p = cli("plot", path, "--sweep", "B=8..512", "--symbol", "batch_size=B", "-o", str(out))
    assert p.code == 0, p.err
    assert out.is_file() and "<svg" in out.read_text()[:2000]
    p = cli("plot", path, "--sweep", "B=8..512", "-o", str(out))  # the global not marked
    assert p.code == 1 and "--symbol batch_size=B" in p.err
