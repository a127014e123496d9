"""Random draws inside a model (issue 16: KernelBench's LSTMs draw h0/c0 with torch.randn in
forward). The draw is lowered as an op that writes its output and does no arithmetic; verification
checks its shape and dtype, takes its values from torch, and checks every op after it against
torch as usual, so a wrong lowering downstream of the draw is still caught."""

from __future__ import annotations

from conftest import line_of, only_entry, write

RANDN = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 32)

        def forward(self, x):
            h = torch.randn(x.shape[0], 64)
            u = torch.rand_like(x)
            return torch.relu(self.fc(x * u + h))


    def get_inputs():
        return [torch.randn(16, 64)]


    def get_init_inputs():
        return []
    """


def _analyze(path: str):
    from solar_lsp.pipeline.analyze import Config, analyze_file
    return only_entry(analyze_file(path, Config()))


def test_model_drawing_random_values_in_forward_is_verified(tmp_path):
    path = write(tmp_path, "rnd.py", RANDN)
    e = _analyze(path)
    assert e.status == "ok" and not e.unsupported
    v = e.verification
    assert v["status"] == "verified", v
    assert "random values" in v["detail"] and "taken from torch" in v["detail"]
    line = line_of(path, "torch.randn(x.shape[0], 64)")
    assert f"random values (lines {line}, {line_of(path, 'torch.rand_like(x)')})" in v["detail"]
    # the draw writes its output: 16 x 64 fp32, and no FLOPs of its own
    row = next(r for r in e.lines if r.line == line)
    assert row.flops == 0
    assert row.bytes >= 16 * 64 * 4


def test_wrong_lowering_after_a_random_draw_is_caught(tmp_path, monkeypatch):
    from solar_lsp.frontend.torch import lower as torch_lower
    from solar_lsp.ir.core import call

    # relu clamping at 0.5: the op reads torch's drawn values, so it is still compared
    monkeypatch.setitem(torch_lower.LOWERINGS, "aten.relu.default",
                        lambda c, a, kw: c.ew(lambda x: call("max", x, 0.5), a[0]))
    path = write(tmp_path, "rnd.py", RANDN)
    v = _analyze(path).verification
    assert v["status"] == "mismatch", v
    assert "relu" in v["detail"]


def test_random_targets_agree_between_lowering_and_verifier():
    from solar_lsp.frontend.torch import creation
    from solar_lsp.frontend.torch import lower as torch_lower
    from solar_lsp.verify import op_check

    assert set(creation.RANDOM_TARGETS) == op_check.RANDOM_TARGETS
    assert all(t in torch_lower.LOWERINGS for t in op_check.RANDOM_TARGETS)
    assert "randn" not in torch_lower.NOT_LOWERED and "rand" not in torch_lower.NOT_LOWERED
