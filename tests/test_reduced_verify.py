"""Verification at every problem size (issue 16): an entry whose golden run is over the memory
budget or the loop-point limits is verified on the same lowering at reduced sizes, said so in
its verification, while its bounds stay those of the full size; a wrong lowering is still
caught at the reduced size, and code whose ops depend on the sizes is not passed off as
verified."""

from __future__ import annotations

import pytest
from conftest import line_of, only_entry, write

MB = 2**20

PRAGMA_MATMUL = """
    import torch


    # solar: B=512, D=1024, x=f32[B,D], w=f32[D,D]
    def mm(x, w):
        return torch.relu(x @ w)
    """

KB_LINEAR = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.fc = nn.Linear(dim, dim)

        def forward(self, x):
            return torch.relu(self.fc(x))


    batch_size = 4096
    dim = 8192


    def get_inputs():
        return [torch.rand(batch_size, dim)]


    def get_init_inputs():
        return [dim]
    """

KB_GRU = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, input_size, hidden_size):
            super().__init__()
            self.gru = nn.GRU(input_size, hidden_size, batch_first=True)

        def forward(self, x):
            out, _ = self.gru(x)
            return out


    batch_size = 32
    seq_len = 64
    input_size = 256
    hidden_size = 512


    def get_inputs():
        return [torch.rand(batch_size, seq_len, input_size)]


    def get_init_inputs():
        return [input_size, hidden_size]
    """

SIZE_DEPENDENT = """
    import torch


    # solar: N=4096, x=f32[N,N]
    def f(x):
        if x.shape[0] > 1000:
            return torch.relu(x)
        return torch.sigmoid(x)
    """


def analyze(path: str, budget: int, budget_max: int | None = None):
    """``budget`` as a hard limit unless ``budget_max`` is given (the reduced-size path)."""
    from solar_lsp.pipeline.analyze import Config, analyze_file
    return only_entry(analyze_file(path, Config(budget_bytes=budget,
                                                budget_max_bytes=budget_max or budget)))


def test_pragma_entry_over_budget_is_verified_at_reduced_symbols(tmp_path):
    path = write(tmp_path, "mm.py", PRAGMA_MATMUL)
    e = analyze(path, 1 * MB)
    assert e.status == "ok", e.error
    v = e.verification
    assert v["status"] == "verified", v
    red = v["reduced"]
    assert set(red) == {"B", "D"} and red["B"] < 512 and red["D"] < 1024
    assert f"B={red['B']}" in v["detail"] and f"D={red['D']}" in v["detail"]
    assert "the full size is not run" in v["detail"] and "over the" in v["full_size"]
    shapes = {i["name"]: i["shape"] for i in v["reduced_inputs"]}
    assert shapes == {"x": [red["B"], red["D"]], "w": [red["D"], red["D"]]}
    # the bounds (and the reported inputs) are the full size's
    assert e.totals["macs"] == 512 * 1024 * 1024
    assert {i["name"]: i["shape"] for i in e.inputs} == {"x": [512, 1024], "w": [1024, 1024]}


def test_pragma_with_literal_dims_shrinks_them_consistently(tmp_path):
    path = write(tmp_path, "lit.py", """
        import torch


        # solar: a=f32[2048, 1024], b=f32[1024, 512]
        def mm(a, b):
            return a @ b
        """)
    e = analyze(path, 1 * MB)
    v = e.verification
    assert v["status"] == "verified", v
    (m, k), (k2, n) = (i["shape"] for i in v["reduced_inputs"])
    assert k == k2 and m * k < 2048 * 1024 and n < 512
    assert e.totals["macs"] == 2048 * 1024 * 512


def test_module_pragma_init_integers_shrink_with_the_shapes(tmp_path):
    path = write(tmp_path, "proj.py", """
        import torch
        import torch.nn as nn


        # solar: x=f32[4096, 2048], init=(2048, 1024)
        class Proj(nn.Module):
            def __init__(self, n_in, n_out):
                super().__init__()
                self.fc = nn.Linear(n_in, n_out)

            def forward(self, x):
                return torch.tanh(self.fc(x))
        """)
    e = analyze(path, 4 * MB)
    v = e.verification
    assert v["status"] == "verified", v
    [x] = v["reduced_inputs"]
    assert x["shape"][0] < 4096 and x["shape"][1] < 2048
    assert e.totals["macs"] == 4096 * 2048 * 1024


def test_pragma_entry_that_fits_is_verified_at_full_size(tmp_path):
    path = write(tmp_path, "mm.py", PRAGMA_MATMUL)
    e = analyze(path, 2 * 1024 * MB)
    assert e.verification["status"] == "verified"
    assert "reduced" not in e.verification and "reduced size" not in e.verification["detail"]


