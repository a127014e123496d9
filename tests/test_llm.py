"""The LLM frontend, end to end through the real ``anthropic.Anthropic`` client.

The API cannot be reached from CI, so responses are replayed at the HTTP transport: the SDK
gets an httpx ``Client`` whose ``MockTransport`` answers from the JSON files in
``tests/llm_recordings/`` (Messages API bodies with ``tool_use`` blocks and ``usage``, error
bodies with their headers). Every line of the client path runs: request building, headers,
retries, response parsing, error classes. What the agent's IR is checked against is real:
eager PyTorch runs of the models in ``tests/llm_recordings/models/``.
"""

from __future__ import annotations

import json
import logging
import pathlib
import shutil

import pytest

from solar_lsp.llm import LLMConfig
from solar_lsp.llm.pricing import PRICES, cost_usd, price_of
from solar_lsp.llm.transport import http_module
from solar_lsp.pipeline.analyze import Config, analyze_file

REC = pathlib.Path(__file__).resolve().parent / "llm_recordings"
MODELS = REC / "models"
KEY = "sk-ant-api03-TESTKEY-never-in-any-log-or-report-0123456789"
http = http_module()


class Replay:
    """An HTTP handler answering from a recording; it keeps every request it was sent."""

    def __init__(self, name: str | None = None):
        fx = json.loads((REC / name).read_text()) if name else {"exchanges": []}
        self.exchanges = list(fx["exchanges"])
        self.repeat_last = bool(fx.get("repeat_last"))
        self.requests: list[dict] = []

    def __call__(self, request):
        self.requests.append({"url": str(request.url), "headers": dict(request.headers),
                              "body": json.loads(request.content), "raw": request.content})
        if not self.exchanges:
            return http.Response(400, json={"type": "error", "error": {
                "type": "invalid_request_error", "message": "test: no more recorded responses"}})
        ex = self.exchanges[0] if self.repeat_last and len(self.exchanges) == 1 else self.exchanges.pop(0)
        if "raise" in ex:
            raise getattr(http, ex["raise"])("replayed transport error", request=request)
        return http.Response(ex["status"], headers=ex["headers"], json=ex["body"])


def llm_config(replay: Replay, tmp_path: pathlib.Path, **kw) -> LLMConfig:
    base = dict(cache_dir="", retries=4, backoff_s=0.001, max_backoff_s=0.05, sdk_max_retries=0,
                http_client=http.Client(transport=http.MockTransport(replay)))
    base.update(kw)
    return LLMConfig(**base)


def model_copy(tmp_path: pathlib.Path, name: str) -> str:
    dst = tmp_path / name
    shutil.copy(MODELS / name, dst)
    return str(dst)


def analyze(path: str, llm: LLMConfig | None, verify: bool = True):
    rep = analyze_file(path, Config(verify=verify, llm=llm))
    assert rep.error is None, rep.error
    assert len(rep.entries) == 1
    return rep.entries[0]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("SOLAR_LLM_MODEL", raising=False)
    monkeypatch.delenv("SOLAR_LLM_ROUNDS", raising=False)


@pytest.fixture(scope="module")
def tracer_twin(tmp_path_factory):
    """The numpy model with np.tanh replaced by torch.tanh: the tracer's own bound for it."""
    d = tmp_path_factory.mktemp("twin")
    src = (MODELS / "np_model.py").read_text().replace(
        "NumpyTanh.apply(h)", "torch.tanh(h)")
    (d / "twin.py").write_text(src)
    return analyze(str(d / "twin.py"), None, verify=False)


def _sent_key(headers: dict) -> str | None:
    """The key as the SDK sent it: ``x-api-key`` (SDK 0.x) or a bearer token (SDK 2.x)."""
    if "x-api-key" in headers:
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None


def _usage_cost(model: str, usages: list[dict]) -> float:
    p = PRICES[model]
    return sum(u["input_tokens"] * p.input + u["output_tokens"] * p.output
               + u["cache_creation_input_tokens"] * p.cache_write
               + u["cache_read_input_tokens"] * p.cache_read for u in usages) / 1e6


