"""The ``solar`` command line: analyze, hw, graph, ir.

Exit codes: 0 every entry analyzed, 1 some entry failed, 2 bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

from rich.console import Console
from rich.table import Table

from . import __version__, units


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="solar", description="Speed-of-Light bounds for PyTorch code.")
    p.add_argument("--version", action="version", version=f"solar-lsp {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("file")
        sp.add_argument("--entry", help="analyze only this entry (Model, a function or class name)")
        sp.add_argument("--hw", action="append", default=None, metavar="NAME|PATH",
                        help="chip name or TOML path; repeat or comma-separate (default h100-sxm)")
        sp.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                        help="value of a symbolic dim used in pragmas")

    a = sub.add_parser("analyze", help="per-line FLOPs, bytes and SOL times of each entry")
    common(a)
    g = a.add_mutually_exclusive_group()
    g.add_argument("--target-latency", metavar="T", help="inverse roofline for a latency, e.g. 2ms")
    g.add_argument("--target-hz", metavar="F", help="inverse roofline for a rate, e.g. 500")
    a.add_argument("--json", action="store_true", help="one JSON document on stdout")
    a.add_argument("--no-verify", action="store_true", help="skip the numba verification")
    a.add_argument("--budget", default="2GB", help="memory budget of the golden run (default 2GB)")
    a.add_argument("--tf32", choices=["conv", "all", "none"], default="conv",
                   help="which fp32 contractions may use TF32 tensor cores (PyTorch default: conv)")

    gr = sub.add_parser("graph", help="the einsum graph (Graphviz with --dot)")
    common(gr)
    gr.add_argument("--dot", action="store_true", help="write Graphviz text")
    gr.add_argument("-o", "--output", help="file to write (default stdout)")

    ir = sub.add_parser("ir", help="the Affine Loop IR text of each entry")
    common(ir)

    hw = sub.add_parser("hw", help="chip specs")
    hws = hw.add_subparsers(dest="hw_cmd", required=True)
    hws.add_parser("list", help="bundled chips")
    show = hws.add_parser("show", help="one chip with its sources")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    return p


def _hw_names(values: list[str] | None) -> list[str]:
    names: list[str] = []
    for v in values or ["h100-sxm"]:
        names += [x.strip() for x in v.split(",") if x.strip()]
    return names


def _dims(values: list[str]) -> dict:
    dims = {}
    for v in values:
        k, _, val = v.partition("=")
        dims[k.strip()] = int(val)
    return dims


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    args = _parser().parse_args(argv)
    out = Console(soft_wrap=False, width=max(120, Console().width))
    err = Console(stderr=True)
    if args.cmd == "hw":
        from .hw_cli import hw_list, hw_show
        return hw_list(out) if args.hw_cmd == "list" else hw_show(args.name, out, args.json)
    from .hardware import HardwareError, load_chips
    try:
        chips = load_chips(_hw_names(args.hw))
        dims = _dims(args.dim)
    except HardwareError as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
    except ValueError as exc:
        err.print(f"[red]error:[/red] bad --dim: {exc}")
        return 2
    if not os.path.isfile(args.file):
        err.print(f"[red]error:[/red] cannot read {args.file}: no such file")
        return 2
    from .analyze import Config, analyze_file
    from .sol import Policy
    cfg = Config(hw=[c.name for c in chips], entry=args.entry, dims=dims)
    if args.cmd == "analyze":
        try:
            if args.target_latency:
                cfg.target_s = units.parse_latency(args.target_latency)
            elif args.target_hz:
                cfg.target_s = units.parse_hz(args.target_hz)
            cfg.budget_bytes = units.parse_size(args.budget)
        except ValueError as exc:
            err.print(f"[red]error:[/red] {exc}")
            return 2
        cfg.verify = not args.no_verify
        cfg.policy = Policy(tf32_matmul=args.tf32 == "all", tf32_conv=args.tf32 != "none")
    else:
        cfg.verify = False
    if args.cmd == "analyze" and not args.json:
        with err.status("analyzing…"):
            report = analyze_file(args.file, cfg, chips)
    else:
        report = analyze_file(args.file, cfg, chips)
    if report.error:
        if args.cmd == "analyze" and args.json:
            print(json.dumps(report.to_json(), indent=1))
        err.print(f"[red]error:[/red] {report.error}")
        return 2
    if args.cmd == "graph":
        return _graph(report, args, err)
    if args.cmd == "ir":
        return _ir(report, out)
    if args.json:
        print(json.dumps(report.to_json(), indent=1, default=str))
    else:
        render(report, out, chips)
    return 0 if report.ok else 1


def _graph(report, args, err: Console) -> int:
    from .einsum_graph import to_dot
    texts = []
    for e in report.entries:
        g = getattr(e, "einsum_graph", None)
        if g is None:
            err.print(f"[red]error:[/red] {e.name}: {e.error}")
            continue
        if args.dot:
            texts.append(to_dot(g))
        else:
            texts.append(f"{e.name}: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges")
            for n, d in g.nodes(data=True):
                if d["kind"] == "einsum":
                    texts.append(f"  {n}: {d['einsum']}  [{d['unit']}]")
    text = "\n".join(texts)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0 if report.ok else 1


def _ir(report, out: Console) -> int:
    from .ir.text import print_program
    for e in report.entries:
        p = getattr(e, "program", None)
        if p is None:
            print(f"# {e.name}: {e.error}")
            continue
        print(print_program(p))
    return 0 if report.ok else 1


def render(report, console: Console, chips) -> None:
    chip = chips[0]
    for e in report.entries:
        head = f"[bold]{e.name}[/bold] (line {e.line}, {e.frontend})"
        if e.status != "ok":
            where = f" at line {e.error_line}" if e.error_line else ""
            console.print(f"{head}: [red]error{where}[/red]: {e.error}")
            continue
        t = Table(title=f"{head} on {chip.display_name}", title_justify="left")
        for col, j in (("line", "right"), ("ops", "left"), ("FLOPs", "right"), ("bytes", "right"),
                       ("unfused", "right"), ("bound", "left")):
            t.add_column(col, justify=j)
        for ln in e.lines:
            ops = ", ".join(sorted({o.target.replace("aten.", "").rsplit(".", 1)[0] for o in ln.ops}))
            t.add_row(str(ln.line) if ln.line else "?", ops, units.flops(ln.flops), units.nbytes(ln.bytes),
                      units.seconds(ln.t_unfused_s), ln.bound)
        tot = e.totals
        t.add_section()
        t.add_row("total", "", units.flops(tot["flops"]), units.nbytes(tot["bytes_unfused"]),
                  units.seconds(tot["t_unfused_s"]), tot["bound_unfused"])
        console.print(t)
        console.print(f"  fused: {units.seconds(tot['t_fused_s'])} ({tot['bound']}-bound, "
                      f"{units.nbytes(tot['bytes_fused'])} DRAM) · unfused: {units.seconds(tot['t_unfused_s'])}"
                      f" · {units.flops(tot['tensor_flops'])} on matrix units")
        if len(e.by_hardware) > 1:
            for name, h in e.by_hardware.items():
                console.print(f"  {name}: unfused {units.seconds(h['t_unfused_s'])} · fused "
                              f"{units.seconds(h['t_fused_s'])} ({h['bound']})")
        if e.inverse:
            _render_inverse(e.inverse, console)
        v = e.verification
        color = {"verified": "green", "mismatch": "red"}.get(v["status"], "yellow")
        console.print(f"  verification: [{color}]{v['status']}[/{color}] — {v['detail']}")
        for u in e.unsupported:
            console.print(f"  [yellow]unsupported[/yellow] {u['op']} (line {u['line']}): {u['reason']}")


def _render_inverse(inv: dict, console: Console) -> None:
    tgt = inv["target_s"]
    for fid, d in inv["by_fidelity"].items():
        if not d:
            continue
        ok = [c for c, s in d["shortfall"].items() if s["compute"] <= 1 and s["bandwidth"] <= 1]
        console.print(f"  {units.seconds(tgt)} {fid}: needs ≥ {units.rate(d['flops_per_s'], 'FLOP/s')}"
                      f" and ≥ {units.rate(d['bytes_per_s'], 'B/s')}; meets it: {', '.join(ok) or 'none'}")


def run() -> None:
    """Console-script entry: exit without tearing down torch and numba, which costs a cold
    CLI about 1.5 s after the work is done (output is flushed first; nothing else is pending)."""
    try:
        rc = main()
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code if isinstance(exc.code, int) else 2
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == "__main__":
    run()
