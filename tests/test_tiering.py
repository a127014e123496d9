"""Tiered kernel execution (ir/execute.py): a fresh process interprets small kernels without
importing numba, hands over to numba once the interpreted work would pass INTERPRET_WORK, and
both tiers give the same values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

from solar_lsp.ir import execute as ex
from solar_lsp.ir.core import Affine, Kernel, Load, call

V = Affine.var
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from solar_lsp.ir import execute as ex
    from solar_lsp.ir.core import Affine, Kernel, Load, call
    V = Affine.var

    def mm(n):
        return Kernel("mm", (("i", n), ("j", n), ("k", n)), Load("C", (V("i"), V("j"))), "+=",
                      call("mul", call("tanh", Load("A", (V("i"), V("k")))), Load("B", (V("k"), V("j")))))

    rng = np.random.default_rng(0)
    seen = []
    for n in [int(a) for a in sys.argv[1:]]:
        a = {"A": rng.standard_normal((n, n)), "B": rng.standard_normal((n, n)), "C": np.zeros((n, n))}
        ex.run_kernel(mm(n), a)
        ok = np.allclose(a["C"], np.tanh(a["A"]) @ a["B"], rtol=1e-12, atol=1e-12)
        seen.append({"n": n, "ok": bool(ok), "numba": "numba" in sys.modules})
    print(json.dumps(seen))
    """
)


def _run(*sizes: int, tmp_path, **env) -> list[dict]:
    e = {k: v for k, v in os.environ.items() if k != "SOLAR_EXECUTOR"}  # the default tiers
    e.update(SOLAR_CACHE_DIR=str(tmp_path), **env)
    out = subprocess.run([sys.executable, "-c", SCRIPT, *map(str, sizes)], env=e, cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_small_kernels_run_without_numba_then_numba_takes_over(tmp_path):
    # 8^3 and 20^3 iterations stay under INTERPRET_WORK (2e5); 80^3 = 512,000 goes past it
    seen = _run(8, 20, 80, 8, tmp_path=tmp_path)
    assert all(s["ok"] for s in seen), seen
    assert [s["numba"] for s in seen] == [False, False, True, True], seen


def test_numba_executor_setting_skips_the_interpreted_tier(tmp_path):
    seen = _run(8, tmp_path=tmp_path, SOLAR_EXECUTOR="numba")
    assert seen == [{"n": 8, "ok": True, "numba": True}]


def test_tiers_agree_on_sampled_points(monkeypatch):
    """The same sampled check interpreted and compiled: equal values, magnitudes, error bounds."""
    rng = np.random.default_rng(1)
    k = Kernel("mm", (("i", 6), ("j", 5), ("k", 7)), Load("C", (V("i"), V("j"))), "+=",
               call("mul", call("exp", Load("A", (V("i"), V("k")))), Load("B", (V("k"), V("j")))))
    arrays = {"A": rng.standard_normal((6, 7)), "B": rng.standard_normal((7, 5)), "C": np.zeros((6, 5))}
    pts = ex.random_points(k, 12, rng)
    results = []
    for executor, interp in (("numba", False), ("numba", True)):
        monkeypatch.setattr(ex, "EXECUTOR", executor)
        monkeypatch.setattr(ex, "FORCE_INTERPRETER", interp)
        results.append(ex.sample_kernel_err(k, arrays, {}, pts, 2.0**-24))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    ref = (np.exp(arrays["A"]) @ arrays["B"])[pts[:, 0], pts[:, 1]]
    np.testing.assert_allclose(results[0][0], ref, rtol=1e-12)


def test_warm_up_makes_numba_live(monkeypatch):
    monkeypatch.setattr(ex, "EXECUTOR", "tiered")
    monkeypatch.setitem(ex._tier, "numba_live", False)
    monkeypatch.setitem(ex._tier, "interpreted", 0.0)
    assert ex._interpret(10.0)
    ex.warm_up()
    assert not ex._interpret(10.0)
