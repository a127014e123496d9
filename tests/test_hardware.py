"""Chip spec files: every bundled chip loads, figures hang together, bad files fail clearly."""

from __future__ import annotations

import json
import math
import pathlib

import pytest
from rich.console import Console

from solar_lsp.cli.hw import hw_list, hw_show
from solar_lsp.hardware.chips import (
    DTYPES,
    UNITS,
    Chip,
    HardwareError,
    canonical_dtype,
    hardware_dir,
    list_chips,
    load_chip,
    load_chips,
)

BUNDLED = [
    "a100-40gb",
    "a100-sxm",
    "a10g",
    "l4",
    "l40s",
    "t4",
    "a6000",
    "b200",
    "h100-pcie",
    "h100-sxm",
    "h200",
    "jetson-thor",
]

SOURCED_FIELDS = (
    "clock_hz",
    "sm_count",
    "dram_bytes_per_s",
    "dram_capacity_bytes",
    "l2_bytes",
    "smem_per_sm_bytes",
    *UNITS,
)

MINIMAL = """\
name = "toy"
clock_hz = 1e9
sm_count = 4
dram_bytes_per_s = 100e9
l2_bytes = 4194304
smem_per_sm_bytes = 65536
[matrix]
fp16 = 10e12
[vector]
fp32 = 1e12
[sfu]
fp32 = 64e9
"""


def write(tmp_path: pathlib.Path, text: str, name: str = "toy.toml") -> pathlib.Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- bundled chips ------------------------------------------------------------------------


def test_list_chips_is_sorted_and_complete():
    assert list_chips() == sorted(BUNDLED)
    assert (hardware_dir() / "h100-sxm.toml").is_file()


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_chip_has_core_figures_and_sources(name):
    chip = load_chip(name)
    assert isinstance(chip, Chip)
    assert chip.name == name
    assert chip.display_name
    assert chip.dram_bytes_per_s > 0
    assert chip.dram_capacity_bytes and chip.dram_capacity_bytes > 0
    assert isinstance(chip.l2_bytes, int) and chip.l2_bytes > 0
    assert isinstance(chip.smem_per_sm_bytes, int) and chip.smem_per_sm_bytes > 0
    assert isinstance(chip.sm_count, int) and chip.sm_count > 0
    assert chip.matrix["fp16"] > 0
    # bf16 tensor cores arrived with Ampere; the Turing T4 has none (its file must not invent one)
    assert ("bf16" in chip.matrix) == (name != "t4")
    assert chip.vector["fp32"] > 0
    assert chip.sfu["fp32"] > 0
    for field in SOURCED_FIELDS:
        assert chip.sources.get(field), f"{name}: no source for {field}"
    assert pathlib.Path(chip.path).name == f"{name}.toml"


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_chip_is_internally_consistent(name):
    chip = load_chip(name)
    # Tensor cores beat CUDA cores; narrower types are never slower on the tensor cores.
    half = chip.matrix.get("bf16", chip.matrix["fp16"])
    assert half > chip.vector["fp32"]
    if "fp8" in chip.matrix:
        assert chip.matrix["fp8"] >= half
    if "tf32" in chip.matrix:
        assert chip.matrix["tf32"] < half
    # SFU figure is SMs x 16 results/clk x the CUDA-core clock, never below clock_hz (which may
    # be the lower clock the tensor peaks imply); tests/test_peaks.py checks the clock.
    assert chip.sfu["fp32"] >= chip.sm_count * 16 * chip.clock_hz * (1 - 1e-6)
    # Plausible ranges catch unit slips (TB/s written as GB/s, KiB as bytes, ...).
    assert 1e11 < chip.dram_bytes_per_s < 2e13
    assert 1e9 < chip.clock_hz < 3e9
    assert 1 << 20 <= chip.l2_bytes <= 512 << 20
    assert 32 << 10 <= chip.smem_per_sm_bytes <= 256 << 10


def test_bandwidth_ordering():
    h200, sxm, pcie = load_chips(["h200", "h100-sxm", "h100-pcie"])
    assert h200.dram_bytes_per_s > sxm.dram_bytes_per_s > pcie.dram_bytes_per_s
    assert load_chip("b200").dram_bytes_per_s > h200.dram_bytes_per_s
    assert load_chip("a6000").dram_bytes_per_s < load_chip("a100-sxm").dram_bytes_per_s


