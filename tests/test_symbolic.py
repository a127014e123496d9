"""Symbolic costs (pipeline/symbolic.py, symbolic_costs.py, sweep.py; docs/sol-model.md
"Symbolic costs"): FLOPs, bytes and times as exact formulas of a pragma's shape symbols, equal
to fresh concrete analyses at sizes the fit never traced."""

from __future__ import annotations

import math
import re

import pytest
import sympy
from hypothesis import example, given, settings
from hypothesis import strategies as st

from solar_lsp.hardware.chips import load_chip, load_chips
from solar_lsp.pipeline.analyze import analyze_file
from solar_lsp.pipeline.config import Config
from solar_lsp.pipeline.symbolic import MAX_ANALYSES, fit_counts, parse
from solar_lsp.pipeline.symbolic_costs import add_symbolic

MLP = '''import torch
import torch.nn.functional as F


# solar: B=4, S=512, D=1024, H=4096, x=f32[B,S,D], w1=f32[H,D], b1=f32[H], w2=f32[D,H], b2=f32[D]
def mlp(x, w1, b1, w2, b2):
    h = F.linear(x, w1, b1)
    h = F.gelu(h)
    return F.linear(h, w2, b2)
'''
MLP_INPUTS = "x=f32[{B},{S},{D}], w1=f32[{H},{D}], b1=f32[{H}], w2=f32[{D},{H}], b2=f32[{D}]"

CONV = '''import torch
import torch.nn.functional as F


# solar: S=32, x=f32[2,4,S,S], w=f32[8,4,3,3]
def conv(x, w):
    return F.conv2d(x, w, stride=2, padding=1)
'''

BF16_MLP = '''import torch
import torch.nn.functional as F


# solar: S=512, x=bf16[1,S,1024], w1=bf16[4096,1024], w2=bf16[1024,4096]
def mlp(x, w1, w2):
    return F.linear(F.gelu(F.linear(x, w1)), w2)
'''

SORT = '''import torch


# solar: S=64, x=f32[4,S]
def sort_rows(x):
    return torch.sort(x, dim=-1).values * 2
'''

QUANTITIES = ("tensor_flops", "vector_flops", "transcendentals", "bytes_unfused", "bytes_fused")


def _at(text: str, symbols: list[str], sizes: dict[str, int]):
    e = parse(text, symbols)
    return e.subs({s: sizes[s.name] for s in e.free_symbols})


# --- the fit itself, on functions whose formula is known ---------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.tuples(st.integers(0, 3), st.integers(0, 3)), st.integers(-50, 50), max_size=8))
# B's coefficient 12 - 4*A vanishes at A = 3, where B's degree is probed (found by a random run)
@example({(0, 1): 12, (1, 1): -4})
@example({(1, 1): 12, (2, 1): -7, (0, 1): 12})  # (A - 3)(A - 4) * B: vanishes at A = 3 and 4
def test_fit_recovers_any_polynomial_of_degree_3_per_symbol(coeffs):
    a, b = sympy.symbols("A B", positive=True, integer=True)
    want = sum((c * a**i * b**j for (i, j), c in coeffs.items()), sympy.Integer(0))
    fit = fit_counts(lambda s: {"n": int(want.subs({a: s["A"], b: s["B"]}))}, ["A", "B"])
    assert fit.analyses <= MAX_ANALYSES
    assert sympy.expand(parse(str(fit.exprs["n"]), ["A", "B"]) - want) == 0


