"""The language server over a real LSP connection, for the editor side of symbolic costs
(issue 20: formulas under the numbers, the "SOL at S=…" lens), training-step mode (issue 19:
``solar.mode``, ``solar.optimizer``, ``solar.targetStepsPerSecond``) and the hover's words
(issue 18: friendly op names, the unit a GEMM is priced on)."""

from __future__ import annotations

import pathlib
import sys

import pytest
import pytest_lsp
from lsprotocol import types as T
from pygls import uris
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server import command, diags, hover_text, line_of, open_doc, start, until

from solar_lsp.lsp.sizes import fmt_sizes, parse_sizes

# an fp32 GEMM (priced at the vector peak under PyTorch's default: matmul without TF32) and a
# bf16 one (on tensor cores), each a function with shape symbols in its pragma
SRC = '''import torch


# solar: B=2, S=64, D=32, x=f32[B,S,D], w=f32[D,D]
def mm32(x, w):
    y = x @ w
    return torch.relu(y)


# solar: S=64, x=bf16[S,128], w=bf16[128,128]
def mm16(x, w):
    return x @ w
'''


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


async def lens_titles(client: LanguageClient, uri: str) -> list[str]:
    lenses = await client.text_document_code_lens_async(T.CodeLensParams(T.TextDocumentIdentifier(uri)))
    return [ln.command.title for ln in lenses or [] if ln.command]


async def _write(tmp_path: pathlib.Path) -> tuple[pathlib.Path, str]:
    path = tmp_path / "mm.py"
    path.write_text(SRC)
    return path, SRC


async def test_formulas_in_hover_and_the_sol_at_lens(client: LanguageClient, tmp_path: pathlib.Path):
    await start(client, tmp_path, cacheDir=str(tmp_path / "cache"), symbolic=True, verify=False)
    path, text = await _write(tmp_path)
    uri = open_doc(client, path)
    entry_line = line_of(text, "def mm32")
    hov = await until(lambda: _has(hover_text(client, uri, entry_line), "Formulas in"), timeout=240)
    # the formulas under the numbers, in the pragma's symbols
    assert "Formulas in B, S, D" in hov and "`2·B·D²·S`" in hov, hov
    # the unit actually used: an fp32 GEMM without TF32 is priced at the vector fp32 peak
    assert "at the vector fp32 peak" in hov and "on tensor cores" not in hov, hov
    line = await hover_text(client, uri, line_of(text, "y = x @ w"))
    assert "formulas: tensor FLOPs = 2·B·D²·S" in line and "`matmul`" in line and "aten." not in line, line
    hov16 = await until(lambda: _has(hover_text(client, uri, line_of(text, "def mm16")), "Formulas in"))
    assert "on tensor cores (bf16)" in hov16 and "vector" not in hov16.split("in all:")[1].split("\n")[0], hov16

    titles = await lens_titles(client, uri)
    assert "SOL at B=…, S=…, D=… (pick sizes)" in titles and "SOL at S=… (pick sizes)" in titles, titles
    lens = next(ln for ln in await client.text_document_code_lens_async(T.CodeLensParams(T.TextDocumentIdentifier(uri)))
                if ln.command and ln.command.title.startswith("SOL at B="))
    assert lens.command.command == "solar.solAt"
    assert parse_sizes(lens.command.arguments[3]) == {"B": 2, "S": 64, "D": 32}  # what a client pre-fills

    # the user picks S=4096: the formulas there equal the entry analyzed there
    reply = await command(client, "solar.solAt", uri, "mm32", "S=4096")
    assert "error" not in reply, reply
    f, a = reply["formulas_at"], reply["analysis_at"]["totals"]
    assert f["sizes"] == {"B": 2, "S": 4096, "D": 32}
    assert f["t_fused_s"] == _approx(a["t_fused_s"]) and f["t_unfused_s"] == _approx(a["t_unfused_s"])
    assert f["t_fused_s"] == _approx(max(f["compute_s"], f["memory_s"]))
    assert a["t_cache_aware_s"] is not None
    assert f["tensor_flops"] == 2 * 2 * 32 * 32 * 4096
    titles = await until(lambda: _with(lens_titles(client, uri), "SOL at S=4096"))
    assert any(t.startswith("SOL at S=4096 (h100-sxm): unfused ") and "cache-aware" in t for t in titles), titles
    bad = await command(client, "solar.solAt", uri, "mm32", "Q=4")
    assert "Q is not a shape symbol" in bad["error"], bad
    assert "write NAME=SIZE" in (await command(client, "solar.solAt", uri, "mm32", "S=lots"))["error"]


