"""Where the agent meets the pipeline: after a trace failure (whole entry) and after lowering
(per node). Called from :mod:`solar_lsp.pipeline.analyze`; without opt-in they only say which
entries or ops would need the agent, and nothing is sent.

An accepted translation becomes ordinary IR: the whole-entry program is handed back and goes
through the pipeline's one tail (graph, counts, SOL) like tracer output; a per-node op is
inserted into the traced program in graph order, so the bounds and the entry's verification
include it. Ops from the agent carry ``note="llm"`` and are reported with ``"source": "llm"``.
"""

from __future__ import annotations

import logging
import os
import re
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from solar_lsp.ir.core import Program
from solar_lsp.ir.text import IRSyntaxError, parse_program
from solar_lsp.ir.validate import IRValidationError, validate_program
from solar_lsp.llm.agent import Translation, translate
from solar_lsp.llm.cache import TranslationCache, key, source_hash
from solar_lsp.llm.check import Check, GoldenError, check_entry, check_node, entry_golden
from solar_lsp.llm.config import LLMConfig
from solar_lsp.llm.prompt import NodeTask, entry_message, node_message, ttype
from solar_lsp.llm.transport import make_client
from solar_lsp.source.discover import Entry
from solar_lsp.source.usercode import sources_digest

if TYPE_CHECKING:
    from solar_lsp.frontend.errors import Lowered
    from solar_lsp.frontend.torch.trace import Traced

log = logging.getLogger("solar_lsp.llm")


@dataclass
class AgentResult:
    """What the agent step hands back to the pipeline.

    ``summary`` is the report's ``llm`` field (``needed``, or what was asked and answered);
    ``asked`` says whether the agent step did real work (timed as ``llm_s``). For a whole
    entry, ``program`` is the accepted IR and ``verification`` its status; for nodes,
    ``filled`` lists the (op, line) pairs the agent's ops now cover.
    """

    summary: dict | None
    asked: bool = False
    program: Program | None = None
    verification: dict | None = None
    eager_flops: int | None = None
    filled: list[tuple[str, int | None]] = field(default_factory=list)

ENTRY_STAGES = ("trace", "build")  # failures the agent can take over (not import errors)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


class _Client:
    """Makes the SDK client on first use, so a dry run or a cache hit never needs a key."""

    def __init__(self, cfg: LLMConfig):
        self.cfg = cfg
        self.client: Any = None

    def __call__(self) -> Any:
        if self.client is None:
            self.client = make_client(self.cfg)
        return self.client


def _summary(mode: str, trs: list[Translation], extra: dict | None = None) -> dict:
    from solar_lsp.llm.pricing import Usage
    usage = Usage()
    cost = 0.0
    priced = True
    for t in trs:
        usage += t.usage
        c = t.cost_usd
        if c is None and t.usage.requests:
            priced = False
        cost += c or 0.0
    statuses = {t.status for t in trs} - {"skipped"}
    status = "skipped" if not statuses else ("accepted" if statuses == {"accepted"} else "dry-run" if "dry-run" in statuses
              else "error" if "error" in statuses else "partial" if "accepted" in statuses
              else "rejected")
    out = {"status": status, "mode": mode, "model": trs[0].model if trs else None,
           "usage": usage.to_json(), "cost_usd": cost if priced else None,
           "translations": [t.to_json() for t in trs]}
    if extra:
        out.update(extra)
    return out


# ------------------------------------------------------------------------------ whole entry


def after_trace_failure(module: types.ModuleType, entry: Entry, path: str, config: Any,
                        exc: Exception) -> AgentResult | None:
    """The entry could not be traced: ask the agent for the whole entry when opted in."""
    if getattr(exc, "stage", None) not in ENTRY_STAGES or module is None:
        return None
    cfg: LLMConfig | None = getattr(config, "llm", None)
    if cfg is None:
        if user_bug(exc, path):  # the agent cannot fix the user's own error: don't suggest it
            return None
        return AgentResult({"status": "needed", "mode": "entry",
                            "detail": "tracing failed; `solar analyze --llm` (or the server's "
                                      "`llm` setting) would ask the LLM agent to translate this "
                                      "entry. Nothing was sent."})
    source = _read(path)
    h = source_hash(source + "\0" + sources_digest(path))  # its imported modules too
    specs = [(s.name, s.dtype, list(s.shape), repr(s.scalar)) for s in entry.inputs or ()]
    k = key("entry", entry.name, entry.kind, specs, entry.init_args, entry.init_kwargs, cfg.model)
    cache = TranslationCache(cfg.resolved_cache_dir())
    try:
        tr, golden = _entry_translation(module, entry, path, source, h, k, cache, cfg, config,
                                        str(exc))
    finally:
        cache.close()
    result = AgentResult(None, asked=True)
    extra: dict[str, Any] = {"trace_error": str(exc)}
    if tr is not None and tr.status == "accepted" and tr.check is not None:
        result.program = tr.check.program
        for op in result.program.ops:
            op.note = "llm"
        result.verification = _entry_verification(result.program, tr)
        if golden is not None:
            extra["eager_flop_counter_flops"] = result.eager_flops = golden.eager_flops
    result.summary = _summary("entry", [tr] if tr else [], extra)
    return result


