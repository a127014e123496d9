"""A worker process: the only place the server runs user code.

Started by :mod:`solar_lsp.lsp.pool` with torch (and the engine) imported before any job
arrives. Requests come as JSON lines on stdin; replies go as JSON lines on a private copy of
the original stdout, while file descriptor 1 is pointed at stderr so nothing user code
prints can corrupt the protocol. ``faulthandler`` writes the Python stack to stderr on a
crash and shortly before the server's timeout, so the server can say which line hung or
crashed. The address-space limit makes an oversized allocation fail inside the job (with a
message) instead of taking the machine down.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import json
import os
import resource
import sys
import tempfile
import time
import traceback
from typing import Any

from solar_lsp.defaults import DEFAULT_CHIP
from solar_lsp.source.usercode import forget_user_modules, user_module_files

# The engine is imported inside the functions that use it, not here: this module must import
# with the standard library alone, so that a worker interpreter without the engine's
# dependencies fails in main()'s timed warm-up with the real reason (no torch), after stdout
# was moved aside.


def _vm_size() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _limit_memory(extra: int) -> int:
    """Cap the address space at what warm-up mapped plus ``extra`` bytes."""
    if extra <= 0:
        return 0
    cap = _vm_size() + extra
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return cap


def _config(d: dict, entry: str | None, path: str | None = None):
    from solar_lsp.bounds.sol import Policy
    from solar_lsp.pipeline.analyze import Config
    from solar_lsp.source.symbols import file_symbols
    cfg = Config(hw=list(d.get("hw") or [DEFAULT_CHIP]), entry=entry, target_s=d.get("target_s"),
                 verify=bool(d.get("verify", True)), dims=dict(d.get("dims") or {}),
                 entries=dict(d.get("entries") or {}))
    cfg.mode = d.get("mode") or "inference"  # train: one training step (docs/training.md)
    cfg.optimizer = d.get("optimizer") or cfg.optimizer
    tf32 = d.get("tf32", "conv")
    cfg.policy = Policy(tf32_matmul=tf32 == "all", tf32_conv=tf32 != "none")
    if d.get("onchip") is not None and hasattr(cfg, "onchip"):
        cfg.onchip = d["onchip"]
    if d.get("budget_bytes"):
        cfg.budget_bytes = int(d["budget_bytes"])
        cfg.budget_max_bytes = max(cfg.budget_bytes, cfg.budget_max_bytes)
    if path and d.get("symbols"):  # module globals the project varies as shape symbols
        cfg.symbols = file_symbols(path, d["symbols"])
    if d.get("llm"):  # the user's opt-in (setting `llm`); the key comes from the environment
        from solar_lsp.llm.config import LLMConfig
        cfg.llm = LLMConfig.from_env()
    return cfg


class Worker:
    """Runs one request at a time and writes its messages as JSON lines to ``out``."""

    def __init__(self, out) -> None:
        self.out = out

    def send(self, msg: dict[str, Any]) -> None:
        self.out.write(json.dumps(msg, default=str) + "\n")
        self.out.flush()

    def handle(self, req: dict) -> None:
        kind = req.get("kind", "analyze")
        rid = req.get("id")
        path, origin = req["path"], req.get("origin") or req["path"]
        folder = os.path.dirname(os.path.abspath(origin))
        if folder not in sys.path:
            sys.path.insert(0, folder)  # the user's sibling modules import as they would there
        timeout = float(req.get("timeout_s") or 0)
        if timeout > 1:
            faulthandler.dump_traceback_later(timeout * 0.9, exit=False)
        t0 = time.perf_counter()
        importlib.invalidate_caches()  # a sibling module created since the last job is found
        try:
            if kind == "analyze":
                self._analyze(rid, path, origin, req)
            elif kind == "ir":
                self._ir(rid, path, req)
            elif kind == "roofline":
                self._roofline(rid, path, req)
            elif kind == "headroom":
                self._headroom(rid, path, origin, req)
            elif kind == "sol_at":
                self._sol_at(rid, path, req)
            else:
                self.send({"type": "error", "id": rid, "message": f"unknown job kind {kind!r}"})
        except MemoryError:
            self.send({"type": "error", "id": rid, "message": "ran out of memory (the worker's "
                       "memory limit; raise solar.memoryLimit if the model needs more)"})
        except Exception as exc:  # an engine bug: report it, keep serving
            self.send({"type": "error", "id": rid, "message": f"{type(exc).__name__}: {exc}",
                       "traceback": traceback.format_exc(limit=8)})
        finally:
            faulthandler.cancel_dump_traceback_later()
            forget_user_modules()
        sys.stderr.write(f"solar worker: job {rid} ({kind}) {time.perf_counter() - t0:.2f} s\n")
        sys.stderr.flush()

    def _analyze(self, rid: Any, path: str, origin: str, req: dict) -> None:
        from solar_lsp.hardware.chips import load_chips
        from solar_lsp.pipeline.analyze import analyze_file
        entries = req.get("entries")
        entry = entries[0] if entries and len(entries) == 1 else None
        cfg = _config(req.get("config") or {}, entry, path)
        chips = load_chips(cfg.hw)

        def bounds_of(er) -> None:
            self.send({"type": "bounds", "id": rid, "report": _relabel(
                {"file": origin, "error": None, "entries": [er.to_json()]}, path, origin)})

        cfg.on_bounds = bounds_of
        report = analyze_file(path, cfg, chips)
        if (req.get("config") or {}).get("symbolic") and not report.error:
            from solar_lsp.pipeline.symbolic_costs import add_symbolic  # sympy: only when asked
            add_symbolic(report, path, cfg, chips)
        doc = _relabel(report.to_json(), path, origin)
        if entries and len(entries) > 1:
            doc["entries"] = [e for e in doc["entries"] if e["name"] in entries]
        files = sorted(f for f in user_module_files() if f not in (os.path.realpath(path),
                                                                  os.path.realpath(origin)))
        self.send({"type": "result", "id": rid, "report": doc, "sources": files})

    def _ir(self, rid: Any, path: str, req: dict) -> None:
        from solar_lsp.ir.text import print_program
        from solar_lsp.pipeline.analyze import analyze_file
        cfg = _config({**(req.get("config") or {}), "verify": False}, (req.get("entries") or [None])[0])
        report = analyze_file(path, cfg)
        texts = []
        for e in report.entries:
            p = getattr(e, "program", None)
            texts.append(print_program(p) if p is not None else f"# {e.name}: {e.error}")
        self.send({"type": "result", "id": rid, "text": "\n\n".join(texts),
                   "error": report.error})


    def _roofline(self, rid: Any, path: str, req: dict) -> None:
        from solar_lsp.hardware.chips import load_chips
        from solar_lsp.pipeline.analyze import analyze_file
        from solar_lsp.pipeline.plot import roofline  # imports matplotlib
        cfg = _config({**(req.get("config") or {}), "verify": False}, (req.get("entries") or [None])[0])
        report = analyze_file(path, cfg)
        if report.error or not any(e.status == "ok" for e in report.entries):
            self.send({"type": "result", "id": rid, "svg": "", "error": report.error or
                       "; ".join(f"{e.name}: {e.error}" for e in report.entries) or "no entry"})
            return
        with tempfile.TemporaryDirectory() as d:
            out = roofline(report, load_chips(cfg.hw), os.path.join(d, "roofline.svg"), cfg.policy)
            with open(out, encoding="utf-8") as f:
                svg = f.read()
        self.send({"type": "result", "id": rid, "svg": svg, "error": None})

    def _sol_at(self, rid: Any, path: str, req: dict) -> None:
        """The "SOL at S=…" lens: the entry's formulas (fitted now unless the request carries
        them) evaluated at ``sizes``, and the entry analyzed at those sizes (all three
        fidelities, the cache-aware one included, which has no formula)."""
        from solar_lsp.hardware.chips import load_chips
        from solar_lsp.lsp.sizes import evaluate_formulas
        from solar_lsp.pipeline.analyze import analyze_file
        from solar_lsp.pipeline.symbolic_costs import add_symbolic, entry_evaluator
        name = (req.get("entries") or [None])[0]
        cfg = _config({**(req.get("config") or {}), "verify": False}, name, path)
        chips = load_chips(cfg.hw)
        out: dict[str, Any] = {"type": "result", "id": rid, "symbolic": req.get("symbolic"), "lines": None}
        if not out["symbolic"]:
            report = analyze_file(path, cfg, chips)
            er = report.entries[0] if report.entries else None
            if report.error or er is None or er.status != "ok":
                self.send({"type": "error", "id": rid, "message": report.error or
                           (er.error if er else f"no entry {name}")})
                return
            add_symbolic(report, path, cfg, chips)
            out["symbolic"] = er.symbolic
            out["lines"] = {str(ln.line): ln.symbolic for ln in er.lines if ln.line}
        sizes = req.get("sizes") or {}
        if sizes:
            out["formulas_at"] = evaluate_formulas(out["symbolic"], sizes, chips[0].dram_bytes_per_s)
            _, analyze = entry_evaluator(path, name, cfg, chips)
            if analyze is None:
                out["analysis_at"] = {"error": f"no entry {name} in the file"}
            else:
                try:
                    out["analysis_at"] = {"totals": analyze({**out["formulas_at"]["sizes"], **sizes}).totals}
                except RuntimeError as exc:
                    out["analysis_at"] = {"error": str(exc)}
        self.send(out)

    def _headroom(self, rid: Any, path: str, origin: str, req: dict) -> None:
        from solar_lsp.measure.headroom import HeadroomError, headroom_file
        d = req.get("config") or {}
        entry = (req.get("entries") or [None])[0]
        device = d.get("device", "cpu")
        limit = resource.getrlimit(resource.RLIMIT_AS)
        if device == "cuda":  # the CUDA driver reserves far more address space than it uses
            resource.setrlimit(resource.RLIMIT_AS, (limit[1], limit[1]))
        try:
            report = headroom_file(path, device, d.get("headroom_hw"), entry,
                                   bool(d.get("compile")), _config(d, entry))
        except HeadroomError as exc:
            self.send({"type": "error", "id": rid, "message": str(exc)})
            return
        finally:
            # the cap comes back unless the driver's mappings already exceed it (then a new
            # mapping would fail in later jobs; the worker stays uncapped, and says so)
            if device == "cuda":
                if _vm_size() < limit[0]:
                    resource.setrlimit(resource.RLIMIT_AS, limit)
                else:
                    sys.stderr.write("solar worker: address-space cap left off after CUDA start-up\n")
        self.send({"type": "result", "id": rid, "report": _relabel(report.to_json(), path, origin)})


def _relabel(doc: dict, path: str, origin: str) -> dict:
    """Results of an unsaved buffer (analyzed from a temp copy) carry the real file name."""
    if doc.get("file") == path:
        doc["file"] = origin
    return doc


def main(argv: list[str] | None = None) -> None:
    """Warm up (torch, the tracer, the verifier), then serve requests from stdin until exit."""
    ap = argparse.ArgumentParser(prog="solar-lsp-worker")
    ap.add_argument("--memory", type=int, default=0, help="bytes of address space beyond warm-up")
    ap.add_argument("--jax", action="store_true", help="also import jax while warming up")
    args = ap.parse_args(argv)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    faulthandler.enable()
    import warnings
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    import torch  # noqa: F401

    from solar_lsp.frontend.torch.trace import warm_up
    from solar_lsp.ir import execute
    from solar_lsp.pipeline import analyze  # noqa: F401
    from solar_lsp.verify import check_torch  # noqa: F401  (the golden run)
    warm_up()
    execute.warm_up()  # numba's import and CPU target (ir/execute.py: tiered execution)
    if args.jax:
        try:
            import jax  # noqa: F401
        except ImportError:
            pass
    cap = _limit_memory(args.memory)
    w = Worker(out)
    w.send({"type": "ready", "pid": os.getpid(), "warmup_s": time.perf_counter() - t0, "as_limit": cap})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except json.JSONDecodeError:
            w.send({"type": "error", "id": None, "message": "bad request"})
            continue
        if req.get("kind") == "exit":
            break
        w.handle(req)
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
