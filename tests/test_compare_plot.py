"""``solar compare`` and ``solar plot`` (compare.py, plot.py) through the CLI."""

from __future__ import annotations

import re

import matplotlib.image
import pytest
from conftest import example_path

ATTN = example_path("attention.py")
CHIPS = ["b200", "h100-sxm", "a6000", "jetson-thor"]


def test_compare_table_has_every_chip_and_fidelity(cli):
    r = cli("compare", ATTN, "--hw", ",".join(CHIPS))
    assert r.code == 0, r.err
    for col in ("unfused", "fused", "cache-aware", "bound", "fusion benefit"):
        assert col in r.out
    rows = {ln.split("│")[1].strip(): ln for ln in r.out.splitlines() if ln.count("│") > 5}
    assert set(CHIPS) <= set(rows)
    for chip in CHIPS:
        assert re.search(r"\d\.\d\d×", rows[chip]), rows[chip]


def test_compare_json_matches_analyze(cli):
    r = cli("compare", ATTN, "--hw", ",".join(CHIPS), "--json")
    assert r.code == 0, r.err
    [e] = r.json()["entries"]
    a = cli("analyze", ATTN, "--hw", ",".join(CHIPS), "--json", "--no-verify").json()["entries"][0]
    assert [c["chip"] for c in e["chips"]] == CHIPS
    for c in e["chips"]:
        h = a["by_hardware"][c["chip"]]
        assert c["t_unfused_s"] == h["t_unfused_s"] and c["t_cache_aware_s"] == h["t_cache_aware_s"]
        assert c["fusion_benefit"] == pytest.approx(h["t_unfused_s"] / h["t_fused_s"])
        eps = 1e-12  # the cache-aware time sums segments: rounding differs from the fused sum
        assert c["t_fused_s"] * (1 - eps) <= c["t_cache_aware_s"] <= c["t_unfused_s"] * (1 + eps)


def test_compare_onchip_bytes_option(cli):
    small = cli("compare", ATTN, "--hw", "h100-sxm", "--onchip", "64KB", "--json").json()
    big = cli("compare", ATTN, "--hw", "h100-sxm", "--json").json()
    s, b = small["entries"][0]["chips"][0], big["entries"][0]["chips"][0]
    assert s["onchip_bytes"] == 64_000 and b["onchip_bytes"] == 52428800
    assert s["t_cache_aware_s"] >= b["t_cache_aware_s"]
    assert cli("compare", ATTN, "--onchip", "lots").code == 2


def test_plot_png_is_an_image(cli, tmp_path):
    out = tmp_path / "roofline.png"
    r = cli("plot", ATTN, "--hw", "h100-sxm,a6000", "-o", str(out))
    assert r.code == 0, r.err
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    img = matplotlib.image.imread(str(out))
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 600  # two panels side by side


def test_plot_svg_contains_ops_and_fidelities(cli, tmp_path):
    out = tmp_path / "roofline.svg"
    r = cli("plot", ATTN, "-o", str(out))
    assert r.code == 0, r.err
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    e = cli("analyze", ATTN, "--json", "--no-verify").json()["entries"][0]
    ops = [o for ln in e["lines"] for o in ln["ops"] if o["flops"] > 0 and o["bytes"] > 0]
    assert ops
    for o in ops:
        assert f'id="op Model {o["id"]}"' in svg, o["id"]
        assert f'{o["id"]} (line' in svg
    for fid in ("unfused", "fused", "cache-aware"):
        assert f'id="fidelity Model {fid}"' in svg
    assert "roof: vector fp32" in svg


def test_plot_rejects_unknown_suffix(cli, tmp_path):
    assert cli("plot", ATTN, "-o", str(tmp_path / "x.txt")).code == 2