@pytest.mark.parametrize("name", ["h100-sxm", "h100-pcie", "h200"])
def test_hopper_dense_fp8_is_twice_bf16(name):
    chip = load_chip(name)
    assert math.isclose(chip.matrix["fp8"], 2 * chip.matrix["bf16"], rel_tol=1e-3)
    assert math.isclose(chip.matrix["fp16"], chip.matrix["bf16"])
    assert math.isclose(chip.matrix["bf16"], 2 * chip.matrix["tf32"], rel_tol=1e-3)


def test_dense_not_sparse_figures():
    # The datasheet "with sparsity" numbers are 2x these; a slip would double every bound.
    assert math.isclose(load_chip("h100-sxm").matrix["bf16"], 989.4e12, rel_tol=1e-3)
    assert math.isclose(load_chip("a100-sxm").matrix["bf16"], 312e12, rel_tol=1e-3)
    assert math.isclose(load_chip("b200").matrix["bf16"], 2.25e15, rel_tol=1e-3)
    assert math.isclose(load_chip("a6000").matrix["fp16"], 154.8e12, rel_tol=1e-3)


def test_cross_generation_relations():
    b200, h100, a100 = load_chips(["b200", "h100", "a100"])
    assert b200.matrix["bf16"] > h100.matrix["bf16"] > a100.matrix["bf16"]
    assert h100.dram_capacity_bytes < load_chip("h200").dram_capacity_bytes
    assert h100.matrix == load_chip("h200").matrix  # same GH100 compute


def test_onchip_bytes_is_larger_of_l2_and_total_smem():
    h100 = load_chip("h100-sxm")
    assert h100.onchip_bytes == max(h100.l2_bytes, h100.smem_per_sm_bytes * h100.sm_count)
    a6000 = load_chip("a6000")
    assert a6000.onchip_bytes == 84 * 100 * 1024  # smem total (8.4 MB) exceeds the 6 MiB L2


# --- names, aliases, paths, caching --------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("H100", "h100-sxm"),
        ("h100", "h100-sxm"),
        ("H100-SXM", "h100-sxm"),
        ("h100_pcie", "h100-pcie"),
        ("a100", "a100-sxm"),
        ("thor", "jetson-thor"),
        ("RTX A6000", "a6000"),
    ],
)
def test_names_are_case_insensitive_and_aliased(alias, name):
    assert load_chip(alias).name == name


def test_unknown_name_lists_known_chips():
    with pytest.raises(HardwareError) as err:
        load_chip("h300")
    msg = str(err.value)
    assert "h300" in msg
    for name in BUNDLED:
        assert name in msg


def test_load_is_cached():
    assert load_chip("h100") is load_chip("h100-sxm")


def test_user_toml_path(tmp_path):
    path = write(tmp_path, MINIMAL, "my-gpu.toml")
    chip = load_chip(str(path))
    assert chip.name == "toy"
    assert chip.display_name == "toy"  # defaults to name
    assert chip.dram_capacity_bytes is None  # optional
    assert chip.l2_bytes == 4194304
    assert chip.path == str(path.resolve())
    assert load_chip(path).name == "toy"  # PathLike accepted too


def test_user_toml_edits_are_seen(tmp_path):
    path = write(tmp_path, MINIMAL)
    assert load_chip(str(path)).sm_count == 4
    path.write_text(MINIMAL.replace("sm_count = 4", "sm_count = 16"))
    assert load_chip(str(path)).sm_count == 16


def test_integral_float_accepted_for_integer_fields(tmp_path):
    path = write(tmp_path, MINIMAL.replace("l2_bytes = 4194304", "l2_bytes = 4e6"))
    chip = load_chip(str(path))
    assert chip.l2_bytes == 4_000_000 and isinstance(chip.l2_bytes, int)


def test_missing_path():
    with pytest.raises(HardwareError, match="not found"):
        load_chip("no/such/chip.toml")