def _recorded_usages(name: str) -> list[dict]:
    fx = json.loads((REC / name).read_text())
    return [ex["body"]["usage"] for ex in fx["exchanges"] if ex.get("status") == 200]


# ------------------------------------------------------------------ whole entry


def test_whole_entry_accepted_flows_into_sol(tmp_path, tracer_twin):
    replay = Replay("entry_ok.json")
    e = analyze(model_copy(tmp_path, "np_model.py"), llm_config(replay, tmp_path))
    assert e.status == "ok", e.error
    assert e.llm["status"] == "accepted" and e.llm["mode"] == "entry"
    assert "numpy" in e.llm["trace_error"]
    t = e.llm["translations"][0]
    assert t["rounds"] == 1 and t["usage"]["requests"] == 1 and not t["cached"]
    assert e.verification["status"] == "verified"
    # the agent's program goes through the same graph and SOL as tracer output: its totals
    # equal the tracer's for the same computation written with torch.tanh
    for k in ("macs", "flops", "tensor_flops", "vector_flops", "transcendentals", "bytes_fused",
              "t_fused_s"):
        assert e.totals[k] == pytest.approx(tracer_twin.totals[k]), k
    assert e.totals["macs"] == 4 * 16 * 8
    ops = [o for ln in e.lines for o in ln.ops]
    assert ops and all(o.source == "llm" for o in ops)
    assert {ln.line for ln in e.lines} == {10, 23, 24}
    doc = e.to_json()
    assert all(o["source"] == "llm" for ln in doc["lines"] for o in ln["ops"])
    assert doc["llm"]["status"] == "accepted"
    # usage and cost as the recording reports them, priced by the table
    (u,) = _recorded_usages("entry_ok.json")
    assert t["usage"]["input_tokens"] == u["input_tokens"]
    assert t["model"] == "claude-sonnet-4-5-20250929"
    assert t["cost_usd"] == pytest.approx(_usage_cost("claude-sonnet-4-5", [u]))
    # what was sent: one Messages API call with the forced tool, the spec and the source
    (req,) = replay.requests
    assert req["url"] == "https://api.anthropic.com/v1/messages"
    assert _sent_key(req["headers"]) == KEY
    body = req["body"]
    assert body["model"] == "claude-sonnet-4-5"
    assert body["tool_choice"] == {"type": "tool", "name": "submit_ir"}
    assert body["tools"][0]["name"] == "submit_ir"
    system = body["system"][0]["text"]
    assert "Grammar::" in system and "@kernel" in system and "worked.py" in system
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    user = body["messages"][0]["content"]
    assert "np.tanh(x.detach().numpy())" in user
    assert "p_fc_weight: f32[16, 8]" in user and "x: f32[4, 8]" in user
    assert "output 0: f32[4, 16]" in user


def test_wrong_answer_is_caught_and_corrected_in_round_two(tmp_path):
    replay = Replay("entry_mismatch_then_ok.json")
    e = analyze(model_copy(tmp_path, "np_model.py"), llm_config(replay, tmp_path))
    assert e.status == "ok"
    t = e.llm["translations"][0]
    assert t["status"] == "accepted" and t["rounds"] == 2
    assert [h["outcome"] for h in t["history"]] == ["mismatch", "accepted"]
    reason = t["history"][0]["reason"]
    assert "scale_k" in reason and "expected" in reason and "got" in reason
    # round two repeats the conversation and answers the tool call with the diagnostic
    assert len(replay.requests) == 2
    msgs = replay.requests[1]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    tool_use = msgs[1]["content"][-1]
    result = msgs[2]["content"][0]
    assert tool_use["type"] == "tool_use" and tool_use["id"] == "toolu_01LLMTEST0001"
    assert result["type"] == "tool_result" and result["tool_use_id"] == tool_use["id"]
    assert result["is_error"] is True and "mismatch" in result["content"]
    # the accepted program is round two's: out = tanh(fc(x)) * 2
    assert any("2.0" in str(k.expr) for op in e.program.ops for k in op.kernels)
    cost = _usage_cost("claude-sonnet-4-5", _recorded_usages("entry_mismatch_then_ok.json"))
    assert e.llm["cost_usd"] == pytest.approx(cost)


