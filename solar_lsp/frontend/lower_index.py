"""Lowerings registered into torch_lower.LOWERINGS (family module; see torch_lower)."""

from __future__ import annotations
