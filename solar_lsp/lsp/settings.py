"""Server settings: defaults < ``[tool.solar]`` in the workspace's pyproject.toml < the
client's settings (initializationOptions, then ``workspace/configuration`` section ``solar``).

Only the fields that change an analysis go into :meth:`Settings.analysis_key`, so switching
e.g. the debounce never invalidates cached results.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solar_lsp import __version__, units
from solar_lsp.defaults import DEFAULT_CHIP
from solar_lsp.hardware.chips import chip_fingerprint
from solar_lsp.source.symbols import parse_symbols

DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "solar-lsp", "results")

# client/pyproject spelling -> field name
ALIASES = {
    "chip": "chip", "hw": "chip", "hardware": "chip",
    "tf32": "tf32", "dtypePolicy": "tf32", "dtype_policy": "tf32",
    "targetLatency": "target_latency", "target_latency": "target_latency",
    "targetHz": "target_hz", "target_hz": "target_hz",
    "verify": "verify", "verification": "verify",
    "llm": "llm", "llmEnabled": "llm",
    "cacheDir": "cache_dir", "cache_dir": "cache_dir",
    "workers": "workers", "workerCount": "workers",
    "timeout": "timeout_s", "timeoutSeconds": "timeout_s", "timeout_s": "timeout_s",
    "memoryLimit": "memory_limit", "memory_limit": "memory_limit",
    "debounce": "debounce_s", "debounceSeconds": "debounce_s", "debounce_s": "debounce_s",
    "onchip": "onchip",
    "headroomDevice": "headroom_device", "headroom_device": "headroom_device",
    "dims": "dims", "entries": "entries",
    "mode": "mode", "optimizer": "optimizer",
    "targetStepsPerSecond": "target_steps_per_s", "target_steps_per_s": "target_steps_per_s",
    "symbolic": "symbolic", "symbols": "symbols",
}

MODES = ("inference", "train")
OPTIMIZERS = ("adamw", "sgd", "none")


class SettingsError(ValueError):
    """A setting with a value the server cannot use; the message names it."""


@dataclass
class Settings:
    """The server's settings, one field per option (ALIASES gives the spellings it accepts)."""

    chip: str = DEFAULT_CHIP
    tf32: str = "conv"  # conv | all | none
    target_latency: str | None = None  # "2ms"
    target_hz: str | None = None  # "500"
    verify: bool = True
    llm: bool = False
    cache_dir: str = DEFAULT_CACHE
    workers: int = 1
    timeout_s: float = 60.0
    memory_limit: str = "4GB"
    debounce_s: float = 0.75
    onchip: str | None = None
    headroom_device: str = "cpu"  # where Explain headroom measures: cpu | cuda
    dims: dict = field(default_factory=dict)
    entries: dict = field(default_factory=dict)
    mode: str = "inference"  # inference | train (one training step: forward, backward, optimizer)
    optimizer: str = "adamw"  # adamw | sgd | none (train mode)
    target_steps_per_s: float | None = None  # train mode: the inverse roofline's target is 1/steps
    symbolic: bool = False  # fit the counts as formulas of the pragma's symbols (slow: ~20 analyses)
    # module globals get_inputs uses, varied as symbols too: ["batch_size"] or {"batch_size": "B"}
    symbols: list | dict = field(default_factory=list)

    @property
    def target_s(self) -> float | None:
        """The inverse roofline's target in seconds: in train mode 1/steps per second when set,
        else the target latency, else 1/target rate."""
        if self.mode == "train" and self.target_steps_per_s:
            return 1.0 / float(self.target_steps_per_s)
        if self.target_latency:
            return units.parse_latency(str(self.target_latency))
        if self.target_hz:
            return units.parse_hz(str(self.target_hz))
        return None

    @property
    def memory_bytes(self) -> int:
        return units.parse_size(str(self.memory_limit))

    def target_label(self) -> str | None:
        """The target as the lens names it (``2ms``, ``500 Hz``, ``4 steps/s``), or None."""
        if self.mode == "train" and self.target_steps_per_s:
            return f"{float(self.target_steps_per_s):g} steps/s"
        if self.target_hz:
            return f"{self.target_hz} Hz" if str(self.target_hz).replace(".", "").isdigit() else str(self.target_hz)
        if self.target_latency:
            return str(self.target_latency)
        return None

    def analysis_config(self) -> dict:
        """What a worker needs to run ``analyze_file`` (JSON-safe). The optimizer only matters
        in train mode, so changing it leaves inference results cached."""
        return {"hw": [self.chip], "tf32": self.tf32, "target_s": self.target_s,
                "verify": self.verify, "dims": self.dims, "entries": self.entries,
                "onchip": self.onchip, "llm": self.llm, "mode": self.mode,
                "optimizer": self.optimizer if self.mode == "train" else None,
                "symbolic": self.symbolic, "symbols": self.symbols}

    def analysis_key(self) -> str:
        return json.dumps({"v": __version__, "chip_file": chip_fingerprint(self.chip), **self.analysis_config()},
                          sort_keys=True)


def merge(base: Settings, values: dict[str, Any] | None, origin: str) -> Settings:
    """A new Settings with ``values`` applied; unknown keys are ignored, bad values raise."""
    if not values:
        return base
    changes: dict[str, Any] = {}
    for key, value in values.items():
        name = ALIASES.get(key)
        if name is None or value is None:
            continue
        changes[name] = value
    out = dataclasses.replace(base, **changes)
    _check(out, origin)
    return out


def _check(s: Settings, origin: str) -> None:
    if s.tf32 not in ("conv", "all", "none"):
        raise SettingsError(f"{origin}: tf32 must be conv, all or none, got {s.tf32!r}")
    try:
        s.workers = int(s.workers)
        s.timeout_s = float(s.timeout_s)
        s.debounce_s = float(s.debounce_s)
        if s.target_steps_per_s is not None:
            s.target_steps_per_s = float(s.target_steps_per_s)
        _ = s.target_s, s.memory_bytes
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{origin}: {exc}") from exc
    if s.workers < 1:
        raise SettingsError(f"{origin}: workers must be at least 1")
    if s.timeout_s <= 0:
        raise SettingsError(f"{origin}: timeout must be positive")
    if s.mode not in MODES:
        raise SettingsError(f"{origin}: mode must be inference or train, got {s.mode!r}")
    if s.optimizer not in OPTIMIZERS:
        raise SettingsError(f"{origin}: optimizer must be adamw, sgd or none, got {s.optimizer!r}")
    if s.target_steps_per_s is not None and s.target_steps_per_s <= 0:
        raise SettingsError(f"{origin}: targetStepsPerSecond must be positive")
    s.verify, s.llm, s.symbolic = bool(s.verify), bool(s.llm), bool(s.symbolic)
    try:
        parse_symbols(s.symbols)
    except ValueError as exc:
        raise SettingsError(f"{origin}: symbols: {exc}") from exc
    s.cache_dir = os.path.expanduser(str(s.cache_dir))


def find_pyproject(start: str | os.PathLike) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` (a folder, or a file's folder)."""
    p = Path(start).resolve()
    for d in [p, *p.parents] if p.is_dir() else list(p.parents):
        cand = d / "pyproject.toml"
        if cand.is_file():
            return cand
    return None


def pyproject_settings(start: str | os.PathLike) -> tuple[dict, Path | None]:
    """``[tool.solar]`` of the nearest pyproject.toml at or above ``start``."""
    path = find_pyproject(start)
    if path is None:
        return {}, None
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from exc
    tool = data.get("tool", {}).get("solar", {})
    return (tool if isinstance(tool, dict) else {}), path
