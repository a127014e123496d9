"""The ``solar`` argument parser and the parsing of option values every command shares."""

from __future__ import annotations

import argparse
import pathlib

from solar_lsp import __version__, units
from solar_lsp.defaults import (
    DEFAULT_ANALYZE_TIMEOUT_S,
    DEFAULT_BUDGET_BYTES,
    DEFAULT_BUDGET_MAX_BYTES,
    DEFAULT_CHIP,
    DEFAULT_FILE_TIMEOUT_S,
)


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand with its options (README: "Other commands")."""
    p = argparse.ArgumentParser(
        prog="solar",
        description="Speed-of-Light bounds for PyTorch and JAX (and Flax) code: per-line FLOPs, "
                    "DRAM bytes and the minimum time on a chip, verified against the framework.")
    p.add_argument("--version", action="version", version=f"solar-lsp {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    _analyze_parser(sub)
    gr = sub.add_parser("graph", help="the einsum graph (Graphviz with --dot)")
    _file_args(gr)
    gr.add_argument("--dot", action="store_true", help="write Graphviz text")
    gr.add_argument("-o", "--output", help="file to write (default stdout)")
    ir = sub.add_parser("ir", help="the Affine Loop IR text of each entry")
    _file_args(ir)
    llm_args(ir)
    llm_args(gr)
    _headroom_parser(sub)
    cmp = sub.add_parser("compare", help="the three SOL fidelities of each entry on several chips")
    _file_args(cmp)
    cmp.add_argument("--json", action="store_true", help="one JSON document on stdout")
    onchip_arg(cmp)
    llm_args(cmp)
    pl = sub.add_parser("plot", help="roofline plot of every op and the three fidelities (PNG/SVG)")
    _file_args(pl)
    pl.add_argument("-o", "--output", default="roofline.png",
                    help="file to write; .png or .svg (default roofline.png)")
    pl.add_argument("--sweep", metavar="SYM=LO..HI",
                    help="SOL time per fidelity against a pragma symbol, e.g. S=128..8192 (log-log, "
                         "compute/memory crossover marked)")
    pl.add_argument("--symbol", action="append", default=[], metavar="GLOBAL[=NAME]",
                    help="a module global read by get_inputs/get_init_inputs (batch_size) as a "
                         "shape symbol --sweep can name (NAME=LO..HI)")
    onchip_arg(pl)
    llm_args(pl)
    _coverage_parser(sub)
    _hw_parser(sub)
    return p


def _file_args(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("file")
    sp.add_argument("--entry", help="analyze only this entry (Model, a function or class name)")
    sp.add_argument("--hw", action="append", default=None, metavar="NAME|PATH",
                    help=f"chip name or TOML path; repeat or comma-separate (default {DEFAULT_CHIP})")
    sp.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                    help="value of a symbolic dim used in pragmas")
    sp.add_argument("--timeout", type=float, default=DEFAULT_ANALYZE_TIMEOUT_S, metavar="S",
                    help=f"stop after S seconds (an endless loop in the code; default "
                         f"{DEFAULT_ANALYZE_TIMEOUT_S:g}; 0: none)")
    mode_args(sp)


def mode_args(sp: argparse.ArgumentParser) -> None:
    """``--mode``, ``--optimizer``, ``--loss``, ``--params``: what is analyzed
    (docs/training.md)."""
    sp.add_argument("--mode", choices=["inference", "train"], default="inference",
                    help="inference: the entry's forward (default); train: one training step "
                         "(forward, backward of the loss, optimizer update)")
    sp.add_argument("--optimizer", choices=["adamw", "sgd", "none"], default=None,
                    help="train mode: the update of every trainable parameter, torch.optim "
                         "defaults (default adamw; none: forward and backward only)")
    sp.add_argument("--loss", choices=["mean", "sum"], default=None,
                    help="train mode: the scalar reduced from the entry's output (default mean)")
    sp.add_argument("--params", action="append", default=None, metavar="NAME[,NAME]",
                    help="train mode, a plain JAX function: the arguments to differentiate "
                         "(default: its pragma's params=(...), else every floating-point "
                         "argument after the first)")


def mode_config(args, cfg) -> None:
    """Set ``cfg.mode``, ``cfg.optimizer``, ``cfg.loss``, ``cfg.params`` from the options;
    ValueError when --optimizer, --loss or --params come without --mode train, or a --params
    name is not an identifier."""
    mode = getattr(args, "mode", "inference")
    given = [f"--{n}" for n in ("optimizer", "loss", "params") if getattr(args, n, None) is not None]
    if mode != "train" and given:
        verb = "apply" if len(given) > 1 else "applies"
        raise ValueError(f"{' and '.join(given)} only {verb} to a training step: add --mode train")
    cfg.mode = mode
    cfg.optimizer = getattr(args, "optimizer", None) or "adamw"
    cfg.loss = getattr(args, "loss", None) or "mean"
    cfg.params = parse_params(getattr(args, "params", None))


def parse_params(values: list[str] | None) -> tuple[str, ...] | None:
    """``--params`` values (repeated and/or comma-separated) as argument names, in order and
    without repeats; None when not given; ValueError for one that is not an identifier."""
    if values is None:
        return None
    names = [x.strip() for v in values for x in v.split(",")]
    bad = [n for n in names if not n.isidentifier()]
    if bad or not names:
        raise ValueError(f"--params {','.join(values)!r}: expected argument names, e.g. "
                         "--params w1,b1")
    return tuple(dict.fromkeys(names))


def _analyze_parser(sub) -> None:
    a = sub.add_parser("analyze", help="per-line FLOPs, bytes and SOL times of each entry")
    _file_args(a)
    g = a.add_mutually_exclusive_group()
    g.add_argument("--target-latency", metavar="T", help="inverse roofline for a latency, e.g. 2ms")
    g.add_argument("--target-hz", metavar="F", help="inverse roofline for a rate, e.g. 500")
    a.add_argument("--json", action="store_true", help="one JSON document on stdout")
    a.add_argument("--no-verify", action="store_true", help="skip the numba verification")
    a.add_argument("--budget", default=str(DEFAULT_BUDGET_BYTES),
                   help=f"memory a verified run aims at: larger problems verify at a reduced size "
                        f"(default {DEFAULT_BUDGET_BYTES / 2**30:g} GiB)")
    a.add_argument("--budget-max", default=str(DEFAULT_BUDGET_MAX_BYTES),
                   help="the budget for an entry no reduced size of which fits --budget (weights "
                        f"that do not shrink; default {DEFAULT_BUDGET_MAX_BYTES / 2**30:g} GiB; "
                        "equal to --budget for a hard limit)")
    a.add_argument("--tf32", choices=["conv", "all", "none"], default="conv",
                   help="which fp32 contractions may use TF32 tensor cores (PyTorch default: conv)")
    a.add_argument("--symbolic", action="store_true",
                   help="also FLOPs, bytes and times as formulas of the pragma's shape symbols "
                        "(fitted from up to 30 re-analyses at small sizes)")
    a.add_argument("--symbol", action="append", default=[], metavar="GLOBAL[=NAME]",
                   help="a module global read by get_inputs/get_init_inputs (batch_size) as a "
                        "shape symbol, named NAME in the formulas; implies --symbolic")
    onchip_arg(a)
    llm_args(a)


def _headroom_parser(sub) -> None:
    hr = sub.add_parser("headroom", help="measured runtime against every SOL fidelity, line by line")
    hr.add_argument("file")
    hr.add_argument("--entry", help="measure only this entry")
    hr.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    hr.add_argument("--hw", default=None, metavar="NAME|PATH",
                    help="chip of the bounds (default: the probed host on cpu, the GPU's file on cuda)")
    hr.add_argument("--compile", action="store_true", help="also time the model under torch.compile")
    hr.add_argument("--json", action="store_true", help="one JSON document on stdout")
    hr.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE")
    llm_args(hr)


def _coverage_parser(sub) -> None:
    cov = sub.add_parser("coverage", help="analyze and verify every file of a corpus directory")
    cov.add_argument("dir", help="directory of corpus files (or one file)")
    cov.add_argument("--hw", action="append", default=None, metavar="NAME|PATH",
                     help=f"chip for the SOL times (default {DEFAULT_CHIP})")
    cov.add_argument("--json", action="store_true", help="one JSON document on stdout")
    cov.add_argument("--no-verify", action="store_true",
                     help="skip verification (then a file passes when analyzed with no unsupported op)")
    cov.add_argument("--timeout", type=float, default=DEFAULT_FILE_TIMEOUT_S, metavar="S",
                     help=f"seconds one file may take before it is stopped "
                          f"(default {DEFAULT_FILE_TIMEOUT_S:g}; 0: none)")


def _hw_parser(sub) -> None:
    hw = sub.add_parser("hw", help="chip specs")
    hws = hw.add_subparsers(dest="hw_cmd", required=True)
    hws.add_parser("list", help="bundled chips")
    probe = hws.add_parser("probe", help="write a chip file for this machine's CPU (used by --hw host)")
    probe.add_argument("-o", "--output", help="where to write the TOML (default: the cache, for --hw host)")
    show = hws.add_parser("show", help="one chip with its sources")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")


def llm_args(sp: argparse.ArgumentParser) -> None:
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


def onchip_arg(sp: argparse.ArgumentParser) -> None:
    """``--onchip``: the capacity the cache-aware bound may keep data in."""
    sp.add_argument("--onchip", default="l2", metavar="l2|smem|BYTES",
                    help="on-chip capacity of the cache-aware bound: L2 (default), shared memory x "
                         "SMs, or a size such as 24MB")


def parse_onchip(text: str) -> str | int:
    """``--onchip``: "l2", "smem" or a size."""
    if text.lower() in ("l2", "smem"):
        return text.lower()
    n = units.parse_size(text)
    if n <= 0:
        raise ValueError(f"--onchip must be positive, got {text!r}")
    return n


def hw_names(values: list[str] | None) -> list[str]:
    """``--hw`` values (repeated and/or comma-separated) as a list; the default chip if none."""
    names: list[str] = []
    for v in values or [DEFAULT_CHIP]:
        names += [x.strip() for x in v.split(",") if x.strip()]
    return names


def llm_config(args):
    """The agent's configuration from ``--llm`` / ``--llm-dry-run`` (None without them);
    ValueError for a bad combination."""
    if not hasattr(args, "llm"):
        return None
    if args.llm or args.llm_dry_run:
        from solar_lsp.llm.config import LLMConfig  # the SDK only when asked for
        return LLMConfig.from_env(model=args.llm_model, max_rounds=args.llm_rounds, dry_run=args.llm_dry_run)
    if args.llm_model or args.llm_rounds is not None:
        raise ValueError("--llm-model and --llm-rounds need --llm or --llm-dry-run")
    return None


def parse_sweep(text: str) -> tuple[str, int, int]:
    """``--sweep S=128..8192``: (symbol, low, high); ValueError saying what is wrong."""
    name, eq, rng = text.partition("=")
    lo, dots, hi = rng.partition("..")
    try:
        a, b = int(lo), int(hi)
    except ValueError:
        raise ValueError(f"--sweep {text!r}: expected SYMBOL=LOW..HIGH, e.g. S=128..8192") from None
    if not eq or not dots or not name.strip().isidentifier() or not 0 < a < b:
        raise ValueError(f"--sweep {text!r}: expected SYMBOL=LOW..HIGH with 0 < LOW < HIGH")
    return name.strip(), a, b


def parse_dims(values: list[str]) -> dict:
    """``--dim NAME=INT`` values; a malformed one raises ValueError saying which."""
    dims = {}
    for v in values:
        k, _, val = v.partition("=")
        try:
            dims[k.strip()] = int(val)
        except ValueError:
            raise ValueError(f"--dim {v!r}: expected NAME=INTEGER") from None
    return dims


def shadowed_chip_warnings(chips) -> list[str]:
    """One rule for every command: a chip file the user names is used as given, even when its
    ``name`` is a bundled chip's; say so, since the two are easy to mix up in the output."""
    from solar_lsp.hardware.chips import hardware_dir, list_chips
    bundled = {str(p.resolve()) for p in hardware_dir().glob("*.toml")}
    names = set(list_chips())
    return [f"{c.path} calls itself {c.name!r}, the name of a bundled chip: this run uses the "
            f"file's figures for {c.name!r} everywhere; give the file another name to tell the "
            "two apart" for c in chips
            if c.name in names and c.path and str(pathlib.Path(c.path).resolve()) not in bundled]
