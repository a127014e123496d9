"""Large weights drawn at their first use in the golden run (issue 17, peak RSS): a module
parameter of LAZY_BYTES or more is left on meta by the verification build and drawn where
the graph first reads it, then let go after its last use, so a model's large weights are
never all in memory at once (VGG16: 2.0 GB peak before, under 1 GB after). Each op is still
checked on the values its own node read, and a wrong lowering is still caught."""

from __future__ import annotations

import torch
from conftest import only_entry, short_reduction, traced_file, write

from solar_lsp.verify.core import LAZY_BYTES


def _two_linears(n_in: int, hidden: int, n_out: int) -> str:
    """A model of two Linear layers, n_in -> hidden -> n_out, on a batch of 2."""
    return f"""
    import torch


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear({n_in}, {hidden})
            self.b = torch.nn.Linear({hidden}, {n_out})

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))


    def get_inputs():
        return [torch.rand(2, {n_in})]


    def get_init_inputs():
        return []
    """


# two 24 MiB weights (4096 x 1536 float32), one after the other
TWO = _two_linears(4096, 1536, 4096)

# a buffer computed from a large tensor needs its values: the model is built in full
MASKED = """
    import torch


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4096, 1536)
            self.register_buffer("scale", torch.ones(4096, 1536).sum(0))

        def forward(self, x):
            return self.fc(x) * self.scale


    def get_inputs():
        return [torch.rand(2, 4096)]


    def get_init_inputs():
        return []
    """



def _build(src: str, tmp_path):
    from solar_lsp.frontend.torch.build import build

    path = str(write(tmp_path, "m.py", src))
    _, _, module, entry = traced_file(path)
    return build(module, entry, path, device="cpu", lazy_bytes=LAZY_BYTES)


def test_the_build_leaves_large_weights_on_meta_and_the_rest_real(tmp_path):
    model, inputs = _build(TWO, tmp_path)
    assert model.a.weight.device.type == "meta" and model.b.weight.device.type == "meta"
    assert model.a.bias.device.type == "cpu"  # small: built with its values
    assert inputs[0].device.type == "cpu"


def test_a_buffer_made_from_a_large_tensor_builds_in_full(tmp_path):
    model, _ = _build(MASKED, tmp_path)
    assert all(t.device.type == "cpu" for t in [*model.parameters(), *model.buffers()])


def test_the_peak_counts_a_large_weight_from_its_first_use(tmp_path, monkeypatch):
    from solar_lsp.verify import core, stream

    _, lowered, _, _ = traced_file(str(write(tmp_path, "two.py", TWO)))
    p = lowered.program
    one = 4096 * 1536 * 4
    assert len(core.lazy_weights(p)) == 2
    lazy = stream.peak_bytes(p)
    monkeypatch.setattr(stream, "lazy_weights", lambda p: set())
    # built with the model, both weights are live at the first op; drawn, at most one is
    # (and the second only from the op reading it)
    assert stream.peak_bytes(p) - lazy >= one
    assert lazy < 2 * one


def test_models_with_drawn_weights_verify_and_a_wrong_one_is_caught(tmp_path, monkeypatch):
    from solar_lsp.verify import check_torch, counts_torch

    drawn: list[str] = []
    real = counts_torch.draw_weight

    def spy(like, seed, name):
        drawn.append(name)
        return real(like, seed, name)

    monkeypatch.setattr(check_torch, "draw_weight", spy)
    for src in (TWO, MASKED):
        traced, lowered, module, _ = traced_file(str(write(tmp_path, "m.py", src)))
        v = check_torch.verify(traced, lowered, module)
        assert v.status == "verified", v.detail
    # every large weight of both models was drawn (MASKED's after its full build too)
    assert sorted(set(drawn)) == sorted({"p_a_weight", "p_b_weight", "p_fc_weight"})
    traced, lowered, module, _ = traced_file(str(write(tmp_path, "two.py", TWO)))
    short_reduction(lowered.program)
    bad = check_torch.verify(traced, lowered, module)
    assert bad.status == "mismatch", bad.detail


def test_drawn_values_are_the_same_in_every_pass_and_scaled_like_torchs_default():
    from solar_lsp.verify.counts_torch import draw_weight

    like = torch.empty(1024, 4096, device="meta")
    a, b = draw_weight(like, 0, "p_fc_weight"), draw_weight(like, 0, "p_fc_weight")
    assert torch.equal(a, b)
    assert not torch.equal(a, draw_weight(like, 0, "p_other_weight"))
    bound = 1 / 4096**0.5
    assert float(a.abs().max()) <= bound and float(a.abs().max()) > 0.9 * bound


def test_vgg_sized_classifier_is_verified_under_the_default_budget(tmp_path):
    # VGG16's 411 MB first classifier weight (25088 x 4096) and a 4096 x 4096 one: verified
    # under the default 1 GiB budget, without falling back to --budget-max
    from solar_lsp.pipeline.analyze import Config, analyze_file

    e = only_entry(analyze_file(str(write(tmp_path, "vggfc.py", _two_linears(25088, 4096, 4096))), Config()))
    v = e.verification
    assert v["status"] == "verified", v["detail"]
    assert "larger budget" not in v["detail"]
