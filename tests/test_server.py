"""The language server over a real LSP connection (stdio, pytest-lsp): what an editor sees —
hints, hover, lenses, actions, commands, edits, configuration — and that user code which
hangs, crashes, eats memory, does not parse or raises never takes the server down."""

from __future__ import annotations

import asyncio
import pathlib
import shutil
import sys
import time

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
MLP = ROOT / "examples" / "mlp.py"

CAPS = T.ClientCapabilities(
    text_document=T.TextDocumentClientCapabilities(
        inlay_hint=T.InlayHintClientCapabilities(
            resolve_support=T.ClientInlayHintResolveOptions(properties=["tooltip"])),
        hover=T.HoverClientCapabilities(content_format=[T.MarkupKind.Markdown]),
        code_lens=T.CodeLensClientCapabilities(),
        code_action=T.CodeActionClientCapabilities(),
        publish_diagnostics=T.PublishDiagnosticsClientCapabilities(),
    ),
    workspace=T.WorkspaceClientCapabilities(
        configuration=True,
        inlay_hint=T.InlayHintWorkspaceClientCapabilities(refresh_support=True),
        code_lens=T.CodeLensWorkspaceClientCapabilities(refresh_support=True),
    ),
    window=T.WindowClientCapabilities(work_done_progress=True,
                                      show_document=T.ShowDocumentClientCapabilities(support=True)),
)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "solar_lsp.lsp.server"]))
async def client(lsp_client: LanguageClient):
    @lsp_client.feature(T.WORKSPACE_INLAY_HINT_REFRESH)
    def on_hint_refresh(params: None) -> None:
        return None

    @lsp_client.feature(T.WORKSPACE_CODE_LENS_REFRESH)
    def on_lens_refresh(params: None) -> None:
        return None

    yield
    await lsp_client.shutdown_session()


async def start(client: LanguageClient, root: pathlib.Path, **settings) -> None:
    client.set_configuration({"solar": {"timeout": 60, "debounce": 0.2, **settings}})
    await client.initialize_session(T.InitializeParams(capabilities=CAPS, root_uri=root.as_uri()))


def open_doc(client: LanguageClient, path: pathlib.Path, text: str | None = None) -> str:
    text = path.read_text() if text is None else text
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        T.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text)))
    return path.as_uri()


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)]))


async def hints(client: LanguageClient, uri: str) -> dict[int, str]:
    res = await client.text_document_inlay_hint_async(T.InlayHintParams(
        text_document=T.TextDocumentIdentifier(uri), range=T.Range(T.Position(0, 0), T.Position(10_000, 0))))
    return {h.position.line: h.label for h in res or []}


async def until(fn, timeout: float = 120.0, every: float = 0.25):
    """Poll ``fn`` (sync or async) until it returns something truthy."""
    t0 = time.monotonic()
    while True:
        v = fn()
        if asyncio.iscoroutine(v):
            v = await v
        if v:
            return v
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {fn}")
        await asyncio.sleep(every)


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines()) if needle in ln)


async def hover_text(client: LanguageClient, uri: str, line: int) -> str | None:
    h = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri), position=T.Position(line, 4)))
    return h.contents.value if h else None


async def command(client: LanguageClient, name: str, *args):
    return await client.workspace_execute_command_async(T.ExecuteCommandParams(command=name, arguments=list(args)))


def diags(client: LanguageClient, uri: str) -> list[T.Diagnostic]:
    return list(client.diagnostics.get(uri, []))


@pytest.fixture
def work(tmp_path: pathlib.Path) -> pathlib.Path:
    shutil.copy(MLP, tmp_path / "mlp.py")
    return tmp_path


