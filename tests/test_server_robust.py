"""Nothing a user (or their editor) sends takes the language server down or leaves it mute:
requests with params that do not deserialize are answered InvalidParams, a message without a
Content-Length header or with a body that is not JSON is skipped (logged, never a popup), a
reply to a request the server gave up on is dropped, an ``untitled:`` buffer is analyzed, a
hang is reported once, and closing a document mid-verification keeps the work. Last, a
property test drives random open/edit/save/close/hover/hint sequences over one session.

Every test speaks JSON-RPC over the server's real stdin/stdout by hand (:class:`Session`),
so that it can send what a client library would refuse to."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import pathlib
import queue
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
MLP = ROOT / "examples" / "mlp.py"
CAPS = {"window": {"workDoneProgress": True},
        "workspace": {"configuration": True, "inlayHint": {"refreshSupport": True},
                      "codeLens": {"refreshSupport": True}},
        "textDocument": {"hover": {"contentFormat": ["markdown"]}}}


class Session:
    """A client on the server's stdio: frames messages itself, answers the server's requests
    (except the methods in ``hold``, kept in :attr:`held` to answer later) and records what
    the server publishes."""

    def __init__(self, cwd: pathlib.Path, env: dict | None = None, hold: tuple[str, ...] = ()):
        self.err_path = cwd / "server-stderr.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "solar_lsp.lsp.server"], cwd=cwd, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.err_path.open("wb"), env={**os.environ, **(env or {})})
        self.hold, self.held = hold, queue.Queue()
        self.replies: dict[Any, dict] = {}
        self.notes: list[dict] = []
        self.settings: dict = {}
        self._cond = threading.Condition()
        self._ids = iter(range(1, 1 << 30))
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    # ---- the wire
    def write(self, data: bytes) -> None:
        with self._lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, obj: dict) -> None:
        body = json.dumps(obj).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self._cond:
                        self._cond.notify_all()
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            if "method" in msg and "id" in msg:
                self._server_request(msg)
            with self._cond:
                if "method" in msg:
                    self.notes.append(msg)
                else:
                    self.replies[msg.get("id")] = msg
                self._cond.notify_all()

    def _server_request(self, msg: dict) -> None:
        if msg["method"] in self.hold:
            self.held.put(msg)
        elif msg["method"] == "workspace/configuration":
            self.answer(msg, [self.settings for _ in msg["params"]["items"]])
        else:
            self.answer(msg, None)

    def answer(self, msg: dict, result: Any) -> None:
        """Reply to the server's request ``msg``."""
        self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def request(self, method: str, params: Any, timeout: float = 30.0) -> dict:
        """Send a request; its reply (``result`` or ``error``), or fail when none comes."""
        i = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self._cond:
            while i not in self.replies:
                left = deadline - time.monotonic()
                assert self.alive(), f"the server died (exit {self.proc.returncode}) during {method}"
                assert left > 0, f"{method} was not answered in {timeout} s"
                self._cond.wait(min(left, 0.5))
            return self.replies.pop(i)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def popups(self) -> list[dict]:
        with self._cond:
            return [n["params"] for n in self.notes if n["method"] == "window/showMessage"]

    def diagnostics(self, uri: str) -> list[dict]:
        with self._cond:
            got = [n["params"]["diagnostics"] for n in self.notes
                   if n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] == uri]
        return got[-1] if got else []

    # ---- LSP
    def initialize(self, root: pathlib.Path, **settings) -> None:
        self.settings = {"debounce": 0.2, "cacheDir": str(root / "cache"), **settings}
        reply = self.request("initialize", {"processId": None, "rootUri": root.as_uri(),
                                            "capabilities": CAPS, "initializationOptions": self.settings},
                             timeout=60)
        assert "result" in reply, reply
        self.notify("initialized", {})

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": version, "text": text}})

    def change(self, uri: str, version: int, text: str) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})

    def close_doc(self, uri: str) -> None:
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def hints(self, uri: str) -> dict[int, str]:
        reply = self.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
            "start": {"line": 0, "character": 0}, "end": {"line": 10_000, "character": 0}}})
        assert "result" in reply, reply
        return {h["position"]["line"]: h["label"] for h in reply["result"] or []}

    def hover(self, uri: str, line: int) -> str | None:
        reply = self.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                    "position": {"line": line, "character": 4}})
        assert "result" in reply, reply
        return reply["result"]["contents"]["value"] if reply["result"] else None

    def status(self) -> dict:
        return self.request("workspace/executeCommand", {"command": "solar.status", "arguments": []})["result"]

    def stop(self) -> int | None:
        """shutdown + exit; the exit code (killed when it does not exit)."""
        with contextlib.suppress(Exception):
            if self.alive():
                self.request("shutdown", None, timeout=20)
                self.notify("exit", None)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def until(fn, timeout: float = 120.0, every: float = 0.25):
    """Poll ``fn`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {fn}"
        time.sleep(every)


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines()) if needle in ln)


NO_WORKER = {"SOLAR_LSP_WORKER_PYTHON": "/bin/false"}  # protocol tests: no torch to start


@pytest.fixture
def protocol_session(tmp_path: pathlib.Path):
    s = Session(tmp_path, NO_WORKER)
    yield s
    s.stop()


@pytest.fixture
def session(tmp_path: pathlib.Path):
    s = Session(tmp_path)
    yield s
    s.stop()


def _hover_params(uri: str, position: Any) -> dict:
    return {"textDocument": {"uri": uri}, "position": position}


def _pos(line: Any, character: Any = 0) -> dict:
    return {"line": line, "character": character}


# (method, params for the document's uri): params that do not deserialize
INVALID = {
    "string position": ("textDocument/hover", lambda u: _hover_params(u, "abc")),
    "null params": ("textDocument/hover", lambda u: None),
    "negative line": ("textDocument/hover", lambda u: _hover_params(u, _pos(-1))),
    "line 2**31": ("textDocument/hover", lambda u: _hover_params(u, _pos(2**31))),
    "word character": ("textDocument/hover", lambda u: _hover_params(u, _pos(0, "x"))),
    "string range": ("textDocument/inlayHint", lambda u: {"textDocument": {"uri": u}, "range": "all"}),
    "number document": ("textDocument/codeLens", lambda u: {"textDocument": 7}),
    "list command": ("workspace/executeCommand", lambda u: {"command": ["solar.status"]}),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_a_request_with_invalid_params_is_answered(protocol_session: Session, tmp_path, case):
    s = protocol_session
    s.initialize(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    s.open(uri, "x = 1\n")
    method, params = INVALID[case]
    reply = s.request(method, params(uri), timeout=10)
    assert reply.get("error", {}).get("code") == -32602, reply  # InvalidParams
    assert reply["error"]["message"]  # says what was wrong
    # and the server goes on answering, without having shown the user anything
    assert "result" in s.request("textDocument/hover", _hover_params(uri, _pos(0)))
    assert s.popups() == []


def test_a_header_without_content_length_does_not_stop_the_server(protocol_session: Session, tmp_path):
    s = protocol_session
    s.initialize(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    s.open(uri, "x = 1\n")
    hover = {"jsonrpc": "2.0", "id": "lost", "method": "textDocument/hover",
             "params": _hover_params(uri, _pos(0))}
    # a message framed without Content-Length: its body runs into the next header
    s.write(b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + json.dumps(hover).encode())
    for _ in range(3):
        assert "result" in s.request("textDocument/hover", hover["params"], timeout=10)
    s.write(b"garbage that is no header\r\n\r\n")  # and a line of nothing in particular
    assert "result" in s.request("textDocument/hover", hover["params"], timeout=10)
    assert s.popups() == []
    # when the client goes away (closes our stdin) the server exits: it is never left running
    s.proc.stdin.close()
    assert s.proc.wait(30) is not None


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'"a string"',
                                  b'{"jsonrpc": "2.0", "id": 99, "result": null}', b""])
def test_a_body_that_is_not_a_message_is_logged_not_shown(protocol_session: Session, tmp_path, body):
    s = protocol_session
    s.initialize(tmp_path)
    uri = (tmp_path / "m.py").as_uri()
    s.open(uri, "x = 1\n")
    s.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert "result" in s.request("textDocument/hover", _hover_params(uri, _pos(0)))
    time.sleep(0.5)
    assert s.popups() == []
    assert "Traceback" not in s.stderr()


def test_a_reply_to_a_request_the_server_gave_up_on_is_dropped(tmp_path: pathlib.Path):
    """The analysis asks the client for a progress token; an edit supersedes the analysis
    before the client answers. The late answer used to raise InvalidStateError (CANCELLED)
    in pygls, logged as a traceback and shown to the user."""
    s = Session(tmp_path, NO_WORKER, hold=("window/workDoneProgress/create",))
    try:
        s.initialize(tmp_path, verify=False, debounce=0.1)
        uri = (tmp_path / "mlp.py").as_uri()
        text = MLP.read_text()
        s.open(uri, text)
        create = s.held.get(timeout=30)  # the job waits for this answer...
        s.change(uri, 2, text.replace("F.gelu(h)", "F.gelu(h) * 2.0"))
        second = s.held.get(timeout=30)  # ...and is superseded by the edit's job
        s.answer(create, None)
        s.answer(second, None)
        assert "result" in s.request("textDocument/hover", _hover_params(uri, _pos(0)))
        time.sleep(0.5)
        assert s.popups() == []
        assert "InvalidStateError" not in s.stderr() and "Traceback" not in s.stderr()
    finally:
        s.stop()


SMALL = """import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn({b}, 1)]
"""


def test_an_untitled_buffer_is_analyzed(session: Session, tmp_path: pathlib.Path):
    """A new VS Code buffer (``untitled:Untitled-1``, never saved) gets hints like a file."""
    session.initialize(tmp_path, verify=False)
    uri = "untitled:Untitled-1"
    text = SMALL.format(b=24)
    session.open(uri, text)
    fwd = line_of(text, "return x * 2")
    until(lambda: session.hints(uri).get(fwd) or session.diagnostics(uri), timeout=180)
    assert session.diagnostics(uri) == []  # was: "cannot load …/Untitled-1 as a Python module"
    got = session.hints(uri)[fwd]
    assert got.startswith("24 FLOP"), got
    assert "24×1" in session.hover(uri, fwd)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "server-stderr.log"]  # nothing beside


LOOPS = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        while True:
            pass
        return x


def get_inputs():
    return [torch.randn(4)]


# solar: a=f32[4]
def double(a):
    return a * 2
"""


