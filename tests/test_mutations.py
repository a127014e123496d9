"""Planted bugs verification must catch (benchmarks/mutations.py): one mutant per class —
index, bound, axis, scale, tolerance, count-only, identity parameter, coverage — planted by
monkeypatching a lowering or the counter, each caught at run time by the values or the
counts of ``analyze_file(..., Config(verify=True))``. The whole suite: benchmarks/README.md."""

from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import mutations  # noqa: E402
from mutants import CLASSES, MUTANTS  # noqa: E402


def test_one_mutant_per_class_is_caught_at_run_time():
    fast = [m for m in MUTANTS if m.fast]
    assert sorted(m.cls for m in fast) == sorted(CLASSES)  # one per class
    res = mutations.run(fast, log=lambda s: None)
    mutations.print_summary(res)  # the score, shown with -s
    for name, ref in res["references"].items():
        assert ref["ok"], (name, ref)  # each model verifies, values and counts, unmutated
    for r in res["rows"]:
        assert r["planted"], r["name"]
        assert r["runtime"], r  # values or counts, not only the offline reference
    by = {r["name"]: set(r["caught_by"]) for r in res["rows"]}
    assert "counts" in by["combine-uncounted"]  # a count-only bug: its values are right
    assert "values" not in by["combine-uncounted"]


def test_suite_has_every_class_and_thirty_mutants():
    assert len(MUTANTS) >= 30
    assert {m.cls for m in MUTANTS} == set(CLASSES)
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)


def test_softmax_without_max_is_caught_at_inputs_scaled_by_100(monkeypatch):
    """The second pass (inputs x1e-3, x1e2, compared with the framework) catches the overflow
    of a softmax without its max subtraction on its own, also inside attention (three inputs,
    where the single-input overflow probe does not apply) and in JAX (its exp taken before
    the max is subtracted, two inputs): with that probe switched off."""
    from solar_lsp.verify import op_check

    monkeypatch.setattr(op_check, "_overflow", lambda *a, **k: None)
    names = {"softmax-no-max", "sdpa-no-max", "jax-softmax-no-max"}
    cases = [m for m in MUTANTS if m.name in names]
    assert {m.name for m in cases} == names  # in the suite, not only here
    res = mutations.run(cases, log=lambda s: None)
    for name, ref in res["references"].items():
        assert ref["ok"], (name, ref)
        assert "scaled inputs: verified at x0.001, x100" in ref["detail"], ref
    for r in res["rows"]:
        assert r["planted"], r["name"]
        assert "values" in r["caught_by"], r
        assert r["detail"].startswith("at inputs x100: "), r
