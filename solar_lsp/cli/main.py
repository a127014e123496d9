"""The ``solar`` command line: analyze, compare, plot, coverage, hw, graph, ir.

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

from solar_lsp import __version__, units


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
    _onchip_arg(a)
    _llm_args(a)

    gr = sub.add_parser("graph", help="the einsum graph (Graphviz with --dot)")
    common(gr)
    gr.add_argument("--dot", action="store_true", help="write Graphviz text")
    gr.add_argument("-o", "--output", help="file to write (default stdout)")

    ir = sub.add_parser("ir", help="the Affine Loop IR text of each entry")
    common(ir)
    _llm_args(ir)
    _llm_args(gr)

    hr = sub.add_parser("headroom", help="measured runtime against every SOL fidelity, line by line")
    hr.add_argument("file")
    hr.add_argument("--entry", help="measure only this entry")
    hr.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    hr.add_argument("--hw", default=None, metavar="NAME|PATH",
                    help="chip of the bounds (default: the probed host on cpu, the GPU's file on cuda)")
    hr.add_argument("--compile", action="store_true", help="also time the model under torch.compile")
    hr.add_argument("--json", action="store_true", help="one JSON document on stdout")
    hr.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE")
    _llm_args(hr)

    cmp = sub.add_parser("compare", help="the three SOL fidelities of each entry on several chips")
    common(cmp)
    cmp.add_argument("--json", action="store_true", help="one JSON document on stdout")
    _onchip_arg(cmp)
    _llm_args(cmp)

    pl = sub.add_parser("plot", help="roofline plot of every op and the three fidelities (PNG/SVG)")
    common(pl)
    pl.add_argument("-o", "--output", default="roofline.png",
                    help="file to write; .png or .svg (default roofline.png)")
    _onchip_arg(pl)
    _llm_args(pl)

    cov = sub.add_parser("coverage", help="analyze and verify every file of a corpus directory")
    cov.add_argument("dir", help="directory of corpus files (or one file)")
    cov.add_argument("--hw", action="append", default=None, metavar="NAME|PATH",
                     help="chip for the SOL times (default h100-sxm)")
    cov.add_argument("--json", action="store_true", help="one JSON document on stdout")
    cov.add_argument("--no-verify", action="store_true",
                     help="skip verification (then a file passes when analyzed with no unsupported op)")
    cov.add_argument("--timeout", type=float, default=120.0, metavar="S",
                     help="seconds one file may take before it is stopped (default 120; 0: none)")

    hw = sub.add_parser("hw", help="chip specs")
    hws = hw.add_subparsers(dest="hw_cmd", required=True)
    hws.add_parser("list", help="bundled chips")
    probe = hws.add_parser("probe", help="write a chip file for this machine's CPU (used by --hw host)")
    probe.add_argument("-o", "--output", help="where to write the TOML (default: the cache, for --hw host)")
    show = hws.add_parser("show", help="one chip with its sources")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    return p


def _llm_args(sp: argparse.ArgumentParser) -> None:
    """The LLM agent's flags (docs/llm.md); without --llm nothing is sent anywhere."""
    sp.add_argument("--llm", action="store_true",
                    help="let the LLM agent translate what the tracer cannot (sends the code to "
                         "the Anthropic API; needs ANTHROPIC_API_KEY)")
    sp.add_argument("--llm-dry-run", action="store_true",
                    help="print what --llm would send and send nothing")
    sp.add_argument("--llm-model", metavar="ID", help="model id (default claude-sonnet-4-5, "
                                                      "or $SOLAR_LLM_MODEL)")
    sp.add_argument("--llm-rounds", type=int, metavar="N",
                    help="rounds per translation, a failed check feeding back (default 3)")


def _onchip_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--onchip", default="l2", metavar="l2|smem|BYTES",
                    help="on-chip capacity of the cache-aware bound: L2 (default), shared memory x "
                         "SMs, or a size such as 24MB")


def _onchip(text: str) -> str | int:
    """``--onchip``: "l2", "smem" or a size."""
    if text.lower() in ("l2", "smem"):
        return text.lower()
    n = units.parse_size(text)
    if n <= 0:
        raise ValueError(f"--onchip must be positive, got {text!r}")
    return n


def _hw_names(values: list[str] | None) -> list[str]:
    names: list[str] = []
    for v in values or ["h100-sxm"]:
        names += [x.strip() for x in v.split(",") if x.strip()]
    return names