def test_fit_keeps_rational_coefficients_exact():
    fit = fit_counts(lambda s: {"pairs": s["N"] * (s["N"] - 1) // 2}, ["N"])
    n = sympy.Symbol("N", positive=True, integer=True)
    assert sympy.expand(fit.exprs["pairs"] - (n**2 / 2 - n / 2)) == 0


def test_floor_of_a_stride_is_fitted_per_residue_class():
    def count(s):  # a stride-2 window of 3: floor((S - 3) / 2) + 1 outputs per row and column
        return {"out": s["B"] * ((s["S"] - 3) // 2 + 1) ** 2}
    fit = fit_counts(count, ["B", "S"])
    assert fit.axes["S"].period == 2 and fit.exprs["out"].has(sympy.Mod)
    for b in range(1, 6):
        for s in range(3, 40):
            assert _at(str(fit.exprs["out"]), ["B", "S"], {"B": b, "S": s}) == count({"B": b, "S": s})["out"]


def test_a_count_that_is_no_polynomial_gets_numbers_and_the_reason():
    fit = fit_counts(lambda s: {"exp": 2 ** s["S"], "lin": 3 * s["S"]}, ["S"])
    assert fit.exprs["exp"] is None and str(fit.exprs["lin"]) == "3*S"
    assert "not polynomial in S" in fit.why["exp"]
    assert "8, 16, 32, 64, 128" in fit.why["exp"]  # the counts at S=3..7


def test_over_budget_gives_no_formula_and_says_so():
    names = list("ABCDEF")
    fit = fit_counts(lambda s: {"n": math.prod(s.values())}, names, budget=20)
    assert fit.exprs == {} and fit.analyses <= 20
    assert any("budget is 20" in n for n in fit.notes)


def test_sizes_the_code_rejects_are_skipped_by_sampling_multiples():
    def count(s):
        if s["S"] % 8:
            raise ValueError("view needs a multiple of 8")
        return {"n": s["S"] ** 2 // 8}
    fit = fit_counts(count, ["S"])
    assert fit.axes["S"].step == 8 and any("multiples of 8" in n for n in fit.notes)
    assert all(_at(str(fit.exprs["n"]), ["S"], {"S": s}) == s * s // 8 for s in range(8, 400, 8))


# --- an MLP: formulas from re-analysis, against the hand formulas and fresh analyses ------------

@pytest.fixture(scope="module")
def chips():
    return load_chips(["h100-sxm"])


@pytest.fixture(scope="module")
def mlp(tmp_path_factory, chips):
    path = str(tmp_path_factory.mktemp("sym") / "mlp.py")
    with open(path, "w") as f:
        f.write(MLP)
    cfg = Config(verify=False)
    report = analyze_file(path, cfg, chips)
    add_symbolic(report, path, cfg, chips)
    return path, report.entries[0]


def test_mlp_formulas_are_the_hand_formulas(mlp):
    _, e = mlp
    sym = e.symbolic
    assert sym["symbols"] == ["B", "S", "D", "H"] and sym["values"] == {"B": 4, "S": 512, "D": 1024, "H": 4096}
    assert sym["fit"]["analyses"] <= MAX_ANALYSES and sym["not_fitted"] == []
    B, S, D, H = (sympy.Symbol(n, positive=True, integer=True) for n in "BSDH")
    f = {q: parse(sym[q], sym["symbols"]) for q in QUANTITIES}
    # two linears of B*S*D*H multiply-adds each, 2 FLOPs per multiply-add (the bias rides along)
    assert sympy.expand(f["tensor_flops"] - 2 * B * S * D * H * 2) == 0
    assert sympy.expand(f["transcendentals"] - B * S * H) == 0  # one erf per element of h
    # fp32: unfused, each op reads its inputs and writes its output; fused, x, weights, biases
    # and the output once
    unfused = 4 * ((B * S * D + H * D + H + B * S * H) + 2 * B * S * H + (B * S * H + D * H + D + B * S * D))
    fused = 4 * (B * S * D + H * D + H + D * H + D + B * S * D)
    assert sympy.expand(f["bytes_unfused"] - unfused) == 0
    assert sympy.expand(f["bytes_fused"] - fused) == 0
    first = next(ln for ln in e.lines if ln.ops[0].target == "aten.linear.default")
    assert sympy.expand(parse(first.symbolic["tensor_flops"], sym["symbols"]) - 2 * B * S * D * H) == 0
    assert e.to_json()["symbolic"] == sym and e.to_json()["lines"][0]["symbolic"] == e.lines[0].symbolic


@settings(max_examples=6, deadline=None)
@given(st.fixed_dictionaries({n: st.integers(1, 12) for n in "BSDH"}))
@example({"B": 1, "S": 11, "D": 2, "H": 9})  # none of these was traced (the grid is 3 and 4)
def test_mlp_formulas_equal_a_fresh_analysis_at_any_size(mlp, chips, sizes):
    path, e = mlp
    sym = e.symbolic
    traced = {n: set(v) for n, v in sym["fit"]["grid"].items()}
    cfg = Config(verify=False, entries={"mlp": MLP_INPUTS.format(**sizes)})  # a pragma of numbers
    [got] = analyze_file(path, cfg, chips).entries
    assert got.status == "ok", got.error
    for q in QUANTITIES:
        assert _at(sym[q], sym["symbols"], sizes) == got.totals[q], (q, sizes, traced)
    for ln, fresh in zip(e.lines, got.lines):
        assert ln.line == fresh.line
        assert _at(ln.symbolic["tensor_flops"], sym["symbols"], sizes) == sum(o.tensor_flops for o in fresh.ops)
        assert _at(ln.symbolic["vector_flops"], sym["symbols"], sizes) == sum(o.vector_flops for o in fresh.ops)
        assert _at(ln.symbolic["bytes_unfused"], sym["symbols"], sizes) == fresh.bytes
        assert math.isclose(float(_at(ln.symbolic["t_unfused_s"], sym["symbols"], sizes)), fresh.t_unfused_s,
                            rel_tol=1e-9)
    for t in ("t_unfused_s", "t_fused_s"):
        assert math.isclose(float(_at(sym[t], sym["symbols"], sizes)), got.totals[t], rel_tol=1e-9)


def _write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_strided_conv_is_a_formula_per_residue_class_of_S(tmp_path, chips):
    path = _write(tmp_path, "conv.py", CONV)
    cfg = Config(verify=False)
    report = analyze_file(path, cfg, chips)
    add_symbolic(report, path, cfg, chips)
    sym = report.entries[0].symbolic
    assert sym["fit"]["periods"]["S"] == 2 and "Mod(S, 2)" in sym["tensor_flops"]
    for s in range(3, 41):  # hand formula: floor((S + 2*1 - 3) / 2) + 1 outputs per side
        out = (s + 2 - 3) // 2 + 1
        assert _at(sym["tensor_flops"], ["S"], {"S": s}) == 2 * 2 * 8 * out * out * 4 * 3 * 3
    for s in (17, 20):  # an odd and an even size, neither traced
        [got] = analyze_file(path, Config(verify=False, entries={"conv": f"x=f32[2,4,{s},{s}], w=f32[8,4,3,3]"}),
                             chips).entries
        for q in QUANTITIES:
            assert _at(sym[q], ["S"], {"S": s}) == got.totals[q], (q, s)


def test_sort_comparisons_are_reported_as_not_polynomial(tmp_path, chips):
    path = _write(tmp_path, "sort.py", SORT)
    cfg = Config(verify=False)
    report = analyze_file(path, cfg, chips)
    add_symbolic(report, path, cfg, chips)
    sym = report.entries[0].symbolic
    # ceil(log2(S!)) comparisons per row: no polynomial, so no formula, and the counts instead
    assert sym["vector_flops"] is None and sym["t_fused_s"] is None
    [why] = [n["why"] for n in sym["not_fitted"] if n["line"] is None and n["quantity"] == "vector_flops"]
    assert why.startswith("not polynomial in S")
    assert sympy.expand(parse(sym["bytes_fused"], ["S"]) - 2 * 4 * 4 * sympy.Symbol("S", positive=True, integer=True)) == 0


def test_an_entry_without_symbols_gets_its_counts(chips):
    from conftest import EXAMPLES
    path = str(EXAMPLES / "mlp.py")
    cfg = Config(verify=False)
    report = analyze_file(path, cfg, chips)
    add_symbolic(report, path, cfg, chips)
    e = report.entries[0]
    assert e.symbolic["symbols"] == [] and e.symbolic["fit"]["analyses"] == 1
    assert all(int(e.symbolic[q]) == e.totals[q] for q in QUANTITIES)
    assert any("get_inputs" in n for n in e.symbolic["notes"])


# --- the command line ----------------------------------------------------------------------------

def test_cli_symbolic_rows_parse_with_sympy(cli, tmp_path):
    path = _write(tmp_path, "mlp16.py", BF16_MLP)
    r = cli("analyze", path, "--symbolic", "--no-verify")
    assert r.code == 0, r.err
    rows = re.findall(r"^\s+(total|line \d+)\s+(\w+)(?: \([\w-]+\))?\s+= (.+)$", r.out, re.M)
    by_where: dict[str, set[str]] = {}
    for w, q, _ in rows:
        by_where.setdefault(w, set()).add(q)
    assert by_where.pop("total") == {*QUANTITIES, "t_unfused_s", "t_fused_s"}
    assert by_where and all(qs == set(QUANTITIES) for qs in by_where.values())  # every line
    exprs = {(w, q): parse(f, ["S"]) for w, q, f in rows}
    s = sympy.Symbol("S", positive=True, integer=True)
    assert sympy.expand(exprs[("total", "tensor_flops")] - 2 * 2 * s * 1024 * 4096) == 0
    assert all(e.free_symbols <= {s} for e in exprs.values())


def test_plot_sweep_marks_the_compute_memory_crossover(cli, tmp_path):
    path = _write(tmp_path, "mlp16.py", BF16_MLP)
    out = tmp_path / "sweep.svg"
    r = cli("plot", path, "--sweep", "S=128..8192", "-o", str(out))
    assert r.code == 0, r.err
    svg = out.read_text()
    [x] = [int(v) for v in re.findall(r'id="crossover mlp S=(\d+)"', svg)]
    assert "compute/memory crossover S=" in svg and "sweep mlp cache-aware" in svg
    # by hand: fused compute 2*2*S*1024*4096 / bf16 matrix peak against bytes / bandwidth of
    # x, w1, w2 and the output once (bf16); the gelu's vector work is on another unit and far
    # smaller. The crossover is the first S where compute reaches memory.
    chip = load_chip("h100-sxm")
    peak, beta = chip.peak("matrix", "bf16"), chip.dram_bytes_per_s

    def compute_bound(s: int) -> bool:
        return 4 * s * 1024 * 4096 / peak >= 2 * (2 * s * 1024 + 2 * 1024 * 4096) / beta
    assert compute_bound(x) and not compute_bound(x - 1)
    assert f"turns compute-bound at S={x}" in r.out


def test_plot_sweep_needs_a_symbol_the_pragma_has(cli, tmp_path):
    path = _write(tmp_path, "mlp16.py", BF16_MLP)
    assert cli("plot", path, "--sweep", "S=100", "-o", str(tmp_path / "a.svg")).code == 2
    r = cli("plot", path, "--sweep", "Q=1..10", "-o", str(tmp_path / "a.svg"))
    assert r.code == 1 and "shape symbol Q" in r.err