def test_kernelbench_model_verified_with_smaller_module_constants(tmp_path):
    path = write(tmp_path, "kb.py", KB_LINEAR)
    e = analyze(path, 64 * MB)
    v = e.verification
    assert v["status"] == "verified", v
    assert set(v["reduced"]) == {"batch_size", "dim"}
    assert v["reduced"]["batch_size"] < 4096 and v["reduced"]["dim"] < 8192
    assert v["reduced_inputs"][0]["shape"] == [v["reduced"]["batch_size"], v["reduced"]["dim"]]
    assert e.totals["macs"] == 4096 * 8192 * 8192  # the bounds: full size
    assert e.inputs[0]["shape"] == [4096, 8192]


def test_literal_sizes_of_get_inputs_and_get_init_inputs_shrink_together():
    """tests/models/conv_s2.py writes its channels as literals in both functions."""
    from conftest import model_path
    e = analyze(model_path("conv_s2.py"), 2 * MB)
    v = e.verification
    assert v["status"] == "verified", v
    [x] = v["reduced_inputs"]
    assert x["shape"][1] < 256 and x["shape"][0] <= 8
    assert e.inputs[0]["shape"] == [8, 256, 31, 33]


def test_recurrence_over_the_point_limit_is_verified_on_fewer_steps(tmp_path):
    path = write(tmp_path, "gru.py", KB_GRU)
    e = analyze(path, 2 * 1024 * MB)
    v = e.verification
    assert v["status"] == "verified", v
    assert "loop points" in v["full_size"]
    assert v["reduced"]["seq_len"] < 64
    assert v["reduced_inputs"][0]["shape"][1] == v["reduced"]["seq_len"]


def test_wrong_lowering_is_caught_at_the_reduced_size(tmp_path, monkeypatch):
    from solar_lsp.frontend.torch import lower as torch_lower
    from solar_lsp.ir.core import call

    monkeypatch.setitem(torch_lower.LOWERINGS, "aten.relu.default",
                        lambda c, a, kw: c.ew(lambda x: call("max", x, 0.5), a[0]))
    path = write(tmp_path, "kb.py", KB_LINEAR)
    e = analyze(path, 64 * MB)
    v = e.verification
    assert e.status == "ok"
    assert v["status"] == "mismatch", v
    assert "reduced" in v and "relu" in v["detail"]
    assert f"line {line_of(path, 'torch.relu(self.fc(x))')}" in v["detail"]
    [issue] = [i for i in v["issues"] if i["status"] == "mismatch"]
    assert issue["worst"]["got"] == 0.5 and issue["worst"]["expected"] < 0.5


def test_size_dependent_code_is_not_passed_off_as_verified(tmp_path):
    path = write(tmp_path, "dep.py", SIZE_DEPENDENT)
    e = analyze(path, 1 * MB)
    v = e.verification
    assert e.status == "ok"
    assert v["status"] == "unverified", v
    assert "reduced" not in v
    assert "lowering differs" in v["detail"]


def test_jax_pragma_entry_over_budget_is_verified_at_reduced_symbols(tmp_path):
    pytest.importorskip("jax")
    path = write(tmp_path, "jmm.py", """
        import jax.numpy as jnp


        # solar: B=512, D=1024, x=f32[B,D], w=f32[D,D]
        def mm(x, w):
            return jnp.tanh(x @ w)
        """)
    e = analyze(path, 1 * MB)
    v = e.verification
    assert e.frontend == "jax"
    assert v["status"] == "verified", v
    assert v["reduced"]["B"] < 512 and v["reduced"]["D"] < 1024
    assert e.totals["macs"] == 512 * 1024 * 1024


def test_shrinking_keeps_structural_values_and_divisibility():
    from solar_lsp.verify.reduced import module_sites, rewrite_module, shrink, shrink_module

    assert shrink(6, 64, 2) == 6  # layers, heads, kernel sizes stay
    assert shrink(768, 16, 2) == 48 and 48 % 8 == 0  # a power-of-two factor keeps 768 / 8 heads whole
    src = ("batch_size = 128\nn_head = 8\nN = 2048 * 2\nshape = (batch_size, 3, 224)\n"
           "D, H, W = 16, 32, 64\n"  # one line naming three sizes (53 KernelBench problems)
           "def get_init_inputs():\n    return [1000]\n")
    sites = module_sites(rewrite_module(src, "<x>", {}))
    assert {s.name: s.value for s in sites} == {"batch_size": 128, "n_head": 8, "N": 4096,
                                                "shape[1]": 3, "shape[2]": 224, "D": 16, "H": 32,
                                                "W": 64, "": 1000}
    values, named = shrink_module(sites, {128, 8, 4096, 224, 3, 16, 32, 64}, 4, 2, anonymous=False)
    assert named == {"batch_size": 32, "N": 1024, "shape[2]": 56, "D": 4, "H": 8, "W": 16}
    ns: dict = {}
    exec(compile(rewrite_module(src, "<x>", values), "<x>", "exec"), ns)
    assert (ns["batch_size"], ns["n_head"], ns["N"], ns["shape"]) == (32, 8, 1024, (32, 3, 56))
    assert (ns["D"], ns["H"], ns["W"]) == (4, 8, 16)


