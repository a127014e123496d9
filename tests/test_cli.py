"""The ``solar`` command line (solar_lsp.cli.main): the JSON document, inverse roofline, several
chips, user chip files, ``solar hw``, and exit codes."""

from __future__ import annotations

import json
import math

import pytest
from conftest import EXAMPLES, line_of, model_path, run_solar

from solar_lsp.hardware.chips import list_chips, load_chip

MLP = str(EXAMPLES / "mlp.py")

TOTALS = {"macs", "flops", "tensor_flops", "vector_flops", "transcendentals", "bytes_unfused",
          "bytes_fused", "bytes_cache_aware", "t_unfused_s", "t_fused_s", "t_cache_aware_s", "bound"}
ENTRY = {"name", "line", "status", "error", "frontend", "verification", "totals", "lines",
         "unsupported", "by_hardware", "inverse", "fusion", "reorder"}
LINE = {"line", "flops", "bytes", "t_unfused_s", "ops"}
OP = {"op", "einsum", "shapes", "dtype", "macs", "flops", "bytes", "t_s", "bound"}


def test_json_document_schema(cli):
    r = cli("analyze", MLP, "--json", "--no-verify")
    assert r.code == 0, r.err
    doc = r.json()
    assert {"tool", "file", "hardware", "entries"} <= doc.keys()
    assert doc["tool"]["name"] == "solar-lsp" and isinstance(doc["tool"]["version"], str)
    assert doc["file"] == MLP
    assert doc["hardware"] == ["h100-sxm"]
    [e] = doc["entries"]
    assert ENTRY <= e.keys()
    assert e["name"] == "Model" and e["status"] == "ok" and e["error"] is None
    assert e["frontend"] == "torch"
    assert e["line"] == line_of(MLP, "class Model(nn.Module)")
    assert {"status", "detail"} <= e["verification"].keys()
    assert e["verification"]["status"] == "unverified"
    assert "no-verify" in e["verification"]["detail"]
    assert TOTALS <= e["totals"].keys()
    assert e["totals"]["bound"] in ("compute", "memory")
    assert e["lines"]
    for ln in e["lines"]:
        assert LINE <= ln.keys()
        assert isinstance(ln["line"], int) and ln["line"] >= 1
        assert ln["ops"]
        for op in ln["ops"]:
            assert OP <= op.keys()
            assert op["bound"] in ("compute", "memory")
            assert op["op"].startswith("aten.")
        assert ln["flops"] == sum(op["flops"] for op in ln["ops"])
        assert ln["bytes"] == sum(op["bytes"] for op in ln["ops"])
        assert math.isclose(ln["t_unfused_s"], sum(op["t_s"] for op in ln["ops"]), rel_tol=1e-12)
    assert sum(ln["bytes"] for ln in e["lines"]) == e["totals"]["bytes_unfused"]
    assert math.isclose(sum(ln["t_unfused_s"] for ln in e["lines"]), e["totals"]["t_unfused_s"],
                        rel_tol=1e-12)
    assert e["unsupported"] == []
    assert set(e["by_hardware"]) == {"h100-sxm"}
    assert e["inverse"] is None
    assert isinstance(e["fusion"], list) and isinstance(e["reorder"], list)


def test_json_lines_point_at_source(cli):
    doc = cli("analyze", MLP, "--json", "--no-verify").json()
    lines = {ln["line"]: {op["op"] for op in ln["ops"]} for ln in doc["entries"][0]["lines"]}
    gelu = line_of(MLP, "h = F.gelu(h)")
    assert lines[gelu] == {"aten.gelu.default"}
    up = line_of(MLP, "h = self.up(self.norm(x))")
    assert lines[up] == {"aten.layer_norm.default", "aten.linear.default"}
    ret = line_of(MLP, "return x + self.down(h)")
    assert lines[ret] == {"aten.linear.default", "aten.add.Tensor"}
    assert set(lines) == {up, gelu, ret}


def test_target_latency_inverse(cli):
    """Golden fp32 matmul: the only work is 2MNK FLOPs on the vector fp32 units."""
    m, k, n = 256, 512, 128
    flops = 2 * m * k * n
    nbytes = (m * k + k * n + m * n) * 4
    r = cli("analyze", model_path("matmul_f32.py"), "--json", "--no-verify", "--target-latency", "2ms")
    assert r.code == 0, r.err
    inv = r.json()["entries"][0]["inverse"]
    assert inv["target_s"] == 0.002
    fids = inv["by_fidelity"]
    assert {"unfused", "fused", "cache_aware"} <= fids.keys()
    for fid in ("unfused", "fused"):
        d = fids[fid]
        assert math.isclose(d["flops_per_s"], flops / 0.002, rel_tol=1e-12)
        assert math.isclose(d["bytes_per_s"], nbytes / 0.002, rel_tol=1e-12)
        assert set(list_chips()) <= set(d["shortfall"])
        for name in list_chips():
            chip = load_chip(name)
            s = d["shortfall"][name]
            assert math.isclose(s["compute"], flops / chip.peak("vector", "fp32") / 0.002, rel_tol=1e-9)
            assert math.isclose(s["bandwidth"], nbytes / chip.dram_bytes_per_s / 0.002, rel_tol=1e-9)


def test_target_hz_is_a_latency(cli):
    doc = cli("analyze", model_path("matmul_f32.py"), "--json", "--no-verify", "--target-hz", "500").json()
    assert doc["entries"][0]["inverse"]["target_s"] == pytest.approx(0.002, rel=1e-12)