def llm_config(args):
    """The agent's configuration from ``--llm`` / ``--llm-dry-run`` (None without them);
    ValueError for a bad combination."""
    if not hasattr(args, "llm"):
        return None
    if args.llm or args.llm_dry_run:
        from solar_lsp.llm.config import LLMConfig
        return LLMConfig.from_env(model=args.llm_model, max_rounds=args.llm_rounds, dry_run=args.llm_dry_run)
    if args.llm_model or args.llm_rounds is not None:
        raise ValueError("--llm-model and --llm-rounds need --llm or --llm-dry-run")
    return None


def _dims(values: list[str]) -> dict:
    """``--dim NAME=INT`` values; a malformed one raises ValueError saying which."""
    dims = {}
    for v in values:
        k, _, val = v.partition("=")
        try:
            dims[k.strip()] = int(val)
        except ValueError:
            raise ValueError(f"--dim {v!r}: expected NAME=INTEGER") from None
    return dims


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    args = _parser().parse_args(argv)
    out = Console(soft_wrap=False, width=max(120, Console().width))
    err = Console(stderr=True)
    if args.cmd == "hw":
        from solar_lsp.cli.hw import hw_list, hw_probe, hw_show
        if args.hw_cmd == "probe":
            return hw_probe(args.output, out, err)
        return hw_list(out) if args.hw_cmd == "list" else hw_show(args.name, out, args.json)
    if args.cmd == "headroom":
        from solar_lsp.cli.headroom import headroom_command
        return headroom_command(args, out, err)
    if args.cmd == "coverage":
        return _coverage(args, out, err)
    from solar_lsp.hardware.chips import HardwareError, load_chips
    try:
        chips = load_chips(_hw_names(args.hw))
        dims = _dims(args.dim)
    except HardwareError as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
    if not os.path.isfile(args.file):
        err.print(f"[red]error:[/red] cannot read {args.file}: no such file")
        return 2
    from solar_lsp.bounds.sol import Policy
    from solar_lsp.pipeline.analyze import Config, analyze_file
    cfg = Config(hw=[c.name for c in chips], entry=args.entry, dims=dims)
    if getattr(args, "onchip", None) is not None:
        try:
            cfg.onchip = _onchip(args.onchip)
        except ValueError as exc:
            err.print(f"[red]error:[/red] bad --onchip: {exc}")
            return 2
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
    try:
        cfg.llm = llm_config(args)
    except ValueError as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
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
    if args.cmd == "compare":
        return _compare(report, args, out)
    if args.cmd == "plot":
        return _plot(report, args, chips, cfg, out, err)
    if args.json:
        print(json.dumps(report.to_json(), indent=1, default=str))
    else:
        render(report, out, chips)
        from solar_lsp.llm.present import render_llm
        render_llm(report, out)
    return 0 if report.ok else 1