GROUPED = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        assert out_channels % 4 == 0  # as ShuffleNet's unit checks
        mid = out_channels // 4
        self.c1 = nn.Conv2d(in_channels, mid, 1, groups=groups)
        self.c2 = nn.Conv2d(mid, out_channels, 1, groups=groups)

    def forward(self, x):
        return torch.relu(self.c2(torch.relu(self.c1(x))))


batch_size = 10
in_channels = 240
out_channels = 480
groups = 3
height = 512
width = 512


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, groups]
"""


def test_a_factor_that_breaks_the_code_gives_way_to_a_smaller_one(tmp_path):
    """480 / 16 = 30 fails the file's own `% 4` check; the search then tries 8 (60 passes, and
    every channel count stays a multiple of the 3 groups) instead of giving up."""
    e = analyze(write(tmp_path, "grouped.py", GROUPED), 2048 * MB)  # 32.7 GB: first factor 16
    v = e.verification
    assert v["status"] == "verified", v
    assert v["reduced"]["out_channels"] % 4 == 0 and v["reduced"]["in_channels"] % 3 == 0
    assert v["reduced"]["out_channels"] < 480


def test_no_reduced_size_fits_so_the_larger_budget_verifies_at_full_size(tmp_path):
    """Size-dependent code has no reduced size with the same lowering; under --budget-max the
    full size fits, so it is verified there, and the detail says why and under which budget."""
    path = write(tmp_path, "dep.py", SIZE_DEPENDENT)
    hard = analyze(path, 1 * MB).verification
    assert hard["status"] == "unverified"
    e = analyze(path, 1 * MB, budget_max=2048 * MB)
    v = e.verification
    assert v["status"] == "verified", v
    assert "reduced" not in v
    assert "under the larger budget of 2 GiB" in v["detail"] and "lowering differs" in v["detail"]


STRIDED = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, stride=2, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


batch_size = 16384
height, width = 16, 16


def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("guarded", [True, False])
def test_a_reduced_size_keeps_every_stride_checked(tmp_path, monkeypatch, guarded):
    """The first size the search tries (every size divided by the same factor, down to 2)
    leaves the stride-2 convolution one output row, where its stride is multiplied by 0: a
    stride planted wrong verifies there (``guarded=False`` shows it). The search refuses that
    size and goes on to one where each strided loop runs twice or more, and there the planted
    stride is a mismatch."""
    from solar_lsp.frontend import builders
    from solar_lsp.verify import reduced

    path = write(tmp_path, "strided.py", STRIDED)
    seen: list = []
    real = reduced.collapsed
    monkeypatch.setattr(reduced, "collapsed",
                        lambda full, small: seen.append(real(full, small)) or (seen[-1] if guarded else None))
    e = analyze(path, 1 * MB)
    assert e.verification["status"] == "verified", e.verification
    rows = (e.verification["reduced"]["height"] + 2 - 3) // 2 + 1
    assert (rows >= 2) is guarded, e.verification
    assert "runs once" in (seen[0] or ""), seen  # the first size tried: one output row
    window = builders.window_index
    monkeypatch.setattr(builders, "window_index",
                        lambda o, k, stride, dil, pad: window(o, k, 1 if stride == 2 else stride, dil, pad))
    bad = analyze(path, 1 * MB)
    assert bad.verification["status"] == ("mismatch" if guarded else "verified"), bad.verification


def test_a_loop_whose_value_is_computed_with_counts_as_strided():
    """``arange(0, n, 2)`` lowers to ``2 * i``: a reduced size where ``i`` runs once would leave
    the step unchecked, as a stride in an index would."""
    from solar_lsp.ir.core import Affine, Index, Kernel, Load, Op, Program, TensorType, call
    from solar_lsp.verify.reduced import collapsed

    def arange(n: int) -> Program:
        k = Kernel("arange", (("i", n),), Load("y", (Affine.var("i"),)), "=",
                   call("mul", Index(Affine.var("i")), 2.0))
        return Program("p", {"y": TensorType((n,), "float32")}, [Op("arange", "aten.arange.start_step", 1, [], ["y"], [k])])

    assert collapsed(arange(8), arange(2)) is None
    assert "runs once" in collapsed(arange(8), arange(1))