async def test_end_to_end(client: LanguageClient, work: pathlib.Path):
    await start(client, work, cacheDir=str(work / "cache"), targetLatency="2ms")
    path = work / "mlp.py"
    text = path.read_text()
    uri = open_doc(client, path)
    gelu = line_of(text, "F.gelu(h)")
    by_line = await until(lambda: hints(client, uri))
    assert gelu in by_line, by_line
    label = by_line[gelu]
    assert "FLOP" in label and "B ·" in label and label.endswith(("mem", "compute"))
    assert line_of(text, "def get_inputs") not in by_line  # no work, no hint

    # hover: the op table with shapes, dtype, FLOPs, bytes, times, bound, verification state
    hov = await until(lambda: hover_text(client, uri, gelu))
    assert "| op |" in hov and "`gelu`" in hov and "aten." not in hov and "float32" in hov and "8×128×4096" in hov
    final = await until(lambda: _verified(client, uri, gelu))
    assert "| verified |" in final

    # hint tooltip via inlayHint/resolve
    res = await client.text_document_inlay_hint_async(T.InlayHintParams(
        text_document=T.TextDocumentIdentifier(uri), range=T.Range(T.Position(gelu, 0), T.Position(gelu, 200))))
    resolved = await client.inlay_hint_resolve_async(res[0])
    assert "`gelu`" in resolved.tooltip.value

    # code lens over the entry: three SOL times, then the inverse roofline for 2 ms
    lenses = await client.text_document_code_lens_async(T.CodeLensParams(T.TextDocumentIdentifier(uri)))
    titles = [ln.command.title for ln in lenses]
    entry_line = line_of(text, "class Model")
    assert all(ln.range.start.line == entry_line for ln in lenses)
    assert any("SOL h100-sxm: unfused" in t and "fused" in t and "cache-aware" in t for t in titles), titles
    assert any(t.startswith("2ms needs ≥") and "B/s" in t for t in titles), titles

    # progress was reported while analyzing
    assert client.progress_reports, "no $/progress"
    assert any(isinstance(v, T.WorkDoneProgressEnd) for vs in client.progress_reports.values() for v in vs)

    # code actions and the commands behind them
    acts = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri), range=T.Range(T.Position(gelu, 0), T.Position(gelu, 0)),
        context=T.CodeActionContext(diagnostics=[])))
    titles = [a.title for a in acts]
    assert "solar: Show IR of Model" in titles and "solar: Compare chips for Model" in titles
    ir = await command(client, "solar.showIR", uri, "Model")
    assert "for " in ir["text"] and "gelu" in ir["text"].lower(), ir
    assert client.shown_documents and client.shown_documents[-1].uri.endswith("Model-ir.py")
    cmp = await command(client, "solar.compareChips", uri, "Model")
    for chip in ("h100-sxm", "b200", "a6000", "jetson-thor"):
        assert f"| {chip} |" in cmp["text"]

    svg = await command(client, "solar.showRoofline", uri, "Model")
    assert svg["svg"].lstrip().startswith("<?xml") and "<svg" in svg["svg"] and "roof" in svg["svg"]

    # Explain headroom: measured in a worker, reported, and remembered by the hover
    hr = await command(client, "solar.explainHeadroom", uri, "Model")
    assert "Diagnosis:" in hr["text"] and "| fused |" in hr["text"], hr
    assert "last measured" in await hover_text(client, uri, gelu)

    # an edit above the model moves the hints at once, and needs no new analysis
    jobs = (await command(client, "solar.status"))["jobs"]
    moved = "# a comment\n" + text
    change(client, uri, 2, moved)
    now = await hints(client, uri)
    assert now == {ln + 1: lab for ln, lab in by_line.items()}
    await asyncio.sleep(1.5)  # past the debounce
    assert (await command(client, "solar.status"))["jobs"] == jobs

    # an edit of the gelu line withholds its hint until the new result arrives
    edited = moved.replace("h = F.gelu(h)", "h = F.gelu(h) * 2.0")
    change(client, uri, 3, edited)
    assert gelu + 1 not in await hints(client, uri)
    new = await until(lambda: _label_at(client, uri, gelu + 1))
    assert new != label  # the multiply adds work to the line

    # a change of the model's shapes gives new numbers for the lines that changed
    bigger = edited.replace("return [torch.randn(8, 128, 1024)]", "return [torch.randn(16, 128, 1024)]")
    change(client, uri, 4, bigger)
    doubled = await until(lambda: _label_changed(client, uri, gelu + 1, new))
    assert doubled != new

    # configuration change: the new chip's numbers
    client.set_configuration({"solar": {"timeout": 60, "debounce": 0.2, "chip": "b200",
                                        "cacheDir": str(work / "cache"), "workers": 2}})
    client.workspace_did_change_configuration(T.DidChangeConfigurationParams(settings=None))

    async def b200_lens():
        ls = await client.text_document_code_lens_async(T.CodeLensParams(T.TextDocumentIdentifier(uri)))
        return [x.command.title for x in ls if "SOL b200" in x.command.title]

    assert await until(b200_lens)

    async def two_workers():  # the new worker count applies without a restart
        pids = (await command(client, "solar.status"))["workers"]
        return pids if len(pids) == 2 else None

    assert await until(two_workers, timeout=120)