# --- malformed files -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("dram_bytes_per_s = 100e9\n", "", "dram_bytes_per_s"),  # missing
        ("dram_bytes_per_s = 100e9", 'dram_bytes_per_s = "fast"', "dram_bytes_per_s"),
        ("clock_hz = 1e9", "clock_hz = -1e9", "clock_hz"),  # negative
        ("sm_count = 4", "sm_count = 0", "sm_count"),  # zero
        ("sm_count = 4", "sm_count = 4.5", "sm_count"),  # not an integer
        ("sm_count = 4", "sm_count = true", "sm_count"),  # bool is not a number
        ("[vector]\nfp32 = 1e12", "[vector]\nfp32 = 'x'", "vector.fp32"),
        ("[matrix]\nfp16 = 10e12", "[matrix]\nfp17 = 10e12", "matrix.fp17"),  # unknown key
        ("[sfu]\nfp32 = 64e9", "[sfu]\nfp32 = -64e9", "sfu.fp32"),
        ('name = "toy"', "name = 3", "name"),
        ("clock_hz = 1e9", "clock_hz = 1e9\ndram_bandwith = 1e12", "dram_bandwith"),  # typo
    ],
)
def test_malformed_file_names_the_field(tmp_path, old, new, field):
    assert old in MINIMAL
    path = write(tmp_path, MINIMAL.replace(old, new), "bad.toml")
    with pytest.raises(HardwareError) as err:
        load_chip(str(path))
    msg = str(err.value)
    assert f"'{field}'" in msg
    assert "bad.toml" in msg


def test_unit_must_be_a_table(tmp_path):
    text = MINIMAL.replace("[sfu]\nfp32 = 64e9\n", "").replace(
        'name = "toy"', 'name = "toy"\nsfu = 3'
    )
    with pytest.raises(HardwareError, match="field 'sfu' must be a table"):
        load_chip(str(write(tmp_path, text)))


def test_error_message_format(tmp_path):
    path = write(tmp_path, MINIMAL.replace("dram_bytes_per_s = 100e9", 'dram_bytes_per_s = "fast"'))
    with pytest.raises(HardwareError) as err:
        load_chip(str(path))
    assert str(err.value).endswith("field 'dram_bytes_per_s' must be a positive number, got 'fast'")
    assert isinstance(err.value, ValueError)


def test_toml_syntax_error_reports_line(tmp_path):
    path = write(tmp_path, MINIMAL.replace("sm_count = 4", "sm_count = = 4"), "broken.toml")
    with pytest.raises(HardwareError) as err:
        load_chip(str(path))
    msg = str(err.value)
    assert "broken.toml" in msg and "syntax" in msg.lower() and "line 3" in msg


def test_unknown_source_key_is_rejected(tmp_path):
    path = write(tmp_path, MINIMAL + '[sources]\ndram = "somewhere"\n')
    with pytest.raises(HardwareError, match="'sources.dram'"):
        load_chip(str(path))


# --- peaks and fallbacks -------------------------------------------------------------------


def test_peak_direct_lookups():
    h100 = load_chip("h100-sxm")
    assert h100.peak("matrix", "bf16") == h100.matrix["bf16"]
    assert h100.peak("matrix", "torch.bfloat16") == h100.matrix["bf16"]
    assert h100.peak("matrix", "float8_e4m3fn") == h100.matrix["fp8"]
    assert h100.peak("vector", "float32") == h100.vector["fp32"]
    assert h100.peak("vector", "fp64") == h100.vector["fp64"]


def test_peak_matrix_falls_back_to_a_narrower_type():
    h100 = load_chip("h100-sxm")
    assert h100.peak("matrix", "fp32") == h100.matrix["tf32"]  # bounded by the nearest narrower
    assert h100.peak("matrix", "fp4") is None  # nothing narrower bounds it: unbounded
    assert load_chip("b200").peak("matrix", "fp4") == 9e15


def test_peak_vector_fallbacks(tmp_path):
    # a missing figure never falls back to a slower one (docs/sol-model.md "Peaks")
    a6000 = load_chip("a6000")  # has fp16 but no bf16 vector figure (A100: bf16 half of fp16)
    assert a6000.peak("vector", "bf16") == 4 * a6000.vector["fp32"]
    assert a6000.peak("vector", "fp8") == 4 * a6000.vector["fp32"]
    b200 = load_chip("b200")  # only fp32/fp64 vector figures
    for dtype in ("fp16", "bf16", "fp8", "int8", "fp4"):
        assert b200.peak("vector", dtype) == 4 * b200.vector["fp32"]
    assert b200.peak("vector", "tf32") == b200.vector["fp32"]  # CUDA cores compute it as fp32
    toy = load_chip(str(write(tmp_path, MINIMAL)))
    assert toy.peak("vector", "fp64") == toy.vector["fp32"]  # bounded by the narrower fp32
    assert toy.peak("vector", "int64") is None
    assert toy.peak("matrix", "bool") is None