def test_invalid_answers_are_failed_rounds_with_reasons(tmp_path):
    replay = Replay("entry_invalid.json")
    e = analyze(model_copy(tmp_path, "np_model.py"), llm_config(replay, tmp_path, max_rounds=2))
    assert e.status == "error"  # the trace error stands: nothing unverified is used
    assert getattr(e, "program", None) is None
    assert e.llm["status"] == "rejected"
    t = e.llm["translations"][0]
    assert t["rounds"] == 2
    assert [h["outcome"] for h in t["history"]] == ["invalid", "invalid"]
    assert "no `submit_ir` tool call" in t["history"][0]["reason"]
    assert "not affine" in t["history"][1]["reason"]
    assert "not accepted after 2 round(s)" in t["detail"]
    # a prose answer has no tool call to answer: the feedback is plain text
    msgs = replay.requests[1]["body"]["messages"]
    assert msgs[2]["content"][0]["type"] == "text"
    assert "submit_ir" in msgs[2]["content"][0]["text"]


def test_rate_limit_overload_server_error_and_timeout_are_retried(tmp_path):
    replay = Replay("entry_transient_errors.json")
    e = analyze(model_copy(tmp_path, "np_model.py"), llm_config(replay, tmp_path))
    assert e.status == "ok"
    t = e.llm["translations"][0]
    assert t["status"] == "accepted" and t["http_attempts"] == 5 and len(replay.requests) == 5
    w = t["retry_waits_s"]
    assert w[0] == pytest.approx(0.02)  # 429's retry-after honoured
    assert w[1] == pytest.approx(0.05)  # 529's retry-after of 30 s capped by max_backoff_s
    assert 0 < w[2] <= 0.001 * 4 and 0 < w[3] <= 0.001 * 8  # exponential backoff
    assert t["usage"]["requests"] == 1  # only the successful call reports usage


def test_sdk_retries_are_configurable_too(tmp_path):
    replay = Replay("entry_server_error_once.json")
    cfg = llm_config(replay, tmp_path, sdk_max_retries=1, retries=0)
    e = analyze(model_copy(tmp_path, "np_model.py"), cfg)
    assert e.status == "ok"
    assert len(replay.requests) == 2  # the SDK retried the 500 itself
    assert e.llm["translations"][0]["http_attempts"] == 1


def test_persistent_overload_is_a_clear_error(tmp_path):
    replay = Replay("entry_overloaded.json")
    e = analyze(model_copy(tmp_path, "np_model.py"), llm_config(replay, tmp_path, retries=2))
    assert len(replay.requests) == 3
    assert e.status == "error" and "numpy" in e.error  # the entry keeps its trace error
    assert e.llm["status"] == "error"
    d = e.llm["translations"][0]["detail"]
    assert "overloaded" in d and "HTTP 529" in d and "gave up after 3 attempt(s)" in d
    assert "req_011LLMERR0001" in d


def test_rejected_key_is_not_retried(tmp_path):
    replay = Replay("auth_error.json")
    e = analyze(model_copy(tmp_path, "np_model.py"), llm_config(replay, tmp_path))
    assert len(replay.requests) == 1
    d = e.llm["translations"][0]["detail"]
    assert "HTTP 401" in d and "authentication_error" in d
    assert KEY not in d


def test_no_key_sends_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    replay = Replay("entry_ok.json")
    e = analyze(model_copy(tmp_path, "np_model.py"), llm_config(replay, tmp_path))
    assert replay.requests == []
    assert e.status == "error"
    assert e.llm["status"] == "error"
    assert "ANTHROPIC_API_KEY" in e.llm["translations"][0]["detail"]


def test_base_url_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://llm-gateway.internal:8080")
    replay = Replay("entry_ok.json")
    e = analyze(model_copy(tmp_path, "np_model.py"), llm_config(replay, tmp_path))
    assert e.status == "ok"
    assert replay.requests[0]["url"] == "http://llm-gateway.internal:8080/v1/messages"


