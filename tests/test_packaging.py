"""A normal (non-editable) install must carry every module: the VS Code extension installs
with plain `pip install`, and a package left out of the wheel only shows when the server
starts and dies."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    [whl] = out.glob("solar_lsp-*.whl")
    return whl


def test_wheel_holds_every_module_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {p.relative_to(ROOT).as_posix() for p in (ROOT / "solar_lsp").rglob("*.py")}
    want |= {f"solar_lsp/chips/{p.name}" for p in (ROOT / "hardware").glob("*.toml")}
    want |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "solar_lsp" / "llm" / "examples").glob("*")
             if p.suffix in (".py", ".ir")}
    assert not want - names, sorted(want - names)


def test_installed_wheel_starts_the_server_modules(wheel, tmp_path):
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                        str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    code = ("import solar_lsp, solar_lsp.lsp.server, solar_lsp.cli.main, solar_lsp.lsp.worker, solar_lsp.hardware.chips as h;"
            "print(solar_lsp.__file__); print(len(h.list_chips()))")
    env = dict(os.environ, PYTHONPATH=str(target))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    path, chips = r.stdout.split()
    assert path.startswith(str(target)), path  # the wheel's copy, not the editable checkout
    assert int(chips) >= 3