def test_peak_sfu_is_always_fp32():
    h100 = load_chip("h100-sxm")
    for dtype in DTYPES:
        assert h100.peak("sfu", dtype) == h100.sfu["fp32"]


def test_peak_rejects_unknown_unit():
    with pytest.raises(ValueError, match="unit"):
        load_chip("h100").peak("tensor", "bf16")


def test_canonical_dtype():
    assert canonical_dtype("bfloat16") == "bf16"
    assert canonical_dtype("torch.float16") == "fp16"
    assert canonical_dtype("FP8") == "fp8"
    assert canonical_dtype("complex64") is None


def test_chip_is_immutable_and_hashable():
    chip = load_chip("h100")
    with pytest.raises(TypeError):
        chip.matrix["bf16"] = 1.0  # type: ignore[index]
    assert {chip: 1}[load_chip("h100-sxm")] == 1


# --- CLI helpers ---------------------------------------------------------------------------


def make_console() -> Console:
    return Console(record=True, width=200, color_system=None)


def test_hw_list_shows_every_chip():
    console = make_console()
    assert hw_list(console) == 0
    out = console.export_text()
    for name in BUNDLED:
        assert name in out
    assert "989.4" in out  # H100 bf16 dense


def test_hw_show_table_and_json():
    console = make_console()
    assert hw_show("h100", console) == 0
    out = console.export_text()
    assert "NVIDIA H100 SXM5" in out and "Datasheet" in out and "3.350 TB/s" in out

    console = make_console()
    assert hw_show("h200", console, as_json=True) == 0
    data = json.loads(console.export_text())
    assert data["name"] == "h200"
    assert data["dram_bytes_per_s"] == 4.8e12
    assert data["matrix"]["fp8"] == 1978.9e12
    assert set(SOURCED_FIELDS) <= set(data["sources"])


def test_hw_show_errors_exit_2_without_traceback(tmp_path):
    console = make_console()
    assert hw_show("h300", console) == 2
    out = console.export_text()
    assert "unknown chip" in out and "Traceback" not in out

    bad = write(tmp_path, MINIMAL.replace("sm_count = 4", "sm_count = -4"), "bad.toml")
    console = make_console()
    assert hw_show(str(bad), console) == 2
    assert "'sm_count'" in console.export_text()


def test_a_new_probe_never_lowers_the_profiles_bandwidth(tmp_path):
    """A probe under load reads low; the profile is a ceiling, so the higher figure stays."""
    from solar_lsp.hardware.hostprobe import keep_higher_bandwidth, probe, to_toml
    path = tmp_path / "host.toml"
    earlier = probe(measure=False)
    earlier["dram_bytes_per_s"] = 48e9
    path.write_text(to_toml(earlier))
    busy = probe(measure=False)
    busy["dram_bytes_per_s"] = 5e9
    assert keep_higher_bandwidth(busy, str(path)) == 48e9
    assert busy["dram_bytes_per_s"] == 48e9 and "5.0 GB/s" in busy["sources"]["dram_bytes_per_s"]
    idle = probe(measure=False)
    idle["dram_bytes_per_s"] = 60e9
    assert keep_higher_bandwidth(idle, str(path)) is None and idle["dram_bytes_per_s"] == 60e9


def test_hw_show_prints_a_cpu_bandwidth_in_gb_per_s(tmp_path):
    from solar_lsp.hardware.hostprobe import probe, to_toml
    d = probe(measure=False)
    d["dram_bytes_per_s"] = 46.1e9
    path = tmp_path / "host.toml"
    path.write_text(to_toml(d))
    console = Console(record=True, width=200)
    assert hw_show(str(path), console) == 0
    text = console.export_text()
    assert "46.1 GB/s" in text and "TB/s" not in text
