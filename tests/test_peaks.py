"""The peak rule (docs/sol-model.md "Peaks"): a bound is priced at the fastest rate any kernel
could reach for the op's type, so a missing figure never falls back to a slower one; every
bundled chip's SFU rate runs at the clock of its CUDA cores."""

from __future__ import annotations

import math
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar_lsp.bounds.sol import unit_peak
from solar_lsp.hardware.chips import (
    DTYPES,
    VECTOR_NARROW_RATIO,
    Chip,
    HardwareError,
    list_chips,
    load_chip,
)

# Wider types that hold every value of a type exactly: an op on the type may run in any of them.
HELD_BY = {
    "fp4": ("fp8", "fp16", "bf16", "tf32", "fp32", "fp64"),
    "fp8": ("fp16", "bf16", "tf32", "fp32", "fp64"),
    "int8": ("fp16", "bf16", "tf32", "fp32", "fp64"),
    "fp16": ("tf32", "fp32", "fp64"), "bf16": ("tf32", "fp32", "fp64"),
    "tf32": ("fp32", "fp64"), "fp32": ("fp64",), "fp64": (),
}
WIDTH = {"fp4": 4, "fp8": 8, "int8": 8, "fp16": 16, "bf16": 16, "tf32": 19, "fp32": 32, "fp64": 64}
FLOATS = [d for d in DTYPES if d != "int8"]

# FP32 lanes per SM, to read the clock a chip's FP32 vector peak implies (CUDA C++ Programming
# Guide, 'Arithmetic Instructions' throughput table, 32-bit floating-point add/multiply/FMA:
# CC 7.5 and 8.0: 64; CC 8.6, 8.9, 9.0, 10.x, 11.0: 128).
FP32_LANES = {"t4": 64, "a100-sxm": 64, "a100-40gb": 64, "a10g": 128, "a6000": 128, "l4": 128,
              "l40s": 128, "h100-sxm": 128, "h100-pcie": 128, "h200": 128, "b200": 128,
              "jetson-thor": 128}
SFU_PER_SM = 16  # results/clk/SM of 32-bit exp2/log2/rsqrt/sin/cos, every CC listed above


def chip(matrix: dict, vector: dict, unsupported: dict | None = None) -> Chip:
    return Chip(name="toy", display_name="toy", clock_hz=1e9, sm_count=1, dram_bytes_per_s=1e12,
                dram_capacity_bytes=None, l2_bytes=1 << 20, smem_per_sm_bytes=1 << 16,
                matrix=MappingProxyType(matrix), vector=MappingProxyType(vector),
                sfu=MappingProxyType({"fp32": 1e12}), sources=MappingProxyType({}), path="toy.toml",
                unsupported=MappingProxyType({u: frozenset(d) for u, d in (unsupported or {}).items()}))


rates = st.floats(min_value=1e9, max_value=1e16, allow_nan=False, allow_infinity=False)
tables = st.dictionaries(st.sampled_from(DTYPES), rates, max_size=len(DTYPES))


@settings(max_examples=300, deadline=None)
@given(tables, tables)
def test_a_peak_is_never_below_a_type_the_op_could_run_in(matrix, vector):
    """Whatever figures a chip lists, the peak of a type is at least the figure of the type
    itself and of every wider type that holds its values (a kernel may compute there)."""
    c = chip(matrix, vector)
    for unit, table in (("matrix", matrix), ("vector", vector)):
        for d in DTYPES:
            p = c.peak(unit, d)
            runs_in = [table[e] for e in (d, *HELD_BY[d]) if e in table]
            if unit == "vector" and d == "tf32":  # CUDA cores compute tf32 data as fp32
                runs_in = [table[e] for e in ("fp32", "fp64") if e in table]
            if p is None:
                assert d not in table  # only a missing figure may be unbounded
            else:
                assert all(p >= r for r in runs_in), (unit, d, p, runs_in)


@st.composite
def true_rates(draw):
    """A chip's full, real rates obeying the premise the rule rests on: a floating-point type
    is never faster than a strictly narrower one on the same unit, int8 never faster than fp4,
    16-bit-or-narrower vector types at most 4 x fp32 (same-width types vary freely)."""
    out = {}
    for unit in ("matrix", "vector"):
        r: dict[str, float] = {}
        cap = draw(rates) * 1e3
        for w in sorted({WIDTH[d] for d in FLOATS}):
            top = cap
            for d in (d for d in FLOATS if WIDTH[d] == w):
                r[d] = draw(st.floats(min_value=top / 1e3, max_value=top))
            cap = min(r[d] for d in FLOATS if WIDTH[d] == w)
        r["int8"] = draw(st.floats(min_value=r["fp4"] / 1e3, max_value=r["fp4"]))
        if unit == "vector":
            for d in ("fp4", "fp8", "int8", "fp16", "bf16"):
                r[d] = min(r[d], VECTOR_NARROW_RATIO * r["fp32"])
        out[unit] = r
    return out