def test_several_chips(cli):
    r = cli("analyze", MLP, "--json", "--no-verify", "--hw", "h100-sxm,b200")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["hardware"] == ["h100-sxm", "b200"]
    e = doc["entries"][0]
    bh = e["by_hardware"]
    assert set(bh) == {"h100-sxm", "b200"}
    for key in ("t_unfused_s", "t_fused_s"):
        assert bh["b200"][key] < bh["h100-sxm"][key]
        assert bh["h100-sxm"][key] == e["totals"][key]  # totals are for the first chip
    # repeating --hw is the same as a comma list
    doc2 = cli("analyze", MLP, "--json", "--no-verify", "--hw", "h100-sxm", "--hw", "b200").json()
    assert doc2["entries"][0]["by_hardware"] == bh


def test_user_chip_file(cli, tmp_path):
    src = load_chip("h100-sxm").path
    text = open(src).read()
    assert 'name = "h100-sxm"' in text and "dram_bytes_per_s = 3.35e12" in text
    text = text.replace('name = "h100-sxm"', 'name = "my-h100"').replace(
        "dram_bytes_per_s = 3.35e12", "dram_bytes_per_s = 6.7e12")
    user = tmp_path / "user.toml"
    user.write_text(text)
    bf16 = model_path("matmul_bf16.py")  # memory-bound: the time halves with the bandwidth
    r = cli("analyze", bf16, "--json", "--no-verify", "--hw", str(user), "--hw", "h100-sxm")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["hardware"] == ["my-h100", "h100-sxm"]
    bh = doc["entries"][0]["by_hardware"]
    assert bh["h100-sxm"]["bound"] == "memory"
    assert math.isclose(bh["my-h100"]["t_fused_s"] * 2, bh["h100-sxm"]["t_fused_s"], rel_tol=1e-12)
    assert doc["entries"][0]["totals"]["hardware"] == "my-h100"


def test_entry_option(cli):
    path = str(EXAMPLES / "pragma_functions.py")
    doc = cli("analyze", path, "--json", "--no-verify", "--entry", "projection").json()
    assert [e["name"] for e in doc["entries"]] == ["projection"]
    r = cli("analyze", path, "--json", "--no-verify", "--entry", "nope")
    assert r.code == 2
    assert "nope" in r.err


def test_table_output(cli):
    r = cli("analyze", model_path("mlp_relu.py"), "--no-verify", "--hw", "h100-sxm,b200",
            "--target-latency", "2ms")
    assert r.code == 0, r.err
    assert "linear" in r.out and "relu" in r.out
    assert "fused" in r.out and "b200" in r.out and "needs" in r.out
    assert "verification" in r.out


def test_hw_list(cli):
    r = cli("hw", "list")
    assert r.code == 0
    names = list_chips()
    assert len(names) == 12
    for name in names:
        assert name in r.out


def test_hw_show_json(cli):
    r = cli("hw", "show", "h100-sxm", "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    chip = load_chip("h100-sxm")
    assert d["name"] == "h100-sxm"
    assert d["dram_bytes_per_s"] == chip.dram_bytes_per_s
    assert d["matrix"]["bf16"] == chip.peak("matrix", "bf16")
    assert d["vector"]["fp32"] == chip.peak("vector", "fp32")
    assert d["sources"]


def test_hw_show_unknown(cli):
    r = cli("hw", "show", "no-such-chip")
    assert r.code == 2
    assert "no-such-chip" in r.out + r.err


# --------------------------------------------------------------------------- subprocesses


def test_subprocess_ok_table():
    p = run_solar("analyze", model_path("matmul_f32.py"), "--no-verify")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    assert "matmul" in p.stdout


def test_subprocess_json_is_clean_stdout():
    p = run_solar("analyze", model_path("matmul_bf16.py"), "--json", "--no-verify")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # nothing but the document on stdout
    assert doc["entries"][0]["status"] == "ok"
    assert "Traceback" not in p.stderr


def test_subprocess_unknown_hw():
    p = run_solar("analyze", MLP, "--hw", "h900")
    assert p.returncode == 2
    assert "Traceback" not in p.stdout + p.stderr
    assert "h900" in p.stderr
    for name in list_chips():
        assert name in p.stderr


def test_table_shows_op_names_users_write(cli):
    r = cli("analyze", "examples/resnet_block.py", "--no-verify")
    assert r.code == 0
    assert "batch_norm" in r.out and "_native_batch_norm" not in r.out


def test_piped_output_never_splits_a_number_from_its_unit():
    from conftest import run_solar
    p = run_solar("analyze", "examples/mlp.py", "--no-verify", "--hw", "h100-sxm,b200,a6000")
    assert p.returncode == 0, p.stderr
    for line in p.stdout.splitlines():
        assert not line.rstrip().endswith(("·", "(")), line  # a wrapped sentence
    fused = [ln for ln in p.stdout.splitlines() if ln.strip().startswith("fused:")]
    assert fused and "at the vector fp32 peak (fp32 without TF32)" in fused[0]  # the whole sentence on one line


def test_tiny_times_read_as_negligible():
    from solar_lsp import units
    assert units.seconds(3e-13) == "< 1 ns"
    assert units.seconds(2.5e-9) == "2.5 ns"
    assert units.plural(1, "op") == "1 op" and units.plural(3, "op") == "3 ops"
