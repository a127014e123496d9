"""The language server over a real LSP connection, for two things an editor user hits:
a worker interpreter that cannot start (the user is told why, once, and it is retried on the
next save), and a model whose layers live in a sibling module (editing that module refreshes
the hints; solar.reanalyze really runs the analysis again). Also the entry points a client asks
for (solar.entries) and the headroom the entry's hover keeps."""

from __future__ import annotations

import asyncio
import os
import pathlib
import shutil
import site
import subprocess
import sys
import tempfile
import textwrap

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server import change, command, diags, hints, line_of, open_doc, start, until

from solar_lsp.lsp.closure import closure_hash
from solar_lsp.source.discover import discover

ROOT = pathlib.Path(__file__).resolve().parent.parent
MLP = ROOT / "examples" / "mlp.py"

# A virtual environment without torch: the project interpreter a user points the worker at.
ENV_DIR = pathlib.Path(tempfile.gettempdir()) / f"solar-lsp-test-noenv-{os.getpid()}"
ENV_PYTHON = ENV_DIR / "bin" / "python"


def _on_refresh(client: LanguageClient) -> None:
    @client.feature(T.WORKSPACE_INLAY_HINT_REFRESH)
    def on_hint_refresh(params: None) -> None:
        return None

    @client.feature(T.WORKSPACE_CODE_LENS_REFRESH)
    def on_lens_refresh(params: None) -> None:
        return None


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "solar_lsp.lsp.server"]))
async def client(lsp_client: LanguageClient):
    _on_refresh(lsp_client)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def no_torch_env():
    """``python -m venv`` without system site-packages: it cannot ``import torch``. The
    solar_lsp source is reachable through PYTHONPATH, as with an editable checkout."""
    shutil.rmtree(ENV_DIR, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(ENV_DIR)], check=True)
    yield ENV_DIR
    shutil.rmtree(ENV_DIR, ignore_errors=True)


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-m", "solar_lsp.lsp.server"],
    server_env={**os.environ, "SOLAR_LSP_WORKER_PYTHON": str(ENV_PYTHON),
                "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}))
async def broken_client(lsp_client: LanguageClient, no_torch_env):
    _on_refresh(lsp_client)
    yield
    await lsp_client.shutdown_session()


def save(client: LanguageClient, uri: str) -> None:
    client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=T.TextDocumentIdentifier(uri)))


def _messages(client: LanguageClient, uri: str) -> list[str]:
    return [d.message for d in diags(client, uri)]


async def test_worker_that_cannot_start_is_reported_and_retried_on_save(
        broken_client: LanguageClient, tmp_path: pathlib.Path):
    client = broken_client
    shutil.copy(MLP, tmp_path / "mlp.py")
    await start(client, tmp_path, cacheDir=str(tmp_path / "cache"))
    text = (tmp_path / "mlp.py").read_text()
    uri = open_doc(client, tmp_path / "mlp.py")

    def failure() -> str | None:
        return next((m for m in _messages(client, uri) if "could not start" in m), None)

    msg = await until(failure, timeout=120)
    assert msg.startswith("solar: the analysis worker could not start: ModuleNotFoundError")
    assert "No module named 'torch'" in msg and str(ENV_PYTHON) in msg
    d = next(d for d in diags(client, uri) if "could not start" in d.message)
    assert d.range.start.line == line_of(text, "class Model")  # on the entry, like other failures
    status = await command(client, "solar.status")
    assert status["analyzing"] == 0 and "No module named 'torch'" in status["worker_error"]
    started = status["workers_started"]
    assert started == 3  # three tries, then it stops
    await asyncio.sleep(4)
    assert (await command(client, "solar.status"))["workers_started"] == started  # no retry loop

    # the user makes torch importable in that environment and saves: it is tried again. (The
    # packages are this interpreter's, which may itself be a venv: a .pth file adds its
    # site-packages, which switching on the system site-packages would not.)
    [site_dir] = list(ENV_DIR.glob("lib/python3*/site-packages"))
    (site_dir / "solar_test_env.pth").write_text(
        "".join(f"import site; site.addsitedir({d!r})\n" for d in site.getsitepackages()))
    save(client, uri)
    by_line = await until(lambda: hints(client, uri), timeout=180)
    assert "FLOP" in by_line[line_of(text, "F.gelu(h)")]
    await until(lambda: failure() is None, timeout=30)
    status = await command(client, "solar.status")
    assert status["worker_error"] is None and status["workers_started"] > started