@settings(max_examples=300, deadline=None)
@given(true_rates(), st.data())
def test_a_missing_figure_is_never_below_the_real_one(real, data):
    """Drop any figures of a chip whose real rates obey the premise: every peak the rule
    returns for the missing ones is still at least the real rate (or unbounded)."""
    listed = {u: {d: v for d, v in real[u].items() if data.draw(st.booleans(), label=f"{u}.{d}")}
              for u in real}
    c = chip(listed["matrix"], listed["vector"])
    for unit in ("matrix", "vector"):
        for d in DTYPES:
            p, how = c.peak_with_source(unit, d)
            truth = real[unit]["fp32" if (unit, d) == ("vector", "tf32") else d]
            assert p is None or p >= truth * (1 - 1e-12), (unit, d, p, truth, how)


@pytest.mark.parametrize("name", list_chips())
def test_bundled_chips_obey_the_premise(name):
    """The premise holds on every bundled chip's own figures: a floating-point type strictly
    narrower than another is at least as fast on the same unit."""
    c = load_chip(name)
    for table in (c.matrix, c.vector):
        for a in table:
            for b in table:
                if a in FLOATS and b in FLOATS and WIDTH[a] < WIDTH[b]:
                    assert table[a] >= table[b], (name, a, b)


def test_missing_figures_on_real_chips_fall_back_to_faster_ones():
    thor, b200, h100 = load_chip("jetson-thor"), load_chip("b200"), load_chip("h100-sxm")
    # Thor lists no TF32/INT8 tensor peak: fp32 convolutions and _int_mm were priced at the
    # fp32 vector rate (~32x and ~64x too slow); now at a narrower type's tensor rate.
    assert thor.peak("matrix", "tf32") == thor.matrix["fp16"]
    assert thor.peak("matrix", "int8") == thor.matrix["fp4"]
    assert thor.peak("matrix", "int8") > thor.vector["fp32"] * 64
    # B200/Thor list no fp16/bf16 vector figure: never the (slower) fp32 one
    for c in (b200, thor):
        for d in ("fp16", "bf16"):
            p, how = c.peak_with_source("vector", d)
            assert p == VECTOR_NARROW_RATIO * c.vector["fp32"] and "not listed" in how
    # a listed figure is used as is, and said so
    assert h100.peak_with_source("matrix", "bf16") == (h100.matrix["bf16"], "matrix.bf16")
    assert h100.peak("vector", "fp16") == h100.vector["fp16"]
    # nothing narrower to bound fp4 on Hopper: unbounded, never the slower fp8 rate
    assert h100.peak_with_source("matrix", "fp4")[0] is None


def test_unsupported_types_run_in_a_wider_type_or_on_the_vector_unit(tmp_path):
    """A chip file may say a unit has no path for a type (Turing: no TF32/BF16 tensor cores):
    the work then runs where it can, not at a narrower type's bound."""
    base = chip({"fp16": 65e12, "int8": 130e12}, {"fp32": 8e12, "fp16": 16e12})
    turing = chip({"fp16": 65e12, "int8": 130e12}, {"fp32": 8e12, "fp16": 16e12},
                  {"matrix": ["tf32", "bf16"]})
    assert base.peak("matrix", "tf32") == 65e12  # missing: bounded by fp16
    assert turing.peak("matrix", "tf32") is None  # no tensor path, no wider matrix type
    p, how = unit_peak(turing, "matrix", "tf32")
    assert p == 8e12 and "vector" in how  # fp32 convolutions on CUDA cores
    p, _ = unit_peak(turing, "matrix", "bf16")
    assert p == VECTOR_NARROW_RATIO * 8e12  # bf16 vector work is itself only bounded
    path = tmp_path / "t.toml"
    path.write_text(_MINIMAL + '[unsupported]\nmatrix = ["tf32", "bf16"]\n')
    assert load_chip(str(path)).unsupported["matrix"] == {"tf32", "bf16"}
    path.write_text(_MINIMAL + '[unsupported]\nmatrix = ["tf16"]\n')
    with pytest.raises(HardwareError, match="unsupported.matrix"):
        load_chip(str(path))


_MINIMAL = """\
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


@pytest.mark.parametrize("name", list_chips())
def test_sfu_runs_at_the_clock_the_vector_peak_implies(name):
    """SFU = SMs x 16 x the clock of the CUDA cores, which the FP32 vector peak gives (H100
    SXM: 67 TFLOPS / (132 x 128 x 2) = 1.98 GHz); the dense tensor peaks imply a lower clock
    (1.83 GHz), which priced transcendentals 8% too slow."""
    c = load_chip(name)
    assert name in FP32_LANES, f"add {name}'s FP32 lanes per SM (CUDA throughput table)"
    clock = c.vector["fp32"] / (c.sm_count * FP32_LANES[name] * 2)
    assert math.isclose(c.sfu["fp32"], c.sm_count * SFU_PER_SM * clock, rel_tol=0.01), (
        c.sfu["fp32"], c.sm_count * SFU_PER_SM * clock)
