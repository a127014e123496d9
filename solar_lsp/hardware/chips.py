"""Chip specifications: loaded from TOML data files, validated, cached.

The figures live in ``hardware/*.toml`` (installed as the package ``solar_lsp.chips``) rather
than in code, so that every number sits next to the document it came from and users can
describe their own chip with a file of the same shape (``load_chip("my-gpu.toml")``).
Validation is strict and error messages name the file and the field, because a typo in a
peak silently skews every Speed-of-Light bound computed from it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.resources
import math
import os
import pathlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10 only
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = [
    "ALIASES",
    "DTYPES",
    "UNITS",
    "WARM_L2_SUFFIX",
    "Chip",
    "HardwareError",
    "canonical_dtype",
    "hardware_dir",
    "list_chips",
    "load_chip",
    "load_chips",
]

#: Compute units a chip table may describe.
UNITS: tuple[str, ...] = ("matrix", "vector", "sfu")

#: Data-type names accepted as keys of the unit tables.
DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")

#: Suffix of a chip name or path that asks for warm-L2 bounds (``Chip.warm_l2``).
WARM_L2_SUFFIX = "@warm-l2"

#: Short names users type, mapped to bundled chip names.
ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "h100": "h100-sxm",
        "h100-sxm5": "h100-sxm",
        "h100sxm": "h100-sxm",
        "h100pcie": "h100-pcie",
        "h200-sxm": "h200",
        "a100": "a100-sxm",
        "a100-sxm4": "a100-sxm",
        "a100sxm": "a100-sxm",
        "rtx-a6000": "a6000",
        "rtxa6000": "a6000",
        "thor": "jetson-thor",
        "jetson-agx-thor": "jetson-thor",
        "agx-thor": "jetson-thor",
        "t5000": "jetson-thor",
        "jetson-t5000": "jetson-thor",
        "b200-sxm": "b200",
        "hgx-b200": "b200",
    }
)

# Operand width in bits: a missing figure is bounded by a narrower type's (Chip.peak_with_source).
_WIDTH: Mapping[str, int] = MappingProxyType(
    {"fp4": 4, "fp8": 8, "int8": 8, "fp16": 16, "bf16": 16, "tf32": 19, "fp32": 32, "fp64": 64}
)
_FLOATS = ("fp4", "fp8", "fp16", "bf16", "tf32", "fp32", "fp64")

# Wider types that hold every value of a dtype exactly: a kernel may compute the data in any of
# them, so the fastest of their figures is a rate the dtype certainly reaches.
_HELD_BY: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "fp4": ("fp8", "fp16", "bf16", "tf32", "fp32", "fp64"),
        "fp8": ("fp16", "bf16", "tf32", "fp32", "fp64"),
        "int8": ("fp16", "bf16", "tf32", "fp32", "fp64"),
        "fp16": ("tf32", "fp32", "fp64"),
        "bf16": ("tf32", "fp32", "fp64"),
        "tf32": ("fp32", "fp64"),
        "fp32": ("fp64",),
        "fp64": (),
    }
)

#: A vector figure missing for a type of 16 bits or fewer is at most this many times the fp32
#: vector figure: the largest ratio of any listed chip (A100: fp16 78 TFLOPS = 4 x fp32 19.5;
#: CUDA C++ Programming Guide throughput table, CC 8.0: 256 fp16 vs 64 fp32 results/clk/SM),
#: and a 32-bit lane packs at most four 8-bit values.
VECTOR_NARROW_RATIO = 4.0

# Spellings from torch / jax / numpy mapped to the canonical DTYPES names.
_DTYPE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "float64": "fp64",
        "double": "fp64",
        "f64": "fp64",
        "float32": "fp32",
        "float": "fp32",
        "f32": "fp32",
        "tensorfloat32": "tf32",
        "float16": "fp16",
        "half": "fp16",
        "f16": "fp16",
        "bfloat16": "bf16",
        "float8_e4m3fn": "fp8",
        "float8_e4m3fnuz": "fp8",
        "float8_e5m2": "fp8",
        "float8_e5m2fnuz": "fp8",
        "float8_e8m0fnu": "fp8",
        "float8": "fp8",
        "e4m3": "fp8",
        "e5m2": "fp8",
        "uint8": "int8",
        "i8": "int8",
        "float4_e2m1fn_x2": "fp4",
        "float4_e2m1fn": "fp4",
        "float4": "fp4",
        "nvfp4": "fp4",
        "mxfp4": "fp4",
    }
)

# Top-level scalar fields: name -> (kind, required). Kinds: "str", "int", "float".
_SCALAR_FIELDS: Mapping[str, tuple[str, bool]] = MappingProxyType(
    {
        "name": ("str", False),  # defaults to the file stem
        "display_name": ("str", False),  # defaults to name
        "clock_hz": ("float", True),
        "sm_count": ("int", True),
        "dram_bytes_per_s": ("float", True),
        "dram_capacity_bytes": ("float", False),
        "l2_bytes": ("int", True),
        "l2_bytes_per_s": ("float", False),  # L2 -> SM read bandwidth (warm-L2 bounds)
        "smem_per_sm_bytes": ("int", True),
    }
)
_TABLE_FIELDS = (*UNITS, "unsupported", "sources")
_SOURCE_KEYS = frozenset(
    [k for k in _SCALAR_FIELDS if k not in ("name", "display_name")]
    + list(UNITS)
    + [f"{u}.{d}" for u in UNITS for d in DTYPES]
    + ["unsupported", "notes"]
)


class HardwareError(ValueError):
    """A chip could not be found or its TOML file is malformed.

    The message always starts with the file (or the name asked for) and names the offending
    field, so it can be shown to a user as-is without a traceback.
    """


@dataclass(frozen=True)
class Chip:
    """One accelerator's peak figures, in plain SI units (Hz, bytes, bytes/s, FLOP/s).

    ``matrix`` holds dense tensor-core peaks, ``vector`` CUDA-core peaks and ``sfu`` the
    special-function-unit rate (transcendentals per second), each keyed by a ``DTYPES`` name.
    ``sources`` maps a field (or ``"<unit>.<dtype>"``) to the document the figure came from.
    ``unsupported`` maps a unit to the types the chip has no path for on it (``[unsupported]``,
    e.g. ``matrix = ["tf32", "bf16"]`` on Turing): such work runs in a wider type or on the
    vector unit instead, where a merely missing figure is bounded from above.
    """

    name: str
    display_name: str
    clock_hz: float
    sm_count: int
    dram_bytes_per_s: float
    dram_capacity_bytes: float | None
    l2_bytes: int
    smem_per_sm_bytes: int
    matrix: Mapping[str, float]
    vector: Mapping[str, float]
    sfu: Mapping[str, float]
    sources: Mapping[str, str]
    path: str
    unsupported: Mapping[str, frozenset[str]] = dataclasses.field(
        default_factory=lambda: MappingProxyType({}))
    l2_bytes_per_s: float | None = None  # None: not known (a warm L2 then costs no time)
    warm_l2: bool = False  # inputs and outputs may stay in L2 between runs (``name@warm-l2``)

    # The mapping fields are read-only proxies and not hashable; identity of a chip is its
    # file and name, which is what caches keyed on chips need.
    def __hash__(self) -> int:
        return hash((self.path, self.name))

    @property
    def onchip_bytes(self) -> int:
        """Capacity that can hold reused data on chip: ``max(L2, shared memory x SMs)``.

        The two are not added: data staged in shared memory normally passed through L2 on its
        way from DRAM, so the larger of the two is the optimistic (Speed-of-Light) bound on the
        working set that can avoid a DRAM round trip, while the sum would double count it.
        """
        return max(self.l2_bytes, self.smem_per_sm_bytes * self.sm_count)

    def peak(self, unit: str, dtype: str) -> float | None:
        """Peak rate of ``unit`` ("matrix", "vector" or "sfu") for ``dtype``, or None if unbounded.

        ``dtype`` may be a canonical name ("bf16") or a framework spelling ("torch.bfloat16").
        A missing figure never falls back to a slower one (docs/sol-model.md "Peaks"): it is
        bounded by the figure of the nearest narrower floating-point type the unit lists, a
        missing vector figure of 16 bits or fewer by 4x the fp32 vector figure; with neither,
        None (the work costs no time there). The SFU evaluates in fp32 for every input type.
        """
        return self.peak_with_source(unit, dtype)[0]

    def peak_with_source(self, unit: str, dtype: str) -> tuple[float | None, str]:
        """``peak`` and how it was found: ``"matrix.bf16"`` when the figure is listed and used as
        is, else a sentence naming the rule that stood in for it (reports turn it into a note)."""
        if unit not in UNITS:
            raise ValueError(f"unknown unit {unit!r}; expected one of {', '.join(UNITS)}")
        if unit == "sfu":
            value = self.sfu.get("fp32")
            return value, "sfu.fp32" if value else "no sfu.fp32 figure: transcendentals not counted"
        canon = canonical_dtype(dtype)
        if canon is None:
            return None, f"no {unit} figure for {dtype}"
        if unit == "vector" and canon == "tf32":
            canon = "fp32"  # a tensor-core input format: CUDA cores compute it as fp32
        table = self.matrix if unit == "matrix" else self.vector
        if canon in self.unsupported.get(unit, ()):
            return _widened(table, unit, canon, None, f"{unit}.{canon}: no such path on this chip")
        value, how = _upper_bound(table, unit, canon)
        return _widened(table, unit, canon, value, how)

    def lacks(self, unit: str, dtype: str) -> bool:
        """Whether the chip file says ``unit`` has no path for ``dtype``: the unit has no figures
        at all, or ``[unsupported]`` lists the type. Unknown is not lacking."""
        table = {"matrix": self.matrix, "vector": self.vector, "sfu": self.sfu}[unit]
        return not table or (canonical_dtype(dtype) or dtype) in self.unsupported.get(unit, ())

    def source(self, field: str) -> str | None:
        """The documented source of ``field`` ("l2_bytes", "matrix", "matrix.fp8", ...)."""
        if field in self.sources:
            return self.sources[field]
        if "." in field:
            return self.sources.get(field.split(".", 1)[0])
        return None


def canonical_dtype(dtype: object) -> str | None:
    """Map a dtype spelling (``"bf16"``, ``"bfloat16"``, ``torch.bfloat16``) to a DTYPES name.

    Returns None for types no unit table describes (e.g. bool, int64, complex).
    """
    text = str(dtype).strip().lower()
    for prefix in ("torch.", "jnp.", "np.", "numpy.", "jax.numpy."):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if text in DTYPES:
        return text
    return _DTYPE_ALIASES.get(text)


def _upper_bound(table: Mapping[str, float], unit: str, canon: str) -> tuple[float | None, str]:
    """The listed figure, else one no lower than the real one: the nearest strictly narrower
    floating-point type's figure (the fastest if two share that width), else for a vector type
    of 16 bits or fewer VECTOR_NARROW_RATIO x vector.fp32, else None."""
    if canon in table:
        return table[canon], f"{unit}.{canon}"
    narrower = [d for d in _FLOATS if _WIDTH[d] < _WIDTH[canon] and d in table]
    if narrower:
        width = max(_WIDTH[d] for d in narrower)
        best = max((d for d in narrower if _WIDTH[d] == width), key=lambda d: table[d])
        return table[best], (f"{unit}.{canon} is not listed: priced at {unit}.{best}, the nearest "
                             "narrower type's figure (no slower than the missing one)")
    if unit == "vector" and _WIDTH[canon] <= 16 and "fp32" in table:
        return VECTOR_NARROW_RATIO * table["fp32"], (
            f"vector.{canon} is not listed: priced at {VECTOR_NARROW_RATIO:g} x vector.fp32, the "
            "most any chip runs a 16-bit or narrower type per fp32 rate")
    return None, (f"{unit}.{canon} is not listed and no narrower figure bounds it: that work is "
                  "not counted on this unit")


def _widened(table: Mapping[str, float], unit: str, canon: str, value: float | None,
             how: str) -> tuple[float | None, str]:
    """``value`` raised to the fastest listed wider type that holds every ``canon`` value: a
    kernel may compute the data there. A type with no path of its own (``value`` None after an
    [unsupported] entry) runs only there."""
    held = [(table[d], d) for d in _HELD_BY[canon] if d in table]
    if not held:
        return value, how
    best, d = max(held)
    if value is None and how.endswith("no such path on this chip"):
        return best, f"{how}: computed in {unit}.{d}"
    if value is not None and best > value:
        return best, f"{unit}.{canon} priced at {unit}.{d}, a faster wider type that holds its values"
    return value, how


def hardware_dir() -> pathlib.Path:
    """Directory holding the bundled chip files.

    In a source checkout this is the repository's ``hardware/`` folder (so edits show up
    without reinstalling); in an installed wheel it is the ``solar_lsp.chips`` package.
    """
    repo_dir = pathlib.Path(__file__).resolve().parents[2] / "hardware"
    if repo_dir.is_dir() and any(repo_dir.glob("*.toml")):
        return repo_dir
    return pathlib.Path(str(importlib.resources.files("solar_lsp.chips")))


def list_chips() -> list[str]:
    """Names of the bundled chips (file stems of ``hardware/*.toml``), sorted."""
    return sorted(p.stem for p in hardware_dir().glob("*.toml"))


def load_chip(name_or_path: str | os.PathLike[str]) -> Chip:
    """Load a bundled chip by name (case-insensitive, aliases allowed) or a user's TOML file.

    Anything that ends in ``.toml``, contains a path separator or names an existing file is
    treated as a path; everything else as a bundled chip name. A trailing ``@warm-l2``
    (``l40s@warm-l2``) loads the chip for back-to-back runs whose L2 is not flushed between
    them (docs/sol-model.md "Warm L2"): named with the suffix, ``warm_l2`` set.
    """
    text = os.fspath(name_or_path)
    if text.lower().endswith(WARM_L2_SUFFIX):
        base = load_chip(text[: -len(WARM_L2_SUFFIX)])
        return dataclasses.replace(base, name=base.name + WARM_L2_SUFFIX, warm_l2=True,
                                   display_name=base.display_name + " (warm L2)")
    if _looks_like_path(text):
        path = pathlib.Path(text).expanduser()
        if not path.is_file():
            raise HardwareError(f"{text}: chip file not found")
        return _load_resolved(str(path.resolve()), text)
    key = _normalise_name(text)
    if key == "host":  # this machine's CPU, probed once (`solar hw probe`)
        # lazy: hostprobe imports numpy, which loading a chip file does not otherwise need
        from solar_lsp.hardware.hostprobe import ensure_host_toml
        path = ensure_host_toml()
        return _load_resolved(path, "host")
    known = list_chips()
    key = key if key in known else ALIASES.get(key, key)
    if key not in known:
        raise HardwareError(
            f"unknown chip {text!r}; known chips: {', '.join(known)} (or the path to a .toml file)"
        )
    path = hardware_dir() / f"{key}.toml"
    return _load_resolved(str(path.resolve()), path.name)


def chip_fingerprint(name_or_path: str | os.PathLike[str]) -> str:
    """A digest of the file behind a chip name, so results cached under the name go stale
    when the file changes (an edited chip file, a re-probed or raised host profile). Never
    probes: an unprobed host is "unprobed"; a bad name is the name itself."""
    text = os.fspath(name_or_path)
    try:
        if not _looks_like_path(text) and _normalise_name(text) == "host":
            from solar_lsp.hardware.hostprobe import host_toml_path  # lazy: numpy, as above
            path = host_toml_path()
            if not os.path.isfile(path):
                return "unprobed"
        else:
            path = load_chip(text).path
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()[:16]
    except (HardwareError, OSError):
        return text


def load_chips(names: Iterable[str | os.PathLike[str]]) -> list[Chip]:
    """Load several chips, in order; the first bad name or file raises HardwareError."""
    return [load_chip(n) for n in names]


# --------------------------------------------------------------------------------------------
# internals


def _looks_like_path(text: str) -> bool:
    return (
        text.lower().endswith(".toml")
        or "/" in text
        or (os.sep != "/" and os.sep in text)
        or os.path.isfile(text)
    )


def _normalise_name(text: str) -> str:
    return "-".join(text.strip().lower().replace("_", " ").split())


def _load_resolved(resolved: str, label: str) -> Chip:
    # Keyed by resolved path plus mtime/size so a long-running language server sees edits to a
    # chip file, while repeated lookups of an unchanged file cost one stat().
    try:
        st = os.stat(resolved)
    except OSError as exc:
        raise HardwareError(f"{label}: cannot read chip file ({exc.strerror})") from None
    return _load_cached(resolved, st.st_mtime_ns, st.st_size, label)


@functools.lru_cache(maxsize=64)
def _load_cached(resolved: str, _mtime_ns: int, _size: int, label: str) -> Chip:
    try:
        with open(resolved, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise HardwareError(f"{label}: TOML syntax error: {exc}") from None
    except OSError as exc:
        raise HardwareError(f"{label}: cannot read chip file ({exc.strerror})") from None
    return _parse(data, resolved, label)


def _parse(data: Mapping[str, Any], resolved: str, label: str) -> Chip:
    def fail(field: str, problem: str, value: Any = None, show_value: bool = True) -> HardwareError:
        got = f", got {value!r}" if show_value else ""
        return HardwareError(f"{label}: field {field!r} {problem}{got}")

    allowed = set(_SCALAR_FIELDS) | set(_TABLE_FIELDS)
    for key in data:
        if key not in allowed:
            raise HardwareError(
                f"{label}: unknown field {key!r}; expected one of {', '.join(sorted(allowed))}"
            )
    values = _scalar_values(data, label, fail)
    tables: dict[str, Mapping[str, Any]] = {}
    for table in _TABLE_FIELDS:
        raw = data.get(table, {})
        if not isinstance(raw, dict):
            raise fail(table, "must be a table ([" + table + "])", raw)
        tables[table] = raw
    units = _unit_tables(tables, label, fail)
    sources = _sources(tables["sources"], label, fail)

    name = values.get("name", pathlib.Path(resolved).stem)
    return Chip(
        name=name,
        display_name=values.get("display_name", name),
        clock_hz=values["clock_hz"],
        sm_count=values["sm_count"],
        dram_bytes_per_s=values["dram_bytes_per_s"],
        dram_capacity_bytes=values.get("dram_capacity_bytes"),
        l2_bytes=values["l2_bytes"],
        l2_bytes_per_s=values.get("l2_bytes_per_s"),
        smem_per_sm_bytes=values["smem_per_sm_bytes"],
        matrix=units["matrix"],
        vector=units["vector"],
        sfu=units["sfu"],
        sources=MappingProxyType(sources),
        path=resolved,
        unsupported=_unsupported(tables["unsupported"], label, fail),
    )


def _scalar_values(data: Mapping[str, Any], label: str, fail: Any) -> dict[str, Any]:
    """The top-level fields, checked: required ones present, strings non-empty, numbers positive."""
    values: dict[str, Any] = {}
    for field, (kind, required) in _SCALAR_FIELDS.items():
        if field not in data:
            if required:
                raise HardwareError(f"{label}: missing required field {field!r}")
            continue
        value = data[field]
        if kind == "str":
            if not isinstance(value, str) or not value.strip():
                raise fail(field, "must be a non-empty string", value)
            values[field] = value.strip()
        else:
            values[field] = _positive(value, field, integer=(kind == "int"), fail=fail)
    return values


def _unit_tables(tables: Mapping[str, Mapping[str, Any]], label: str,
                 fail: Any) -> dict[str, Mapping[str, float]]:
    """Per compute unit, its peak rate per dtype (keys among DTYPES, values positive)."""
    units: dict[str, Mapping[str, float]] = {}
    for unit in UNITS:
        parsed: dict[str, float] = {}
        for key, value in tables[unit].items():
            field = f"{unit}.{key}"
            if key not in DTYPES:
                raise HardwareError(
                    f"{label}: unknown key {field!r}; [{unit}] keys must be among "
                    f"{', '.join(DTYPES)}"
                )
            parsed[key] = _positive(value, field, integer=False, fail=fail)
        units[unit] = MappingProxyType(parsed)
    return units


def _unsupported(table: Mapping[str, Any], label: str,
                 fail: Any) -> Mapping[str, frozenset[str]]:
    """The [unsupported] table: per unit, the DTYPES the chip has no path for on it."""
    out: dict[str, frozenset[str]] = {}
    for unit, value in table.items():
        field = f"unsupported.{unit}"
        if unit not in ("matrix", "vector"):
            raise HardwareError(f"{label}: unknown key {field!r}; expected 'matrix' or 'vector'")
        if not isinstance(value, list) or any(d not in DTYPES for d in value):
            raise fail(field, f"must be a list of types among {', '.join(DTYPES)}", value)
        out[unit] = frozenset(value)
    return MappingProxyType(out)


def _sources(table: Mapping[str, Any], label: str, fail: Any) -> dict[str, str]:
    """The [sources] table: where each figure comes from, keyed by field name or 'notes'."""
    sources: dict[str, str] = {}
    for key, value in table.items():
        field = f"sources.{key}"
        if key not in _SOURCE_KEYS:
            raise HardwareError(
                f"{label}: unknown key {field!r}; sources are keyed by field name "
                "(e.g. 'dram_bytes_per_s', 'matrix', 'matrix.fp8') or 'notes'"
            )
        if not isinstance(value, str) or not value.strip():
            raise fail(field, "must be a non-empty string", value)
        sources[key] = value.strip()
    return sources


def _positive(value: Any, field: str, *, integer: bool, fail: Any) -> Any:
    """Validate a positive number; integers may be written as integral floats (``50e6``)."""
    what = "a positive integer" if integer else "a positive number"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(field, f"must be {what}", value)
    if not math.isfinite(value) or value <= 0:
        raise fail(field, f"must be {what}", value)
    if integer:
        if isinstance(value, float):
            if not value.is_integer():
                raise fail(field, f"must be {what}", value)
            return int(value)
        return value
    return float(value)