LAYERS = textwrap.dedent("""\
    from torch import nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(256, 256)

        def forward(self, x):
            return self.fc(x)
""")

MODEL = textwrap.dedent("""\
    import torch
    from layers import Block
    from torch import nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            y = self.block(x)
            return torch.relu(y)


    def get_inputs():
        return [torch.randn(64, 256)]
""")


async def test_editing_a_sibling_module_refreshes_hints(client: LanguageClient, tmp_path: pathlib.Path):
    (tmp_path / "layers.py").write_text(LAYERS)
    model = tmp_path / "model.py"
    model.write_text(MODEL)
    await start(client, tmp_path, cacheDir=str(tmp_path / "cache"), verify=False)
    uri = open_doc(client, model)
    call = line_of(MODEL, "self.block(x)")
    first = (await until(lambda: _hint_at(client, uri, call), timeout=180))
    assert "FLOP" in first

    # the layer now does twice the work; saving the model (unchanged) picks it up
    (tmp_path / "layers.py").write_text(LAYERS.replace("return self.fc(x)", "return self.fc(self.fc(x))"))
    jobs = (await command(client, "solar.status"))["jobs"]
    save(client, uri)
    second = await until(lambda: _changed(client, uri, call, first), timeout=180)
    assert _flops(second) == pytest.approx(2 * _flops(first), rel=0.01), (first, second)
    assert (await command(client, "solar.status"))["jobs"] == jobs + 1

    # saving the sibling itself (open in the editor) re-analyzes the model that imports it
    layers_uri = open_doc(client, tmp_path / "layers.py")
    (tmp_path / "layers.py").write_text(LAYERS)
    save(client, layers_uri)
    third = await until(lambda: _changed(client, uri, call, second), timeout=180)
    assert third == first

    # solar.reanalyze runs a job even though the disk cache holds this exact result
    jobs = (await command(client, "solar.status"))["jobs"]
    await command(client, "solar.reanalyze", uri)
    await until(lambda: _jobs_above(client, jobs), timeout=120)
    assert (await until(lambda: _hint_at(client, uri, call), timeout=180)) == first


async def _hint_at(client: LanguageClient, uri: str, line: int) -> str | None:
    return (await hints(client, uri)).get(line)


async def _changed(client: LanguageClient, uri: str, line: int, old: str) -> str | None:
    h = await _hint_at(client, uri, line)
    return h if h and h != old else None


async def _jobs_above(client: LanguageClient, n: int) -> bool:
    return (await command(client, "solar.status"))["jobs"] > n


def _flops(label: str) -> float:
    """The FLOP count at the start of a hint label ("8.4 MFLOP · …")."""
    words = label.split("FLOP")[0].split()
    scale = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    if words[-1] in scale:
        return float(words[-2]) * scale[words[-1]]
    return float(words[-1])


def test_closure_hash_covers_imported_files(tmp_path: pathlib.Path):
    sib = tmp_path / "layers.py"
    sib.write_text(LAYERS)
    h = closure_hash(MODEL, "Model", files=[str(sib)])
    assert h != closure_hash(MODEL, "Model")
    assert closure_hash(MODEL, "Model", files=[str(sib)]) == h  # stable while nothing changes
    sib.write_text(LAYERS.replace("256, 256", "256, 512"))
    assert closure_hash(MODEL, "Model", files=[str(sib)]) != h  # edited
    edited = closure_hash(MODEL, "Model", files=[str(sib)])
    sib.unlink()
    assert closure_hash(MODEL, "Model", files=[str(sib)]) not in (h, edited)  # deleted


async def _entry_hover(client: LanguageClient, uri: str, line: int) -> str | None:
    from test_server import hover_text
    return await hover_text(client, uri, line)