async def _verified(client, uri, line):
    t = await hover_text(client, uri, line)
    return t if t and "verifying" not in t else None


async def _label_at(client, uri, line):
    return (await hints(client, uri)).get(line)


async def _label_changed(client, uri, line, old):
    v = (await hints(client, uri)).get(line)
    return v if v and v != old else None


async def test_results_survive_a_restart(client: LanguageClient, tmp_path_factory):
    """Second server on the same cache: hints without running a worker job."""
    shared = tmp_path_factory.getbasetemp() / "restart"
    shared.mkdir(exist_ok=True)
    shutil.copy(MLP, shared / "mlp.py")
    await start(client, shared, cacheDir=str(shared / "cache"))
    uri = open_doc(client, shared / "mlp.py")
    first = await until(lambda: hints(client, uri))
    await until(lambda: _verified(client, uri, line_of((shared / "mlp.py").read_text(), "F.gelu")))
    jobs_before = (await command(client, "solar.status"))["jobs"]
    assert jobs_before >= 1
    # a second server process, same cache dir
    proc_client = await _second_server(shared)
    try:
        got = await until(lambda: _plain_hints(proc_client, uri), timeout=60)
        assert got == first
        status = await proc_client.workspace_execute_command_async(
            T.ExecuteCommandParams(command="solar.status", arguments=[]))
        assert status["jobs"] == 0  # served from the cache, no user code ran
    finally:
        await proc_client.shutdown_session()
        await proc_client.stop()


async def _second_server(root: pathlib.Path):
    from pytest_lsp.client import make_test_lsp_client
    c = make_test_lsp_client()
    c.set_configuration({"solar": {"timeout": 60, "cacheDir": str(root / "cache")}})

    @c.feature(T.WORKSPACE_INLAY_HINT_REFRESH)
    def _r(params: None) -> None:
        return None

    @c.feature(T.WORKSPACE_CODE_LENS_REFRESH)
    def _l(params: None) -> None:
        return None

    await c.start_io(sys.executable, "-m", "solar_lsp.lsp.server")
    await c.initialize_session(T.InitializeParams(capabilities=CAPS, root_uri=root.as_uri()))
    path = root / "mlp.py"
    c.text_document_did_open(T.DidOpenTextDocumentParams(
        T.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=path.read_text())))
    return c


async def _plain_hints(c, uri):
    res = await c.text_document_inlay_hint_async(T.InlayHintParams(
        text_document=T.TextDocumentIdentifier(uri), range=T.Range(T.Position(0, 0), T.Position(10_000, 0))))
    return {h.position.line: h.label for h in res or []}


