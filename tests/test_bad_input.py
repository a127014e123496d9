"""Bad input never ends in a bare traceback: each failure is one clear message on the entry
it belongs to (table and JSON), with the right exit code."""

from __future__ import annotations

import json
import time

import pytest
from conftest import line_of, run_solar, write

from solar_lsp.hardware.chips import list_chips

SYNTAX = """
    import torch


    def f(x:
        return x
    """

IMPORT_FAILS = """
    import torch
    import torch.nn as nn

    raise RuntimeError("boom at import")


    class Model(nn.Module):
        def forward(self, x):
            return x * 2


    def get_inputs():
        return [torch.randn(4)]
    """

INIT_FAILS = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            raise ValueError("bad init value")

        def forward(self, x):
            return x * 2


    def get_inputs():
        return [torch.randn(4)]
    """

FORWARD_FAILS = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x):
            y = x * 2
            raise KeyError("missing thing in forward")
            return y


    def get_inputs():
        return [torch.randn(4)]
    """

DATA_DEPENDENT = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x - 1


    def get_inputs():
        return [torch.randn(4, 8)]
    """

UNSUPPORTED = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)

        def forward(self, x):
            y = self.lin(x)
            z = torch.linalg.svd(y)[0]
            return z + 1


    def get_inputs():
        return [torch.randn(4, 16, 16)]
    """