async def test_entry_hover_keeps_the_last_headroom_across_reanalysis(client: LanguageClient, tmp_path: pathlib.Path):
    """Explain headroom → the entry's hover shows the measured time, device, measured/fused,
    measured/cache-aware and the diagnosis; solar.reanalyze keeps it as is; an edit of the
    model keeps it but says it was measured on an earlier version of the code."""
    shutil.copy(MLP, tmp_path / "mlp.py")
    await start(client, tmp_path, cacheDir=str(tmp_path / "cache"), verify=False)
    text = (tmp_path / "mlp.py").read_text()
    uri = open_doc(client, tmp_path / "mlp.py")
    gelu, entry_line = line_of(text, "F.gelu(h)"), line_of(text, "class Model")
    await until(lambda: _hint_at(client, uri, gelu), timeout=180)
    assert "last measured" not in (await _entry_hover(client, uri, entry_line) or "")

    hr = await command(client, "solar.explainHeadroom", uri, "Model")
    assert "Diagnosis:" in hr["text"], hr
    hov = await _entry_hover(client, uri, entry_line)
    assert "last measured:" in hov and "on cpu" in hov and "× the fused bound" in hov, hov
    assert "× the cache-aware bound" in hov and "diagnosis: **" in hov, hov
    assert "earlier version" not in hov

    jobs = (await command(client, "solar.status"))["jobs"]
    await command(client, "solar.reanalyze", uri)
    await until(lambda: _jobs_above(client, jobs), timeout=120)
    again = await until(lambda: _entry_hover_with(client, uri, entry_line, "last measured:"), timeout=180)
    # the same measurement is carried over, and unchanged code is not called "earlier"
    assert again.split("last measured:")[1].split("×")[0] == hov.split("last measured:")[1].split("×")[0]
    assert "earlier version" not in again, again

    label = await _hint_at(client, uri, gelu)
    edited = text.replace("h = F.gelu(h)", "h = F.gelu(h) * 2.0")
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[T.TextDocumentContentChangeWholeDocument(text=edited)]))
    await until(lambda: _changed(client, uri, gelu, label), timeout=180)
    stale = await _entry_hover(client, uri, entry_line)
    assert "last measured:" in stale and "measured on an earlier version of the code" in stale, stale
    line_hov = await _entry_hover(client, uri, gelu)
    assert "last measured" in line_hov and "earlier version" in line_hov, line_hov


async def _entry_hover_with(client: LanguageClient, uri: str, line: int, want: str) -> str | None:
    h = await _entry_hover(client, uri, line)
    return h if h and want in h else None


PRAGMA_FN = textwrap.dedent("""\
    import torch


    # solar: x=f32[8,16], w=f32[16,4]
    def matmul(x, w):
        return x @ w
""")


async def test_entries_command_answers_from_the_text(client: LanguageClient, tmp_path: pathlib.Path):
    """solar.entries lists what discovery finds in the document's text (AST only, no job):
    the Model of examples/mlp.py as the editor has it, a file on disk that is not open, and
    why a buffer that does not parse has none."""
    shutil.copy(MLP, tmp_path / "mlp.py")
    (tmp_path / "ops.py").write_text(PRAGMA_FN)
    await start(client, tmp_path, cacheDir=str(tmp_path / "cache"), verify=False)
    text = MLP.read_text()
    model = line_of(text, "class Model") + 1
    (want,) = discover(text, str(tmp_path / "mlp.py"))

    ops = await command(client, "solar.entries", (tmp_path / "ops.py").as_uri())  # not open
    assert ops == {"entries": [{"name": "matmul", "kind": "function", "frontend": "torch", "line": 5,
                                "end_line": 6, "pragma_line": 4}]}
    assert (await command(client, "solar.status"))["jobs"] == 0  # no worker was asked

    uri = open_doc(client, tmp_path / "mlp.py")
    reply = await command(client, "solar.entries", uri)
    assert reply == {"entries": [{"name": "Model", "kind": "model", "frontend": "torch", "line": model,
                                  "end_line": want.end_line, "pragma_line": None}]}
    assert want.end_line > model

    change(client, uri, 2, text.replace("class Model(nn.Module):", "class Model(nn.Module)"))
    broken = await command(client, "solar.entries", uri)
    assert broken["entries"] == [] and broken["error"].startswith("syntax error at line"), broken
