"""Human units for FLOPs, bytes and times, and parsing of latency targets."""

from __future__ import annotations

import re


def _scaled(value: float, unit: str, base: float = 1000.0) -> str:
    prefixes = ["", "K", "M", "G", "T", "P", "E"]
    v = float(value)
    i = 0
    while abs(v) >= base and i < len(prefixes) - 1:
        v /= base
        i += 1
    digits = 0 if (i == 0 or abs(v) >= 100) else (1 if abs(v) >= 10 else 2)
    return f"{v:.{digits}f} {prefixes[i]}{unit}"


def flops(n: float) -> str:
    """A FLOP count with an SI prefix (``1.50 GFLOP``), for reports."""
    return _scaled(n, "FLOP")


def nbytes(n: float) -> str:
    """A byte count with an SI prefix (``12.0 MB``), for reports."""
    return _scaled(n, "B")


def rate(n: float, unit: str) -> str:
    """A per-second rate with an SI prefix in the given unit (``2.00 TFLOP/s``)."""
    return _scaled(n, unit)


def seconds(t: float | None) -> str:
    """A duration in the largest unit that keeps it at least 1 (``3.2 ms``); ``—`` for None."""
    if t is None:
        return "—"
    if t == 0:
        return "0 s"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if t >= scale:
            v = t / scale
            return f"{v:.3g} {unit}"
    return "< 1 ns"  # below one clock of any chip: a bound this small says only "negligible"


# framework op names as a user writes them, where the traced name is an internal spelling
_FRIENDLY = {
    "native_batch_norm_legit_no_training": "batch_norm", "native_batch_norm_legit": "batch_norm",
    "native_batch_norm": "batch_norm", "native_layer_norm": "layer_norm",
    "native_group_norm": "group_norm", "scaled_dot_product_flash_attention": "sdpa",
    "scaled_dot_product_efficient_attention": "sdpa", "scaled_dot_product_attention": "sdpa",
    "scaled_dot_product_cudnn_attention": "sdpa", "scaled_dot_product_flash_attention_for_cpu": "sdpa",
    "scaled_dot_product_attention_backward": "sdpa backward",
    "to_copy": "to", "unsafe_view": "view", "log_softmax": "log_softmax", "convolution": "conv",
    "fused_rms_norm": "rms_norm", "embedding_bag": "embedding_bag", "int_mm": "int_mm",
}


def op_name(target: str) -> str:
    """A traced op's name as users know it: ``aten._native_batch_norm_legit.default`` →
    ``batch_norm``; namespace and overload dropped."""
    name = target
    if "." in name:
        parts = name.split(".")
        name = parts[-2] if len(parts) >= 3 else parts[1] if parts[0] in ("aten", "prims") else parts[0]
    name = name.lstrip("_")
    return _FRIENDLY.get(name, name)


def tensor_units(tensor_flops: float, by_unit: dict[str, float] | None) -> str:
    """Where the contraction FLOPs were priced, in words: ``1.07 GFLOP on tensor cores (bf16)``,
    ``524 KFLOP of GEMM/conv at the vector fp32 peak (fp32 without TF32)``, or several joined.
    ``by_unit`` is ``bounds.priced.tensor_flops_by_unit`` (``{"matrix.tf32": n, ...}``; a
    ``vector.X`` key other than fp32 is type X on a chip without a tensor-core path for it); without
    it the unit is not known and the words say only what the FLOPs are."""
    if not tensor_flops:
        return "no GEMM/conv FLOPs"
    if not by_unit:
        return f"{flops(tensor_flops)} of GEMM/conv"
    parts = []
    for key, n in sorted(by_unit.items(), key=lambda kv: (not kv[0].startswith("matrix"), -kv[1])):
        if not n:
            continue
        unit, _, dtype = key.partition(".")
        if unit == "matrix":
            parts.append(f"{flops(n)} on tensor cores ({dtype})")
        elif dtype == "fp32":
            parts.append(f"{flops(n)} of GEMM/conv at the vector fp32 peak (fp32 without TF32)")
        else:
            peak = "fp32" if dtype == "tf32" else dtype
            parts.append(f"{flops(n)} of GEMM/conv at the vector {peak} peak (no {dtype} tensor-core path on this chip)")
    return ", ".join(parts) or f"{flops(tensor_flops)} of GEMM/conv"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 op`` / ``3 ops``."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


_LAT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e-?\d+)?)\s*(s|ms|us|µs|ns)?\s*$", re.I)


def parse_latency(text: str) -> float:
    """'2ms' / '500us' / '0.002' (seconds) -> seconds."""
    m = _LAT.match(text)
    if not m:
        raise ValueError(f"cannot read latency {text!r}; write e.g. 2ms, 500us or 0.002")
    v = float(m.group(1))
    unit = (m.group(2) or "s").lower()
    return v * {"s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}[unit]


def parse_hz(text: str) -> float:
    """'500' / '500Hz' / '2kHz' -> period in seconds."""
    m = re.match(r"^\s*([0-9]*\.?[0-9]+)\s*(hz|khz|mhz)?\s*$", text, re.I)
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"cannot read frequency {text!r}; write e.g. 500 or 2kHz")
    f = float(m.group(1)) * {"hz": 1, "khz": 1e3, "mhz": 1e6}[(m.group(2) or "hz").lower()]
    return 1.0 / f


def parse_size(text: str) -> int:
    """'2GB' / '512MiB' / '4096' (bytes) -> bytes: capacities given on the command line."""
    m = re.match(r"^\s*([0-9]*\.?[0-9]+)\s*(b|kb|mb|gb|tb|kib|mib|gib)?\s*$", text, re.I)
    if not m:
        raise ValueError(f"cannot read size {text!r}; write e.g. 2GB or 512MiB")
    mult = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2**10, "mib": 2**20, "gib": 2**30}
    return int(float(m.group(1)) * mult[(m.group(2) or "b").lower()])
