"""benchmarks/side_by_side.py without the peer: problem choice, failure lines, the ratios,
the timeout. No test here needs NVlabs/SOLAR or KernelBench (benchmarks/README.md)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import side_by_side as sbs  # noqa: E402


def _kb(tmp_path: Path, counts: dict[str, int]) -> Path:
    for level, n in counts.items():
        (tmp_path / level).mkdir()
        for i in range(1, n + 1):
            (tmp_path / level / f"{i}_P{i}.py").write_text("")
    (tmp_path / "level1" / "helper.txt").write_text("")
    return tmp_path


def test_every_kth_problem_by_number_not_by_name(tmp_path):
    kb = _kb(tmp_path, {"level1": 100, "level2": 100, "level3": 50})
    chosen = sbs.select_problems(kb, 10)
    names = [f"{p.parent.name}/{p.name}" for p in chosen]
    assert len(chosen) == 30
    # numeric order: 1, 11, 21 …, not the string order 1, 10, 100, 11 …
    assert names[:3] == ["level1/1_P1.py", "level1/11_P11.py", "level1/21_P21.py"]
    assert names[20:23] == ["level3/1_P1.py", "level3/6_P6.py", "level3/11_P11.py"]
    assert sbs.select_problems(kb, 10) == chosen  # deterministic


def test_the_line_that_says_what_failed():
    tb = ("Traceback (most recent call last):\n  File \"x.py\", line 3\n"
          "KeyError: 'aten::foo'\nRuntimeError: stage blew up\n")
    assert sbs.first_error_line(tb) == "RuntimeError: stage blew up"
    assert sbs.first_error_line("ok\n❌ Conversion failed.\nbye\n") == "❌ Conversion failed."
    r = sbs.Run(1.0, 10.0, 1, False, "", tb + "side_by_side: stage solar.cli.x exited 1\n")
    assert sbs.peer_outcome(r) == "exit 1: side_by_side: stage solar.cli.x exited 1"
    assert sbs.peer_outcome(sbs.Run(1.0, 10.0, 0, False, "", "")) is None


def test_our_failures_come_from_the_json():
    bad = sbs.Run(1.0, 1.0, 1, False,
                  '{"error": null, "entries": [{"name": "Model", "status": "error", '
                  '"error": "no lowering for aten.foo\\nmore"}]}', "")
    assert sbs.ours_outcome(bad) == "exit 1: no lowering for aten.foo"
    good = sbs.Run(1.0, 1.0, 0, False, '{"error": null, "entries": [{"status": "ok"}]}', "")
    assert sbs.ours_outcome(good) is None
    assert sbs.ours_outcome(sbs.Run(600.0, 1.0, -9, True, "", "")).startswith("timed out")


def _row(problem, ours, peer):
    def cell(x):
        return ({"ok": False, "error": "boom", "wall_s": 1.0, "rss_mib": 1.0} if x is None
                else {"ok": True, "error": None, "wall_s": x[0], "rss_mib": x[1]})
    return {"problem": problem, "ours": cell(ours), "peer": cell(peer)}


def test_ratios_only_over_problems_both_analyzed():
    rows = [_row("a", (10.0, 100.0), (20.0, 300.0)),
            _row("b", (4.0, 100.0), (2.0, 100.0)),
            _row("c", (5.0, 100.0), (50.0, 100.0)),
            _row("d", None, (1.0, 1.0))]
    s = sbs.summarize(rows, ["ours", "peer"])
    assert s["all_analyzed"] == 3
    ratio = s["ratios"]["peer/ours wall_s"]
    assert ratio == {"min": 0.5, "median": statistics.median([2.0, 0.5, 10.0]), "max": 10.0}
    assert s["tools"]["ours"]["wall_s"]["median"] == 5.0
    assert s["failures"] == {"ours": [("d", "boom")], "peer": []}
    text = sbs.render(s, "header")
    assert "peer/ours wall_s" in text and "2.00×" in text and "d: boom" in text


def test_a_run_past_its_timeout_is_killed():
    r = sbs.run_child([sys.executable, "-c", "import time; time.sleep(30)"], ROOT, {}, 1.0)
    assert r.timed_out and r.rc != 0 and r.wall_s < 10
