"""Short dtype names of the IR text form (``f32``, ``bf16``, ...) and the canonical
torch-style names they stand for; shared by the printer, the parser and the prompts."""

from __future__ import annotations

DTYPE_SHORT: dict[str, str] = {
    "float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16",
    "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
    "bool": "bool",
}
DTYPE_CANONICAL: dict[str, str] = {v: k for k, v in DTYPE_SHORT.items()}