# ------------------------------------------------------------------ opt-in, dry run, key


@pytest.fixture
def no_network(monkeypatch):
    """Any HTTP request or any Anthropic client at all fails the test."""
    import anthropic
    sent: list[str] = []

    def send(self, request, *a, **k):
        sent.append(str(request.url))
        raise AssertionError("an HTTP request was made")

    def client(*a, **k):
        sent.append("anthropic.Anthropic()")
        raise AssertionError("an Anthropic client was made")

    monkeypatch.setattr(http.Client, "send", send)
    monkeypatch.setattr(anthropic, "Anthropic", client)
    return sent


def test_without_opt_in_nothing_is_sent_and_the_report_says_what_needs_the_agent(
        tmp_path, no_network):
    e = analyze(model_copy(tmp_path, "np_model.py"), None, verify=False)
    assert e.status == "error"
    assert e.llm["status"] == "needed" and e.llm["mode"] == "entry"
    n = analyze(model_copy(tmp_path, "custom_op.py"), None, verify=False)
    assert n.status == "ok"
    assert n.llm["status"] == "needed" and n.llm["mode"] == "node"
    assert n.llm["ops"] == [{"op": "solar_llm_test.softclip.default", "line": 23}]
    assert n.unsupported and n.unsupported[0]["op"] == "solar_llm_test.softclip.default"
    assert no_network == []


def test_dry_run_prints_the_prompt_and_sends_nothing(tmp_path, no_network, monkeypatch, capsys):
    from solar_lsp.cli import main as cli
    monkeypatch.delenv("ANTHROPIC_API_KEY")  # a dry run needs no key
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path / "cache"))
    path = model_copy(tmp_path, "np_model.py")
    rc = cli.main(["analyze", path, "--llm-dry-run", "--llm-model", "claude-haiku-4-5"])
    out = capsys.readouterr().out
    assert rc == 1  # the entry still failed to trace
    assert "--llm-dry-run: the request for entry Model" in out
    assert "model: claude-haiku-4-5" in out
    assert "--- system prompt" in out and "--- user message ---" in out
    assert "np.tanh(x.detach().numpy())" in out and "p_fc_weight: f32[16, 8]" in out
    assert no_network == []


def test_cli_llm_flags(tmp_path, monkeypatch, capsys):
    """`solar analyze --llm`: the flags reach LLMConfig; the table says what the agent did."""
    from solar_lsp.cli import main as cli
    from solar_lsp.llm import config as llm_config_mod
    replay = Replay("entry_mismatch_then_ok.json")
    made: list[LLMConfig] = []
    orig = llm_config_mod.LLMConfig.from_env.__func__

    def from_env(cls, **kw):
        cfg = orig(cls, **kw)
        cfg.http_client = http.Client(transport=http.MockTransport(replay))
        cfg.cache_dir = ""
        made.append(cfg)
        return cfg

    monkeypatch.setattr(llm_config_mod.LLMConfig, "from_env", classmethod(from_env))
    path = model_copy(tmp_path, "np_model.py")
    rc = cli.main(["analyze", path, "--llm", "--llm-rounds", "2", "--no-verify"])
    out = capsys.readouterr().out
    assert rc == 0 and made[0].max_rounds == 2 and not made[0].dry_run
    assert "LLM agent" in out and "entry Model: accepted after 2 round(s)" in out
    assert "$0.0" in out
    assert cli.main(["analyze", path, "--llm-rounds", "2"]) == 2  # needs --llm
    assert cli.main(["analyze", path, "--llm", "--llm-rounds", "0"]) == 2