# messages torch gives for shapes that do not fit together: the user's code is wrong as written
_SHAPE_ERRORS = re.compile(
    r"shapes cannot be multiplied|must match the size|size mismatch|does not match|must have same|"
    r"invalid for input of size|out of range|out of bounds|expected .* but got|"
    r"Expected .* (?:dim|size|shape)|mismatch in shape|cannot be broadcast", re.IGNORECASE)


def user_bug(exc: BaseException, path: str) -> bool:
    """Whether a failed trace is the user's own error (raised on a line of their file, or a
    shape mismatch), which no translation can fix, rather than a limit of the tracer."""
    cause = exc.__cause__ or exc
    tb = cause.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is not None and os.path.realpath(last.tb_frame.f_code.co_filename) == os.path.realpath(path):
        return True
    return bool(_SHAPE_ERRORS.search(str(cause)))


def _entry_verification(program: Program, tr: Translation) -> dict:
    how = ("re-verified against this source" if tr.reverified else
           "verified when it was cached, for this same source" if tr.cached else
           "outputs match the eager run")
    return {"status": "verified", "ops_checked": len(program.ops), "issues": [],
            "detail": f"whole-entry IR written by the LLM agent; {how}"}


def _entry_translation(module, entry, path, source, h, k, cache, cfg, config, error):
    """(translation, golden or None); a cached answer is re-verified when the source changed."""
    cached = cache.get(k)
    if cached is not None and cached["source_hash"] == h and not cfg.dry_run:
        program = _parse_cached(cached["ir"])
        if program is not None:
            tr = Translation("entry", entry.name, "accepted", cached["model"], cached=True,
                             check=Check(True, program=program), ir=cached["ir"],
                             detail="cached translation, verified against this source")
            return tr, None
    try:
        golden = entry_golden(module, entry, path, source, error, config.budget_bytes)
    except GoldenError as exc:
        return Translation("entry", entry.name, "error", cfg.model,
                           detail=f"cannot verify a translation: {exc}; nothing was sent"), None
    nlines = len(source.splitlines())
    if cached is not None and not cfg.dry_run:
        res = check_entry(cached["ir"], golden, cfg.verify_limit_points, nlines)
        if res.ok:
            cache.touch(k, h)
            return Translation("entry", entry.name, "accepted", cached["model"], check=res,
                               ir=cached["ir"], cached=True, reverified=True,
                               detail="cached translation, re-verified after a source change"), golden
        log.info("cached translation of %s no longer verifies: %s", entry.name, res.reason)
    tr = translate("entry", entry.name, entry_message(golden.task),
                   lambda text: check_entry(text, golden, cfg.verify_limit_points, nlines),
                   cfg, _Client(cfg))
    if cached is not None and cfg.dry_run:
        tr.cached = True
        tr.detail += ("; a cached translation for this source exists, so nothing would be sent"
                      if cached["source_hash"] == h else
                      "; a cached translation exists and would be re-verified first")
    if tr.status == "accepted":
        cache.put(k, tr.ir, h, tr.model, tr.usage.to_json(), tr.cost_usd)
    return tr, golden


def _parse_cached(text: str) -> Program | None:
    try:
        p = parse_program(text)
        validate_program(p)
        return p
    except (IRSyntaxError, IRValidationError):
        return None


# ------------------------------------------------------------------------------ per node