BAD = {
    "hangs.py": ("import torch\nimport torch.nn as nn\n\nwhile True:\n    pass\n\n\n"
                 "class Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
                 "def get_inputs():\n    return [torch.randn(4)]\n\n\ndef get_init_inputs():\n    return []\n",
                 "longer than", (4, 5)),  # the dump may catch the loop at either of its lines
    "segfaults.py": ("import ctypes\nimport torch\nimport torch.nn as nn\n\nctypes.string_at(0)\n\n\n"
                     "class Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
                     "def get_inputs():\n    return [torch.randn(4)]\n\n\ndef get_init_inputs():\n    return []\n",
                     "crashed (SIGSEGV)", 5),
    "hungry.py": ("import torch\nimport torch.nn as nn\n\nBIG = torch.ones(25_000_000_000)\n\n\n"
                  "class Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"
                  "def get_inputs():\n    return [torch.randn(4)]\n\n\ndef get_init_inputs():\n    return []\n",
                  "memory", 4),
    "raises.py": ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                  "    def forward(self, x):\n        raise ValueError('boom in forward')\n\n\n"
                  "def get_inputs():\n    return [torch.randn(4)]\n\n\ndef get_init_inputs():\n    return []\n",
                  "boom in forward", 7),
}


async def test_faults_never_stop_the_server(client: LanguageClient, work: pathlib.Path):
    await start(client, work, cacheDir=str(work / "cache"), timeout=8, memoryLimit="2GB")
    good = work / "mlp.py"
    good_uri = open_doc(client, good)
    gelu = line_of(good.read_text(), "F.gelu(h)")
    await until(lambda: _verified(client, good_uri, gelu))

    async def hover_fast() -> float:
        t0 = time.monotonic()
        assert await hover_text(client, good_uri, gelu)
        return time.monotonic() - t0

    for name, (text, expect, line1) in BAD.items():
        p = work / name
        p.write_text(text)
        uri = open_doc(client, p)
        worst = 0.0

        async def diagnosed(uri: str = uri, expect: str = expect):
            nonlocal worst
            worst = max(worst, await hover_fast())  # the server answers while the job runs
            return [d for d in diags(client, uri) if expect in d.message]

        found = await until(diagnosed, timeout=90, every=0.2)
        lines = line1 if isinstance(line1, tuple) else (line1,)
        assert found[0].range.start.line + 1 in lines, (name, found[0])
        assert worst <= 1.0, (name, worst)
        assert await hover_fast() <= 1.0  # and after

    # a syntax error mid-edit: said at its line; the unchanged lines keep their hints
    text = good.read_text()
    broken = text.replace("def forward(self, x: torch.Tensor) -> torch.Tensor:", "def forward(self, x:")
    change(client, good_uri, 2, broken)
    found = await until(lambda: [d for d in diags(client, good_uri) if "syntax" in d.message.lower()], timeout=30)
    assert found[0].range.start.line == line_of(broken, "def forward(self, x:")
    assert gelu in await hints(client, good_uri)
    # the fixed text analyzes again (the pool replaced every killed worker)
    change(client, good_uri, 3, text)
    await until(lambda: not [d for d in diags(client, good_uri) if "syntax" in d.message.lower()], timeout=30)
    assert (await command(client, "solar.status"))["workers_started"] >= 3


CHAIN = """import torch


# solar: a=f32[512,512], b=f32[512,512], c=f32[512,4]
def chain(a, b, c):
    return a @ b @ c
"""


async def test_reorder_action_edits_the_line(client: LanguageClient, tmp_path: pathlib.Path):
    await start(client, tmp_path, cacheDir=str(tmp_path / "cache"), verify=False)
    path = tmp_path / "chain.py"
    path.write_text(CHAIN)
    uri = open_doc(client, path)
    await until(lambda: hints(client, uri))
    acts = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri), range=T.Range(T.Position(5, 4), T.Position(5, 4)),
        context=T.CodeActionContext(diagnostics=[])))
    re = [a for a in acts if a.title.startswith("solar: Reorder")]
    assert re and re[0].edit is not None, [a.title for a in acts]
    (edit,) = re[0].edit.changes[uri]
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.character) == (5, 11, 20)
    assert "torch.einsum(" in edit.new_text and "b, c)" in edit.new_text
    assert "fewer FLOPs" in re[0].title