def test_dry_run_per_node_states_the_op(tmp_path, no_network):
    cfg = LLMConfig(dry_run=True, cache_dir="")
    e = analyze(model_copy(tmp_path, "custom_op.py"), cfg, verify=False)
    t = e.llm["translations"][0]
    assert t["status"] == "dry-run"
    msg = t["request"]["messages"][0]["content"]
    assert "softclip = solar_llm_test.softclip.default(linear, 2.0)" in msg
    assert "solar_llm_test::softclip(Tensor x, float scale) -> Tensor" in msg
    assert "x / (1.0 + torch.abs(x)) * scale" in msg  # the custom op's implementation
    assert "linear: f32[4, 16]" in msg
    assert e.unsupported  # nothing was filled
    assert no_network == []


def test_the_key_never_appears_in_logs_or_reports(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    replay = Replay("entry_mismatch_then_ok.json")
    e = analyze(model_copy(tmp_path, "np_model.py"), llm_config(replay, tmp_path))
    bad = Replay("auth_error.json")
    e2 = analyze(model_copy(tmp_path, "np_model.py"), llm_config(bad, tmp_path))
    assert e.status == "ok" and e2.llm["status"] == "error"
    assert "LLM entry Model round 1: mismatch" in caplog.text  # the agent does log
    assert KEY not in caplog.text
    assert KEY not in json.dumps(e.to_json(), default=str)
    assert KEY not in json.dumps(e2.to_json(), default=str)
    assert KEY not in repr(llm_config(replay, tmp_path))
    for r in replay.requests + bad.requests:
        assert KEY.encode() not in r["raw"]  # only the auth header carries it
        assert _sent_key(r["headers"]) == KEY


# ------------------------------------------------------------------ cache


def test_cache_hit_sends_no_request(tmp_path):
    cache = str(tmp_path / "cache")
    path = model_copy(tmp_path, "np_model.py")
    first = analyze(path, llm_config(Replay("entry_ok.json"), tmp_path, cache_dir=cache))
    assert first.status == "ok" and not first.llm["translations"][0]["cached"]
    empty = Replay()
    again = analyze(path, llm_config(empty, tmp_path, cache_dir=cache))
    assert empty.requests == []
    t = again.llm["translations"][0]
    assert again.status == "ok" and t["cached"] and not t["reverified"]
    assert t["usage"]["requests"] == 0 and t["cost_usd"] == 0
    assert again.totals["flops"] == first.totals["flops"]
    # another model id is another question
    other = Replay("entry_ok.json")
    analyze(path, llm_config(other, tmp_path, cache_dir=cache, model="claude-opus-4-5"))
    assert len(other.requests) == 1


def test_cache_is_reverified_when_the_source_changes(tmp_path):
    cache = str(tmp_path / "cache")
    path = pathlib.Path(model_copy(tmp_path, "np_model.py"))
    analyze(str(path), llm_config(Replay("entry_ok.json"), tmp_path, cache_dir=cache))
    # an edit that keeps the computation: the cached IR passes again, nothing is sent
    path.write_text(path.read_text() + "\n# an unrelated comment\n")
    empty = Replay()
    e = analyze(str(path), llm_config(empty, tmp_path, cache_dir=cache))
    assert empty.requests == []
    t = e.llm["translations"][0]
    assert e.status == "ok" and t["cached"] and t["reverified"]
    assert "re-verified" in e.verification["detail"]
    # an edit that changes the result: the cached IR fails, and the agent is asked again
    path.write_text(path.read_text().replace("* 2.0", "* 3.0"))
    replay = Replay("entry_scale3.json")
    e = analyze(str(path), llm_config(replay, tmp_path, cache_dir=cache))
    assert len(replay.requests) == 1
    t = e.llm["translations"][0]
    assert e.status == "ok" and not t["cached"] and t["status"] == "accepted"


# ------------------------------------------------------------------ per node


@pytest.fixture(scope="module")
def inline_twin(tmp_path_factory):
    """The custom op's body written inline with torch ops, which the tracer lowers."""
    d = tmp_path_factory.mktemp("inline")
    src = (MODELS / "custom_op.py").read_text().replace(
        "softclip(h, 2.0) + h", "h / (1.0 + torch.abs(h)) * 2.0 + h")
    (d / "inline.py").write_text(src)
    return analyze(str(d / "inline.py"), None, verify=False)


def test_per_node_fills_an_op_without_lowering(tmp_path, inline_twin):
    replay = Replay("node_ok.json")
    e = analyze(model_copy(tmp_path, "custom_op.py"), llm_config(replay, tmp_path))
    assert e.status == "ok"
    assert e.unsupported == []
    assert e.llm["status"] == "accepted" and e.llm["mode"] == "node"
    assert e.llm["op_ids"] == ["softclip"]
    # the filled op is part of the entry's own verification against torch
    assert e.verification["status"] == "verified", e.verification
    assert e.verification["ops_checked"] == 3
    by_src = {o.op: o.source for ln in e.lines for o in ln.ops}
    assert by_src == {"linear": "tracer", "softclip": "llm", "add": "tracer"}
    llm_op = next(o for ln in e.lines for o in ln.ops if o.op == "softclip")
    assert llm_op.flops == 3 * 4 * 16  # divide, add, multiply per element (abs is free)
    # the bounds include it: the same work as the inline torch version the tracer lowers
    for k in ("flops", "vector_flops", "tensor_flops", "bytes_fused"):
        assert e.totals[k] == inline_twin.totals[k], k
    # ordered in the graph: after linear, before add
    assert [op.id for op in e.program.ops] == ["linear", "softclip", "add"]
    (req,) = replay.requests
    msg = req["body"]["messages"][0]["content"]
    assert "Task (one op)" in msg and "Source line 23" in msg
    assert e.llm["cost_usd"] == pytest.approx(
        _usage_cost("claude-sonnet-4-5", _recorded_usages("node_ok.json")))


def test_per_node_cache_hit(tmp_path):
    cache = str(tmp_path / "cache")
    path = model_copy(tmp_path, "custom_op.py")
    analyze(path, llm_config(Replay("node_ok.json"), tmp_path, cache_dir=cache), verify=False)
    empty = Replay()
    e = analyze(path, llm_config(empty, tmp_path, cache_dir=cache))
    assert empty.requests == [] and e.unsupported == []
    assert e.llm["translations"][0]["cached"]
    assert e.verification["status"] == "verified"


# ------------------------------------------------------------------ pieces


def test_worked_examples_in_the_prompt_verify_against_torch():
    """The bundled examples are the tracer's IR for worked.py; each must still parse,
    validate and reproduce eager PyTorch, checked by the whole-entry checker."""
    from solar_lsp.frontend.torch.trace import load_module
    from solar_lsp.llm import prompt
    from solar_lsp.llm.check import check_entry, entry_golden
    from solar_lsp.source.discover import discover
    src, ir = prompt.worked_examples()
    path = str(pathlib.Path(prompt._EXAMPLES) / "worked.py")
    texts = {}
    for chunk in ir.split("# solar IR v1 — program ")[1:]:
        name = chunk.split("'")[1]
        texts[name] = "# solar IR v1 — program " + chunk
    module = load_module(path)
    entries = discover(src, path, {})
    assert {e.name for e in entries} == set(texts) and len(texts) == 5
    for entry in entries:
        golden = entry_golden(module, entry, path, src, "", 2**30)
        res = check_entry(texts[entry.name], golden, 1e9)
        assert res.ok, (entry.name, res.reason)
    # and a wrong answer fails the same check
    bad = texts["softmax_rows"].replace("exp(x[i0, i1]", "exp(2.0 * x[i0, i1]")
    golden = entry_golden(module, next(e for e in entries if e.name == "softmax_rows"), path, src,
                          "", 2**30)
    res = check_entry(bad, golden, 1e9)
    assert not res.ok and res.kind == "mismatch" and "_softmax_sm1_div" in res.reason


def test_prices():
    assert price_of("claude-sonnet-4-5-20250929") == PRICES["claude-sonnet-4-5"]
    assert price_of("claude-haiku-4-5") == PRICES["claude-haiku-4-5"]
    assert price_of("claude-opus-4-6") is None  # newer than the table: no guess
    assert price_of("claude-sonnet-4-5-preview") is None
    from solar_lsp.llm.pricing import Usage
    u = Usage(1000, 2000, 3000, 4000, 1)
    assert cost_usd("claude-sonnet-4-5", u) == pytest.approx(
        (1000 * 3 + 2000 * 15 + 3000 * 3.75 + 4000 * 0.30) / 1e6)
    assert cost_usd("some-other-model", u) is None


def test_server_setting_reaches_the_worker_config():
    from solar_lsp.lsp.settings import Settings, merge
    from solar_lsp.lsp.worker import _config
    s = merge(Settings(), {"llm": True}, "test")
    d = s.analysis_config()
    assert d["llm"] is True
    assert isinstance(_config(d, None).llm, LLMConfig)
    assert _config(Settings().analysis_config(), None).llm is None
    assert Settings().analysis_key() != s.analysis_key()


@pytest.mark.parametrize("cmd", [["ir"], ["compare", "--json"], ["headroom", "--json"]])
def test_llm_flags_reach_every_command(cmd, tmp_path, monkeypatch, capsys):
    """The agent's translation is used wherever the analysis is: the IR text, the comparison,
    and headroom (whose bounds need the analysis before anything is measured)."""
    from solar_lsp.cli import main as cli
    from solar_lsp.llm import config as llm_config_mod
    replay = Replay("entry_mismatch_then_ok.json")
    orig = llm_config_mod.LLMConfig.from_env.__func__

    def from_env(cls, **kw):
        cfg = orig(cls, **kw)
        cfg.http_client = http.Client(transport=http.MockTransport(replay))
        cfg.cache_dir = ""
        return cfg

    monkeypatch.setattr(llm_config_mod.LLMConfig, "from_env", classmethod(from_env))
    path = model_copy(tmp_path, "np_model.py")
    assert cli.main([cmd[0], path]) != 0  # without the agent the entry cannot be traced
    capsys.readouterr()
    rc = cli.main([cmd[0], path, *cmd[1:], "--llm"])
    out = capsys.readouterr().out
    assert rc == 0, out
    if cmd[0] == "ir":
        assert "Model" in out and "for " in out
    else:
        e = json.loads(out)["entries"][0]
        assert e["status"] == "ok"
        if cmd[0] == "compare":
            assert e["chips"][0]["t_fused_s"] > 0
        else:
            assert e["llm"]["status"] == "accepted" and e["headroom"]["measured_s"] > 0


def test_cache_is_reverified_when_an_imported_module_changes(tmp_path):
    """The cached answer depends on the modules the entry imports too: an edit there (even
    with the analyzed file unchanged) re-verifies it before use."""
    cache = str(tmp_path / "cache")
    (tmp_path / "sibling_consts.py").write_text("SCALE = 2.0\n")
    path = pathlib.Path(model_copy(tmp_path, "np_model.py"))
    path.write_text("import sibling_consts  # noqa: F401\n" + path.read_text())
    first = analyze(str(path), llm_config(Replay("entry_ok.json"), tmp_path, cache_dir=cache))
    assert first.status == "ok", first.error
    empty = Replay()
    t = analyze(str(path), llm_config(empty, tmp_path, cache_dir=cache)).llm["translations"][0]
    assert t["cached"] and not t["reverified"]
    (tmp_path / "sibling_consts.py").write_text("SCALE = 2.0  # edited\n")
    t = analyze(str(path), llm_config(empty, tmp_path, cache_dir=cache)).llm["translations"][0]
    assert t["cached"] and t["reverified"] and empty.requests == []


@pytest.mark.parametrize("forward, why", [
    ("raise ValueError('the user raised this')", "raised on the user's line"),
    ("return x @ torch.ones(3, 5)", "a shape mismatch"),
])
def test_a_user_bug_does_not_suggest_the_agent(tmp_path, no_network, forward, why):
    path = tmp_path / "bug.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        f"    def forward(self, x):\n        {forward}\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 8)]\n")
    e = analyze(str(path), None, verify=False)
    assert e.status == "error", why
    assert e.llm is None, why  # nothing says `--llm` would help