def _coverage(args, out: Console, err: Console) -> int:
    """``solar coverage``: exit 0 only when every entry of every file passed (coverage.py)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from solar_lsp.hardware.chips import HardwareError, load_chips
    from solar_lsp.pipeline.analyze import Config
    from solar_lsp.pipeline.coverage import corpus_files, run_coverage
    try:
        chips = load_chips(_hw_names(args.hw))
    except HardwareError as exc:
        err.print(f"[red]error:[/red] {exc}")
        return 2
    if not os.path.exists(args.dir):
        err.print(f"[red]error:[/red] cannot read {args.dir}: no such file or directory")
        return 2
    files = corpus_files(args.dir)
    cfg = Config(hw=[c.name for c in chips], verify=not args.no_verify)
    if err.is_terminal:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err, transient=True) as bar:
            task = bar.add_task("coverage", total=len(files))

            def progress(i: int, n: int, path: str, res) -> None:
                bar.update(task, completed=i, description=os.path.basename(path))

            result = run_coverage(args.dir, cfg, chips, args.timeout or None, progress, files)
    else:  # CI logs: one line per file, written before it runs, so a crash names its file
        def log(i: int, n: int, path: str, res) -> None:
            if res is None:
                print(f"[{i + 1}/{n}] {path}", file=sys.stderr, flush=True)

        result = run_coverage(args.dir, cfg, chips, args.timeout or None, log, files)
    if args.json:
        print(json.dumps(result.to_json(), indent=1, default=str))
    else:
        _render_coverage(result, out)
    return result.exit_code


def _render_coverage(result, console: Console) -> None:
    t = Table(title=f"coverage of {result.root} ({result.hardware})", title_justify="left")
    for col in ("file", "entries", "analyzed", "verified", "unsupported", "time", "problem"):
        t.add_column(col, justify="left" if col in ("file", "problem") else "right")
    for f in result.files:
        ok = f.passed(result.verify)
        problems = f.errors + [f"{u['op']} (line {u['line']}): {u['reason']}" for u in f.unsupported]
        problems += [f"{e.name}: {e.verification}: {e.detail}" for e in f.entries
                     if e.status == "ok" and e.verification != "verified" and result.verify]
        name = os.path.relpath(f.file, result.root) if os.path.isdir(result.root) else f.file
        t.add_row(f"[{'green' if ok else 'red'}]{name}[/]", str(len(f.entries)), str(f.analyzed),
                  str(f.verified), str(len(f.unsupported)), units.seconds(f.seconds),
                  (problems[0][:100] if problems else ""))
    console.print(t)
    s = result.summary()
    console.print(f"{s['files_passed']}/{s['files']} files passed · {s['entries']} entries · "
                  f"{s['analyzed']} analyzed · {s['verified']} verified · time per file median "
                  f"{units.seconds(s['time_median_s'])}, p95 {units.seconds(s['time_p95_s'])}")
    for op, k in s["unsupported_ops"].items():
        console.print(f"  [yellow]unsupported[/yellow] {op}: {k['count']}× in {len(k['files'])} file(s)")


def _graph(report, args, err: Console) -> int:
    from solar_lsp.bounds.einsum_graph import to_dot
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


def _compare(report, args, out: Console) -> int:
    from solar_lsp.pipeline import compare
    if args.json:
        print(json.dumps(compare.to_json(report), indent=1, default=str))
    else:
        compare.render(report, out)
    return 0 if report.ok else 1


def _plot(report, args, chips, cfg, out: Console, err: Console) -> int:
    from solar_lsp.pipeline.plot import roofline
    if not args.output.lower().endswith((".png", ".svg", ".pdf")):
        err.print(f"[red]error:[/red] -o must end in .png, .svg or .pdf: {args.output}")
        return 2
    try:
        roofline(report, chips, args.output, cfg.policy)
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write {args.output}: {exc.strerror or exc}")
        return 2
    out.print(f"wrote {args.output}")
    return 0 if report.ok else 1


def _ir(report, out: Console) -> int:
    from solar_lsp.ir.text import print_program
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
                      f"{units.nbytes(tot['bytes_fused'])} DRAM) · cache-aware: "
                      f"{units.seconds(tot.get('t_cache_aware_s'))} ({_nb(tot.get('bytes_cache_aware'))} DRAM"
                      f" in {_nb(tot.get('onchip_bytes'))} on chip) · unfused: {units.seconds(tot['t_unfused_s'])}"
                      f" · {units.flops(tot['tensor_flops'])} on matrix units")
        if len(e.by_hardware) > 1:
            for name, h in e.by_hardware.items():
                console.print(f"  {name}: unfused {units.seconds(h['t_unfused_s'])} · fused "
                              f"{units.seconds(h['t_fused_s'])} · cache-aware "
                              f"{units.seconds(h.get('t_cache_aware_s'))} ({h['bound']})")
        _render_suggestions(e, console)
        if e.inverse:
            _render_inverse(e.inverse, console)
        v = e.verification
        color = {"verified": "green", "mismatch": "red"}.get(v["status"], "yellow")
        console.print(f"  verification: [{color}]{v['status']}[/{color}] — {v['detail']}")
        for u in e.unsupported:
            console.print(f"  [yellow]unsupported[/yellow] {u['op']} (line {u['line']}): {u['reason']}")
        for n in getattr(e, "notes", []):  # loop trip counts, the cond branch counted (docs/jax.md)
            console.print(f"  note (line {n['line']}): {n['note']}", markup=False)


def _nb(n) -> str:
    return units.nbytes(n) if n is not None else "—"


def _render_suggestions(e, console: Console, limit: int = 3) -> None:
    """The top fusion and reorder suggestions of an entry, a line each."""
    for f in e.fusion[:limit]:
        lines = ",".join(str(x) for x in f["lines"])
        console.print(f"  [cyan]fuse[/cyan] lines {lines}: {f['pattern']} — saves "
                      f"{units.nbytes(f['bytes_saved'])} DRAM, {units.seconds(f['t_saved_s'])}")
    if len(e.fusion) > limit:
        console.print(f"  … {len(e.fusion) - limit} more fusion suggestions (--json)")
    for r in e.reorder[:limit]:
        console.print(f"  [cyan]reorder[/cyan] line {r['line']}: {units.flops(r['flops_before'])} → "
                      f"{units.flops(r['flops_after'])} as {r['expression']}")


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