def test_a_loop_in_forward_is_reported_once(session: Session, tmp_path: pathlib.Path):
    """The job of both entries stops on the loop: one diagnostic on the loop's line."""
    session.initialize(tmp_path, verify=False, timeout=8)
    path = tmp_path / "loops.py"
    path.write_text(LOOPS)
    session.open(path.as_uri(), LOOPS)
    diags = until(lambda: session.diagnostics(path.as_uri()), timeout=180)
    assert [d["message"][:40] for d in diags] == ["solar: analysis took longer than 8 s and"], diags
    assert diags[0]["range"]["start"]["line"] in (line_of(LOOPS, "while True"), line_of(LOOPS, "pass"))


def _verified(session: Session, uri: str, line: int) -> str | None:
    h = session.hover(uri, line)
    return h if h and "| verified |" in h else None


def _bounds_shown(session: Session, uri: str, line: int) -> str | None:
    h = session.hover(uri, line)
    return h if h and "verifying" in h else None


def test_closing_during_verification_keeps_the_work(session: Session, tmp_path: pathlib.Path):
    """Closing a document while it is verified lets the job finish into the cache: opening it
    again shows the verified result at once, with no new job. Reopened while the job still
    runs, it shows the bounds at once and the job's verified result when it lands."""
    session.initialize(tmp_path, verify=True)
    text = MLP.read_text()
    gelu = line_of(text, "F.gelu(h)")
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    for p in (first, second):
        p.write_text(text)

    # closed mid-verification, reopened after the job finished
    session.open(first.as_uri(), text)
    until(lambda: _bounds_shown(session, first.as_uri(), gelu), timeout=240, every=0.1)
    session.close_doc(first.as_uri())
    assert session.status()["finishing"] == 1
    until(lambda: session.status()["finishing"] == 0, timeout=240)
    jobs = session.status()["jobs"]
    t0 = time.monotonic()
    session.open(first.as_uri(), text, version=2)
    until(lambda: _verified(session, first.as_uri(), gelu), timeout=30, every=0.05)
    reopened_s = time.monotonic() - t0
    assert reopened_s < 5.0, reopened_s  # from the cache (a fresh analysis takes 15-19 s)
    assert session.status()["jobs"] == jobs

    # closed mid-verification, reopened while the job still runs: the job is kept
    session.open(second.as_uri(), text)
    until(lambda: _bounds_shown(session, second.as_uri(), gelu), timeout=240, every=0.1)
    session.close_doc(second.as_uri())
    session.open(second.as_uri(), text, version=2)
    assert session.status()["finishing"] == 0
    assert _bounds_shown(session, second.as_uri(), gelu) or _verified(session, second.as_uri(), gelu)
    until(lambda: _verified(session, second.as_uri(), gelu), timeout=240)
    assert session.status()["jobs"] == jobs + 1  # the one job, not restarted
    print(f"reopened after the job finished: verified hints in {reopened_s:.2f} s")