HUGE = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(65536 * 4, 1024)

        def forward(self, x):
            return self.lin(x)


    def get_inputs():
        return [torch.randn(65536, 65536 * 4)]
    """


def no_traceback(*texts: str) -> None:
    for t in texts:
        assert "Traceback" not in t, t


def failed_entry(cli, path: str) -> dict:
    """Analyze in both forms; the entry must fail with exit 1 and its message in each."""
    table = cli("analyze", path, "--no-verify")
    assert table.code == 1, table.out + table.err
    no_traceback(table.out, table.err)
    r = cli("analyze", path, "--json", "--no-verify")
    assert r.code == 1, r.err
    no_traceback(r.out, r.err)
    doc = r.json()
    assert doc["error"] is None
    [e] = doc["entries"]
    assert e["status"] == "error"
    assert e["error"]
    assert " ".join(e["error"].split()) in " ".join(table.out.split())  # same message in the table
    assert f"error at line {e['error_line']}" in table.out
    assert e["totals"] == {} and e["lines"] == []
    assert e["verification"]["status"] == "unverified"
    return e


def test_syntax_error(tmp_path):
    path = write(tmp_path, "syntax.py", SYNTAX)
    p = run_solar("analyze", path)
    assert p.returncode == 2
    no_traceback(p.stdout, p.stderr)
    assert "syntax error" in p.stderr and "line 4" in p.stderr
    assert "syntax.py" in p.stderr  # the message names the file
    p = run_solar("analyze", path, "--json")
    assert p.returncode == 2
    no_traceback(p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    assert "line 4" in doc["error"] and doc["entries"] == []


def test_failing_import(cli, tmp_path):
    path = write(tmp_path, "imp.py", IMPORT_FAILS)
    e = failed_entry(cli, path)
    assert "RuntimeError" in e["error"] and "boom at import" in e["error"]
    assert "import" in e["error"]
    assert e["error_line"] == line_of(path, "raise RuntimeError")


def test_init_raises(cli, tmp_path):
    path = write(tmp_path, "init.py", INIT_FAILS)
    e = failed_entry(cli, path)
    assert "ValueError" in e["error"] and "bad init value" in e["error"]
    assert e["error_line"] == line_of(path, "raise ValueError")


def test_forward_raises(cli, tmp_path):
    path = write(tmp_path, "fwd.py", FORWARD_FAILS)
    e = failed_entry(cli, path)
    assert "KeyError" in e["error"] and "missing thing in forward" in e["error"]
    assert e["error_line"] == line_of(path, "raise KeyError")  # inside forward


def test_data_dependent_control_flow(tmp_path):
    path = write(tmp_path, "ddcf.py", DATA_DEPENDENT)
    p = run_solar("analyze", path, "--json", "--no-verify")
    assert p.returncode == 1, p.stderr
    no_traceback(p.stdout, p.stderr)
    [e] = json.loads(p.stdout)["entries"]
    assert e["status"] == "error"
    assert "trace" in e["error"].lower()
    assert "control flow" in e["error"]
    assert e["error_line"] == line_of(path, "if x.sum() > 0:")
    p = run_solar("analyze", path, "--no-verify")
    assert p.returncode == 1
    no_traceback(p.stdout, p.stderr)
    assert "error at line" in p.stdout and "trace" in p.stdout


def test_op_without_lowering(cli, tmp_path):
    path = write(tmp_path, "unsup.py", UNSUPPORTED)
    r = cli("analyze", path, "--json")
    assert r.code == 0, r.err
    no_traceback(r.out, r.err)
    [e] = r.json()["entries"]
    assert e["status"] == "ok"
    [u] = e["unsupported"]
    assert "svd" in u["op"]
    assert u["line"] == line_of(path, "torch.linalg.svd")
    assert u["reason"]
    # the rest is still analyzed: the linear and the add have their lines
    lines = {ln["line"]: ln for ln in e["lines"]}
    lin = line_of(path, "y = self.lin(x)")
    assert lines[lin]["flops"] == 2 * 4 * 16 * 16 * 16
    assert line_of(path, "return z + 1") in lines
    assert e["verification"]["status"] == "unverified"
    assert "lowering" in e["verification"]["detail"]
    table = cli("analyze", path, "--no-verify")
    assert table.code == 0
    assert "unsupported" in table.out and "svd" in table.out


def test_too_large_to_allocate(cli, tmp_path):
    """Bounds come from meta tensors; the golden run is skipped, never attempted."""
    path = write(tmp_path, "huge.py", HUGE)
    m, k, n = 65536, 65536 * 4, 1024
    t0 = time.perf_counter()
    r = cli("analyze", path, "--json")
    elapsed = time.perf_counter() - t0
    assert r.code == 0, r.err
    assert elapsed < 60
    [e] = r.json()["entries"]
    assert e["status"] == "ok"
    assert e["totals"]["macs"] == m * k * n
    assert e["totals"]["bytes_fused"] == (m * k + n * k + n + m * n) * 4
    v = e["verification"]
    assert v["status"] == "unverified"
    assert "budget" in v["detail"] and "GB" in v["detail"]


def test_unknown_hw(cli):
    for extra in ((), ("--json",)):
        r = cli("analyze", "examples/mlp.py", "--hw", "tpu-v9", *extra)
        assert r.code == 2
        no_traceback(r.out, r.err)
        err = " ".join(r.err.split())
        assert "tpu-v9" in err
        for name in list_chips():
            assert name in err


def test_missing_chip_file(cli, tmp_path):
    r = cli("analyze", "examples/mlp.py", "--hw", str(tmp_path / "none.toml"))
    assert r.code == 2
    assert "not found" in " ".join(r.err.split())


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_missing_file(cli, tmp_path, json_flag):
    missing = str(tmp_path / "nope.py")
    r = cli("analyze", missing, *json_flag)
    assert r.code == 2
    no_traceback(r.out, r.err)
    assert "nope.py" in "".join(r.err.split())


def test_missing_file_subprocess(tmp_path):
    p = run_solar("analyze", str(tmp_path / "nope.py"))
    assert p.returncode == 2
    no_traceback(p.stdout, p.stderr)
    assert "cannot read" in p.stderr


PRAGMA_FN = """
    import torch


    # solar: x=f32[8,16]
    def f(x):
        return x * 2
    """


@pytest.mark.parametrize("command", ["analyze", "compare", "ir", "graph"])
def test_file_that_is_not_utf8_is_a_usage_error(cli, tmp_path, command):
    path = tmp_path / "latin.py"
    path.write_bytes(b"import torch\n# caf\xe9\n" + b"x = 1\n")
    r = cli(command, str(path))
    assert r.code == 2
    no_traceback(r.out, r.err)
    err = " ".join(r.err.split())
    assert "not valid utf-8 at line 2" in err and "coding" in err


def test_binary_file_is_a_usage_error(cli, tmp_path):
    path = tmp_path / "blob.py"
    path.write_bytes(b"\x7fELF\x02\x01\x00\x00\xff\xfe")
    r = cli("analyze", str(path), "--json")
    assert r.code == 2
    no_traceback(r.out, r.err)
    assert "binary file" in " ".join(r.err.split())
    assert "binary file" in r.json()["error"]


def test_declared_encoding_is_honored(cli, tmp_path):
    """PEP 263: a latin-1 file that says so is analyzed like any other."""
    src = "# -*- coding: latin-1 -*-\n# café\n" + PRAGMA_FN.replace("\n    ", "\n")
    path = tmp_path / "declared.py"
    path.write_bytes(src.encode("latin-1"))
    r = cli("analyze", str(path), "--json", "--no-verify")
    assert r.code == 0, r.err
    [e] = r.json()["entries"]
    assert e["name"] == "f" and e["totals"]["flops"] == 8 * 16


@pytest.mark.parametrize("source", ["", "import torch\n\nX = 1\n"])
def test_no_entry_points_says_so(cli, tmp_path, source):
    path = tmp_path / "plain.py"
    path.write_text(source)
    r = cli("analyze", str(path))
    assert r.code == 1
    err = " ".join(r.err.split())
    assert "no entry points found" in err and "# solar:" in err and "get_inputs" in err


def test_directory_points_to_coverage(cli, tmp_path):
    r = cli("analyze", str(tmp_path))
    assert r.code == 2
    err = " ".join(r.err.split())
    assert "is a directory" in err and "solar coverage" in err


def test_endless_loop_at_import_times_out(tmp_path):
    path = write(tmp_path, "spin.py", """
        import torch
        while True:
            pass


        # solar: x=f32[4]
        def f(x):
            return x
        """)
    t0 = time.perf_counter()
    p = run_solar("analyze", path, "--timeout", "3")
    assert time.perf_counter() - t0 < 60
    assert p.returncode == 1
    no_traceback(p.stdout, p.stderr)
    assert "did not finish in 3 s" in " ".join(p.stderr.split())


def test_unlowered_op_leaves_totals_marked_incomplete_and_consistent(cli, tmp_path):
    path = write(tmp_path, "fft.py", """
        import torch


        # solar: x=f32[64,256]
        def f(x):
            return torch.fft.fft(x).real
        """)
    r = cli("analyze", path, "--json", "--no-verify", "--hw", "h100-sxm,b200")
    [e] = r.json()["entries"]
    assert e["unsupported"]
    t = e["totals"]
    assert "not counted" in t["incomplete"]
    assert t["t_unfused_s"] >= t["t_fused_s"] > 0
    assert t["bytes_unfused"] >= t["bytes_fused"] > 0
    for h in e["by_hardware"].values():
        assert h["t_unfused_s"] >= h["t_fused_s"]
    table = cli("analyze", path, "--no-verify")
    assert "incomplete" in table.out


def test_dim_overridden_by_the_pragma_is_reported(cli, tmp_path):
    path = write(tmp_path, "dims.py", """
        import torch


        # solar: B=4, x=f32[B,16]
        def f(x):
            return x * 2


        # solar: y=f32[B,16]
        def g(y):
            return y * 2
        """)
    r = cli("analyze", path, "--json", "--no-verify", "--dim", "B=1")
    f, g = r.json()["entries"]
    assert f["inputs"][0]["shape"] == [4, 16]  # the pragma's own B
    assert any(n["kind"] == "dim" and "--dim B=1 is ignored" in n["note"] for n in f["notes"])
    assert g["inputs"][0]["shape"] == [1, 16] and not g["notes"]  # --dim applies where undefined
    table = cli("analyze", path, "--no-verify", "--dim", "B=1")
    assert "--dim B=1 is ignored" in " ".join(table.out.split())


def test_chip_file_with_a_bundled_name_is_used_everywhere_with_a_warning(cli, tmp_path):
    from solar_lsp.hardware.chips import hardware_dir
    text = (hardware_dir() / "h100-sxm.toml").read_text()
    slow = tmp_path / "my-h100.toml"
    slow.write_text(text.replace("dram_bytes_per_s = 3.35e12", "dram_bytes_per_s = 1.0e12"))
    assert "1.0e12" in slow.read_text()
    a = cli("analyze", "examples/mlp.py", "--hw", str(slow), "--json", "--no-verify")
    c = cli("compare", "examples/mlp.py", "--hw", str(slow), "--json")
    b = cli("analyze", "examples/mlp.py", "--json", "--no-verify")
    for r in (a, c):
        assert "the name of a bundled chip" in " ".join(r.err.split())
    assert "bundled chip" not in b.err
    mine = a.json()["entries"][0]["by_hardware"]["h100-sxm"]["t_unfused_s"]
    bundled = b.json()["entries"][0]["by_hardware"]["h100-sxm"]["t_unfused_s"]
    assert mine > bundled  # a third of the bandwidth: the file's figures were used
    [row] = c.json()["entries"][0]["chips"]
    assert abs(row["t_unfused_s"] - mine) < 1e-12


@pytest.mark.serial
def test_headroom_stderr_has_no_profiler_chatter(tmp_path):
    p = run_solar("headroom", "examples/mlp.py", "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    assert "USDT" not in p.stderr and "profiler_start" not in p.stderr, p.stderr
    json.loads(p.stdout)  # stdout is still one clean JSON document
