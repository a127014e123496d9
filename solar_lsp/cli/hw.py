"""``solar hw list`` / ``solar hw show``: print the chip specs and where each figure comes from.

These return exit codes instead of raising so the CLI can ``return hw_show(...)``; a bad chip
name or file is a user error (exit 2) shown as one clear line, not a traceback.
"""

from __future__ import annotations

import json
import os
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from solar_lsp.hardware.chips import DTYPES, UNITS, Chip, HardwareError, list_chips, load_chip

__all__ = ["chip_to_dict", "hw_list", "hw_show"]

EXIT_OK = 0
EXIT_USAGE = 2


def _tera(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e12:,.1f}"


def hw_list(console: Console) -> int:
    """Table of the bundled chips with the figures that decide most bounds."""
    table = Table(title="Bundled chips (dense peaks)", header_style="bold")
    table.add_column("name", style="cyan", no_wrap=True)
    table.add_column("display name")
    table.add_column("DRAM TB/s", justify="right")
    table.add_column("L2 MiB", justify="right")
    table.add_column("bf16 matrix TFLOP/s", justify="right")
    table.add_column("fp32 vector TFLOP/s", justify="right")
    try:
        chips = [load_chip(name) for name in list_chips()]
    except HardwareError as exc:
        _error(console, exc)
        return EXIT_USAGE
    for chip in chips:
        table.add_row(
            chip.name,
            escape(chip.display_name),
            f"{chip.dram_bytes_per_s / 1e12:.2f}",
            f"{chip.l2_bytes / 2**20:.0f}",
            _tera(chip.peak("matrix", "bf16")),
            _tera(chip.peak("vector", "fp32")),
        )
    console.print(table)
    return EXIT_OK


def chip_to_dict(chip: Chip) -> dict[str, Any]:
    """All fields of ``chip`` as plain JSON-serialisable data (SI units, as in the TOML)."""
    return {
        "name": chip.name,
        "display_name": chip.display_name,
        "path": chip.path,
        "clock_hz": chip.clock_hz,
        "sm_count": chip.sm_count,
        "dram_bytes_per_s": chip.dram_bytes_per_s,
        "dram_capacity_bytes": chip.dram_capacity_bytes,
        "l2_bytes": chip.l2_bytes,
        "l2_bytes_per_s": chip.l2_bytes_per_s,
        "warm_l2": chip.warm_l2,
        "smem_per_sm_bytes": chip.smem_per_sm_bytes,
        "onchip_bytes": chip.onchip_bytes,
        "matrix": dict(chip.matrix),
        "vector": dict(chip.vector),
        "sfu": dict(chip.sfu),
        "sources": dict(chip.sources),
    }


def hw_show(name_or_path: str, console: Console, as_json: bool = False) -> int:
    """Every field of one chip with its source; JSON on request. Exit 2 on a bad chip."""
    try:
        chip = load_chip(name_or_path)
    except HardwareError as exc:
        _error(console, exc)
        return EXIT_USAGE
    if as_json:
        # Plain print: no markup, highlighting or wrapping, so the output pipes into jq.
        console.print(
            json.dumps(chip_to_dict(chip), indent=2),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_OK

    console.print(_chip_table(chip))
    if "notes" in chip.sources:
        console.print(f"[bold]notes:[/] {escape(chip.sources['notes'])}")
    return EXIT_OK


def _chip_table(chip: Chip) -> Table:
    table = Table(
        title=f"{escape(chip.display_name)} ({escape(chip.name)})",
        caption=escape(chip.path),
        header_style="bold",
        show_lines=True,
    )
    table.add_column("field", style="cyan", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("source", overflow="fold")

    def row(field: str, value: str) -> None:
        table.add_row(field, value, escape(chip.source(field) or "-"))

    row("clock_hz", f"{chip.clock_hz / 1e9:.3f} GHz")
    row("sm_count", str(chip.sm_count))
    bw = chip.dram_bytes_per_s
    row("dram_bytes_per_s", f"{bw / 1e12:.3f} TB/s" if bw >= 1e12 else f"{bw / 1e9:.1f} GB/s")
    row(
        "dram_capacity_bytes",
        "-" if chip.dram_capacity_bytes is None else f"{chip.dram_capacity_bytes / 1e9:.0f} GB",
    )
    row("l2_bytes", f"{chip.l2_bytes / 2**20:.1f} MiB")
    l2bw = chip.l2_bytes_per_s
    row("l2_bytes_per_s", "-" if l2bw is None else f"{l2bw / 1e12:.2f} TB/s")
    row("smem_per_sm_bytes", f"{chip.smem_per_sm_bytes / 2**10:.0f} KiB")
    for unit in UNITS:
        figures = getattr(chip, unit)
        lines = []
        for dtype in DTYPES:
            if dtype not in figures:
                continue
            if unit == "sfu":
                lines.append(f"{figures[dtype] / 1e12:,.2f} T results/s")
            else:
                suffix = "TOP/s" if dtype == "int8" else "TFLOP/s"
                lines.append(f"{dtype} {figures[dtype] / 1e12:,.1f} {suffix}")
        # One row per unit: the datasheet gives a unit's figures together, so does its source;
        # a per-dtype source ("matrix.fp8") is appended where a file gives one.
        source = [chip.sources.get(unit, "-")]
        source += [
            f"{dtype}: {chip.sources[f'{unit}.{dtype}']}"
            for dtype in DTYPES
            if f"{unit}.{dtype}" in chip.sources
        ]
        table.add_row(unit, "\n".join(lines) or "-", escape("\n".join(source)))
    return table


def _error(console: Console, exc: HardwareError) -> None:
    console.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)


def hw_probe(output: str | None, out: Console, err: Console) -> int:
    """``solar hw probe``: probe this CPU, write its chip file, show it."""
    from solar_lsp.hardware.hostprobe import ensure_host_toml, probe, to_toml
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5 * (os.cpu_count() or 1):
        err.print("[bold yellow]warning:[/bold yellow] [bold]the machine is busy[/bold] (load "
                  f"{load:.1f} on {os.cpu_count()} CPUs): the bandwidth measured now reads low. An "
                  "existing profile keeps its higher figure; a new one can be probed again later")
    with err.status("measuring memory bandwidth (STREAM-like kernels)…"):
        if output:
            with open(output, "w") as f:
                f.write(to_toml(probe()))
            path = output
        else:
            path = ensure_host_toml(refresh=True)
    out.print(f"wrote {path}")
    return hw_show(path, out, False)


def hw_command(args, out: Console, err: Console) -> int:
    """``solar hw list|show|probe``."""
    if args.hw_cmd == "probe":
        return hw_probe(args.output, out, err)
    return hw_list(out) if args.hw_cmd == "list" else hw_show(args.name, out, args.json)