def after_lowering(traced: Traced, lowered: Lowered, module: types.ModuleType,
                   config: Any) -> AgentResult | None:
    """Ops without a lowering: ask the agent for each (opted in), or say they would need it."""
    from solar_lsp.llm.nodes import unlowered
    items = _match_unsupported(unlowered(traced, lowered), lowered)
    if not items:
        return None
    cfg: LLMConfig | None = getattr(config, "llm", None)
    if cfg is None:
        ops = [{"op": tgt, "line": ln} for task, tgt, ln, _ in items if task]
        if not ops:
            return None
        return AgentResult({"status": "needed", "mode": "node", "ops": ops,
                            "detail": "some ops have no lowering; `solar analyze --llm` (or the "
                                      "server's `llm` setting) would ask the LLM agent for them. "
                                      "Nothing was sent."})
    h = source_hash(_read(traced.path) + "\0" + sources_digest(traced.path))
    cache = TranslationCache(cfg.resolved_cache_dir())
    try:
        trs = _translate_nodes(items, traced, lowered, module, config, cfg, h, cache)
    finally:
        cache.close()
    summary = _summary("node", trs)
    summary["op_ids"] = [t.check.op.id for t in trs
                         if t.status == "accepted" and t.check and t.check.op]
    return AgentResult(summary, asked=True,
                       filled=[(t.subject, t.line) for t in trs if t.status == "accepted"])


def _translate_nodes(items, traced: Traced, lowered: Lowered, module, config, cfg: LLMConfig,
                     h: str, cache: TranslationCache) -> list[Translation]:
    client = _Client(cfg)
    golden: dict | None = None
    golden_error = ""
    trs: list[Translation] = []
    for task, target, line, why in items:
        if task is None:
            trs.append(Translation("node", target, "skipped", cfg.model, line=line, detail=why))
            continue
        if golden is None and not golden_error and not cfg.dry_run:
            golden, golden_error = _node_golden(traced, lowered, module, config)
        tr = _node_translation(task, lowered.program, golden, golden_error, h, cache, cfg, client)
        tr.line = task.line
        trs.append(tr)
        if tr.status == "accepted" and tr.check is not None:
            _insert(traced, lowered, task, tr.check)
    return trs


def _match_unsupported(items, lowered: Lowered):
    """Keep the ops that the lowering reported as unsupported (matched by target and line)."""
    pool = [(u.op, u.line) for u in lowered.unsupported]
    out = []
    for it in items:
        if (it[1], it[2]) in pool:
            pool.remove((it[1], it[2]))
            out.append(it)
    return out


def _node_golden(traced, lowered, module, config) -> tuple[dict | None, str]:
    from solar_lsp.verify.check_torch import golden_bytes, golden_run
    need = golden_bytes(lowered.program)
    if need > config.budget_bytes:
        return None, (f"the golden run needs {need / 1e9:.1f} GB, over the "
                      f"{config.budget_bytes / 1e9:.1f} GB budget")
    try:
        return golden_run(traced, lowered, module, 0), ""
    except Exception as exc:  # user code raising on real tensors
        return None, f"the golden run failed: {type(exc).__name__}: {exc}"


def _node_translation(task: NodeTask, program: Program, golden: dict | None, golden_error: str,
                      h: str, cache: TranslationCache, cfg: LLMConfig, client) -> Translation:
    k = key("node", task.target, task.schema, task.call, task.temp_prefix,
            [(n, ttype(t)) for n, t in task.inputs + task.outputs], cfg.model)
    cached = cache.get(k)
    if cached is not None and not cfg.dry_run:
        same = cached["source_hash"] == h
        if same or golden is not None:
            res = check_node(cached["ir"], task, program, None if same else golden)
            if res.ok:
                if not same:
                    cache.touch(k, h)
                return Translation("node", task.target, "accepted", cached["model"], check=res,
                                   ir=cached["ir"], cached=True, reverified=not same)
    if golden is None and not cfg.dry_run:
        return Translation("node", task.target, "error", cfg.model,
                           detail=f"cannot verify a translation: {golden_error}; nothing was sent")
    tr = translate("node", task.target, node_message(task),
                   lambda text: check_node(text, task, program, golden), cfg, client)
    if tr.status == "accepted":
        cache.put(k, tr.ir, h, tr.model, tr.usage.to_json(), tr.cost_usd)
    return tr


def _insert(traced: Traced, lowered: Lowered, task: NodeTask, res: Check) -> None:
    """Put the accepted op into the traced program, in graph order, and drop its
    ``unsupported`` entry."""
    p = lowered.program
    op = res.op
    order = {n.name: i for i, n in enumerate(traced.exported.graph.nodes)}
    mine = order.get(task.node, len(order))
    at = next((i for i, o in enumerate(p.ops) if order.get(o.id, -1) > mine), len(p.ops))
    p.ops.insert(at, op)
    own = set(n for n, _ in task.inputs + task.outputs)
    for n, t in res.program.tensors.items():
        if n not in own:
            p.tensors[n] = t
    p.views.update(res.program.views)
    p.unique.update(res.program.unique)
    for i, u in enumerate(lowered.unsupported):
        if u.op == task.target and u.line == task.line:
            del lowered.unsupported[i]
            break