# ---- a property test: random editing sessions over one server

def _model(b: int, comments: int, broken: bool) -> str:
    """A model whose forward line costs ``b`` FLOP (x * 2 on a [b, 1] input): its hint label
    says which version of the text it was computed on."""
    text = ("import torch\nfrom torch import nn\n" + "# a comment\n" * comments
            + SMALL.split("from torch import nn\n", 1)[1].format(b=b))
    return text.replace("def forward(self, x):", "def forward(self, x") if broken else text


class _Doc:
    def __init__(self, uri: str, path: pathlib.Path | None, b: int):
        self.uri, self.path = uri, path
        self.b, self.comments, self.broken = b, 0, False
        self.version, self.open, self.shown = 0, False, 0
        self.saved = (b, 0, False)
        if path is not None:
            path.write_text(self.text)

    @property
    def text(self) -> str:
        return _model(self.b, self.comments, self.broken)

    def __repr__(self) -> str:
        return f"<{self.uri} b={self.b} comments={self.comments} broken={self.broken}>"


def _machine(session: Session, root: pathlib.Path, seen: collections.Counter):
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

    versions = iter(range(2, 1000))  # each shape edit gets a b no text had before
    examples = iter(range(1_000_000))
    names = st.sampled_from(["a", "b", "untitled"])

    class EditorSession(RuleBasedStateMachine):
        """Open, edit (shapes, comments above the model, a syntax error and its fix), save,
        close, hover, ask for hints: every request is answered, the server never dies, and a
        hint never comes from an older version of the text than one already shown."""

        def __init__(self):
            super().__init__()
            seen["examples"] += 1
            folder = root / f"example{next(examples)}"
            folder.mkdir()
            self.docs = {n: _Doc((folder / f"{n}.py").as_uri(), folder / f"{n}.py", next(versions))
                         for n in ("a", "b")}
            self.docs["untitled"] = _Doc(f"untitled:Untitled-{folder.name}", None, next(versions))

        def _pick(self, data, want) -> _Doc:
            return data.draw(st.sampled_from([d for d in self.docs.values() if want(d)]))

        @precondition(lambda self: not all(d.open for d in self.docs.values()))
        @rule(data=st.data())
        def open(self, data):
            d = self._pick(data, lambda d: not d.open)
            if d.path is not None:  # an editor opens what is on disk
                d.b, d.comments, d.broken = d.saved
            else:  # a new untitled buffer
                d.b, d.comments, d.broken = next(versions), 0, False
            d.version += 1
            d.open, d.shown = True, 0
            session.open(d.uri, d.text, d.version)

        @precondition(lambda self: any(d.open for d in self.docs.values()))
        @rule(data=st.data())
        def close(self, data):
            d = self._pick(data, lambda d: d.open)
            session.close_doc(d.uri)
            d.open = False

        @precondition(lambda self: any(d.open for d in self.docs.values()))
        @rule(data=st.data(), edit=st.sampled_from(["shape", "comment", "uncomment", "break", "fix"]))
        def edit(self, data, edit):
            d = self._pick(data, lambda d: d.open)
            if edit == "shape":
                d.b = next(versions)
            elif edit in ("comment", "uncomment"):
                d.comments = max(0, min(3, d.comments + (1 if edit == "comment" else -1)))
            else:
                d.broken = edit == "break"
            d.version += 1
            session.change(d.uri, d.version, d.text)

        @precondition(lambda self: any(d.open and d.path for d in self.docs.values()))
        @rule(data=st.data())
        def save(self, data):
            d = self._pick(data, lambda d: d.open and d.path)
            d.path.write_text(d.text)
            d.saved = (d.b, d.comments, d.broken)
            session.notify("textDocument/didSave", {"textDocument": {"uri": d.uri}})

        @rule(name=names, line=st.integers(0, 20))
        def hover(self, name, line):
            session.hover(self.docs[name].uri, line)  # answered (open or not), whatever it says

        @precondition(lambda self: any(d.open for d in self.docs.values()))
        @rule(data=st.data())
        def hints(self, data):
            d = self._pick(data, lambda d: d.open)
            self._check_hints(d, session.hints(d.uri))

        @rule(seconds=st.sampled_from([0.1, 0.4, 1.5]))
        def pause(self, seconds):
            time.sleep(seconds)  # typing pauses: debounces fire, jobs start and get superseded

        @precondition(lambda self: any(d.open and not d.broken for d in self.docs.values()))
        @rule(data=st.data())
        def wait_for_the_current_version(self, data):
            self._catch_up(self._pick(data, lambda d: d.open and not d.broken))

        def _catch_up(self, d: _Doc) -> None:
            if d.open and not d.broken:
                try:
                    until(lambda: self._check_hints(d, session.hints(d.uri)) == d.b, timeout=120, every=0.3)
                except AssertionError as exc:  # say what the server shows and did (a rare flake)
                    raise AssertionError(f"{exc}; {d!r} version {d.version}, hints {session.hints(d.uri)}, "
                                         f"status {session.status()}, server log: {session.stderr()[-1500:]}") from exc
                seen["caught up"] += 1

        def _check_hints(self, d: _Doc, hints: dict[int, str]) -> int | None:
            if not d.open:
                return None
            fwd = line_of(d.text, "return x * 2")
            assert set(hints) <= {fwd}, (hints, d.text)  # only the forward line does work
            if fwd not in hints:
                return None
            shown = int(hints[fwd].split(" FLOP")[0])
            seen["older hint" if shown < d.b else "current hint"] += 1
            assert d.shown <= shown <= d.b, f"hint for b={shown} after b={d.shown} shown; text has b={d.b}"
            d.shown = shown
            return shown

        @invariant()
        def server_is_alive(self):
            seen["steps"] += 1
            assert session.alive(), f"the server died: exit {session.proc.returncode}"

        def teardown(self):
            """The hints of every open document catch up with its text; then it is closed."""
            for d in self.docs.values():
                if d.open and session.alive():
                    self._catch_up(d)
                    session.close_doc(d.uri)

    return EditorSession


@pytest.mark.slow
def test_random_editing_sessions_never_break_the_server(tmp_path: pathlib.Path):
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    session = Session(tmp_path)
    seen: collections.Counter = collections.Counter()
    try:
        session.initialize(tmp_path, verify=False)
        run_state_machine_as_test(_machine(session, tmp_path, seen), settings=settings(
            max_examples=10, stateful_step_count=15, deadline=None, database=None,
            phases=[Phase.explicit, Phase.generate],  # shrinking a session of minutes takes hours
            suppress_health_check=list(HealthCheck)))
        status = session.status()  # still answering
        print(f"{dict(seen)}; {status['jobs']} jobs, {status['workers_started']} workers started")
        assert seen["caught up"] > 0  # analyses did finish, and the hints caught up with the text
        err = session.stderr()
        for bad in ("Traceback", "InvalidStateError", "never retrieved"):
            assert bad not in err, err[err.find(bad) - 2000:err.find(bad) + 500]
    finally:
        code = session.stop()
    assert code == 0