async def test_formulas_fitted_lazily_on_the_command(client: LanguageClient, tmp_path: pathlib.Path):
    """With solar.symbolic off no formula is fitted and no SOL-at lens shown; the command fits
    them in a worker when asked, and the hover shows them from then on."""
    await start(client, tmp_path, cacheDir=str(tmp_path / "cache"), verify=False)
    path, text = await _write(tmp_path)
    uri = open_doc(client, path)
    entry_line = line_of(text, "def mm16")
    hov = await until(lambda: hover_text(client, uri, entry_line), timeout=240)
    assert "Formulas" not in hov
    assert not any(t.startswith("SOL at") for t in await lens_titles(client, uri))
    reply = await command(client, "solar.solAt", uri, "mm16", {"S": 256})
    assert reply["formulas_at"]["tensor_flops"] == 2 * 256 * 128 * 128, reply
    assert reply["formulas_at"]["t_fused_s"] == _approx(reply["analysis_at"]["totals"]["t_fused_s"])
    assert "Formulas in S" in await hover_text(client, uri, entry_line)
    view = pathlib.Path(uris.to_fs_path(reply["uri"])).read_text()
    assert view.startswith("# SOL of mm16 at S=256 on h100-sxm") and "max(compute, memory)" in view


async def test_train_mode_is_shown_or_its_failure_is(client: LanguageClient, tmp_path: pathlib.Path):
    """solar.mode=train reaches the engine. Once the engine analyzes training steps, the hover
    and lens show the step per phase and the target in steps/s; until then the failure, or a
    forward-only result, is said as such, never passed off as a training step."""
    await start(client, tmp_path, cacheDir=str(tmp_path / "cache"), verify=False, mode="train",
                optimizer="sgd", targetStepsPerSecond=1000)
    path = tmp_path / "lin.py"
    path.write_text(LINEAR)
    uri = open_doc(client, path)
    entry_line = line_of(LINEAR, "class Model")
    titles = await until(lambda: _settled(lens_titles(client, uri)), timeout=240)
    hov = await hover_text(client, uri, entry_line)
    print("train-mode lens:", titles)  # which branch ran, in the test log
    if any(t.startswith("SOL train step h100-sxm: unfused") for t in titles):  # the engine's train path
        assert "**train step**" in hov and "| forward |" in hov and "| backward |" in hov, hov
        assert any(t.startswith("per phase (fused): forward ") and "backward" in t for t in titles), titles
        assert any(t.startswith("1000 steps/s needs ≥ ") for t in titles), titles
        line = await hover_text(client, uri, line_of(LINEAR, "self.fc(x)"))
        assert line.startswith("**Model** · line") and "**train step**" in line, line
    elif any("train step failed —" in t for t in titles):  # the engine refused: its reason is shown
        msgs = [d.message for d in diags(client, uri)]
        assert any("could not be analyzed" in m for m in msgs), msgs
        assert "analysis failed —" in hov, hov
    else:  # a forward-only result must say so in the lens
        assert any("forward only: this result is not a training step" in t for t in titles), titles
        assert "train step" not in hov, hov


LINEAR = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 32)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []
'''


def _approx(x: float):
    return pytest.approx(x, rel=1e-9)


async def _has(coro, needle: str):
    v = await coro
    return v if v and needle in v else None


async def _with(coro, prefix: str):
    v = await coro
    return v if any(t.startswith(prefix) for t in v) else None


async def _settled(coro):
    v = await coro
    return v if v and not any("analyzing" in t or "verifying" in t for t in v) else None


def test_sizes_round_trip():
    assert parse_sizes(fmt_sizes({"B": 2, "S": 64})) == {"B": 2, "S": 64}
