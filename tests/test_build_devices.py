"""Code written for a GPU, and ``__init__`` code that reads tensor values, is analyzed and
verified on this CPU-only machine (frontend/torch/devices.py; docs/architecture.md §2,
"Building the entry"); what cannot be analyzed says why, at the user's line."""

from __future__ import annotations

from conftest import line_of, write

from solar_lsp.frontend.torch.build import build, load_module
from solar_lsp.pipeline.analyze import Config, analyze_file
from solar_lsp.source.discover import discover

# Stochastic depth rates and layer widths read with .item()/.tolist(), a relative position
# index built with arange and used to index a table in forward (the Swin pattern).
VALUES_IN_INIT = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, window):
            super().__init__()
            self.rates = [x.item() for x in torch.linspace(0, 0.1, 3)]
            widths = (torch.arange(1, 4) * 16).tolist()
            self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip([16] + widths, widths))
            coords = torch.arange(window)
            self.register_buffer("index", coords[:, None] - coords[None, :] + window - 1)
            self.table = nn.Parameter(torch.randn(2 * window - 1))
            self.scale = float(torch.tensor([4.0]).sqrt().numpy()[0])

        def forward(self, x):
            for layer, rate in zip(self.layers, self.rates):
                x = layer(x) * (1 - rate)
            bias = self.table[self.index.view(-1)].view(x.shape[1], x.shape[1])
            return bias @ x / self.scale


    def get_inputs():
        return [torch.randn(2, 8, 16)]


    def get_init_inputs():
        return [8]
    """

CUDA_INPUTS = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)


    def get_inputs():
        q = torch.rand(2, 4, 16, 8, device='cuda', dtype=torch.float32)
        k = torch.rand(2, 4, 16, 8, device=torch.device('cuda:0'))
        v = torch.rand(2, 4, 16, 8).to('cuda')
        return [q, k, v]
    """

CUDA_MODULE = """
    import torch
    import torch.nn as nn

    device = torch.device("cuda")


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(32, 64).cuda()
            self.out = nn.Linear(64, 8).to(device)

        def forward(self, x):
            return self.out(torch.relu(self.lin(x)))


    def get_inputs():
        return [torch.randn(4, 32).cuda()]
    """

# small operands, huge result: must stay a shape (no 64 GB outer product on the CPU)
SMALL_TIMES_SMALL = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            a = torch.ones(131072)
            self.register_buffer("outer", a[:, None] * a[None, :])
            self.lin = nn.Linear(64, 64)

        def forward(self, x):
            return self.lin(x) + self.outer[:4, :64]


    def get_inputs():
        return [torch.randn(4, 64)]
    """

HUGE_ITEM = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.randn(4096, 4096).abs().max().item()

        def forward(self, x):
            return x / self.norm


    def get_inputs():
        return [torch.randn(4, 64)]
    """

ITEM_OF_INPUT = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x):
            n = int(x.max().item())
            return x[:, :n] * 2


    def get_inputs():
        return [torch.randint(1, 8, (4, 8))]
    """

CUDA_IN_FORWARD = """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(32, 32)

        def forward(self, x):
            bias = torch.ones(32, device="cuda")
            return self.lin(x.cuda()) + bias


    def get_inputs():
        return [torch.randn(4, 32)]
    """


def _entry(tmp_path, name: str, source: str, verify: bool = True):
    path = write(tmp_path, name, source)
    report = analyze_file(path, Config(hw=["h100-sxm"], verify=verify))
    assert report.error is None, report.error
    [e] = report.entries
    return path, e


def _verified(e) -> None:
    assert e.status == "ok", e.error
    assert not e.unsupported, e.unsupported
    assert e.verification["status"] == "verified", e.verification


def test_values_read_in_init_are_real(tmp_path):
    path, e = _entry(tmp_path, "values.py", VALUES_IN_INIT)
    _verified(e)
    # the layer widths came from .tolist(): 16 -> 16 -> 32 -> 48 on 2*8 rows, then the
    # (8, 8) bias gathered through the index times the (2, 8, 48) activations
    widths = [(16, 16), (16, 32), (32, 48)]
    assert e.totals["macs"] == sum(16 * a * b for a, b in widths) + 2 * 8 * 8 * 48
    assert line_of(path, "bias = self.table[") in {ln.line for ln in e.lines}


def test_gpu_inputs(tmp_path):
    path, e = _entry(tmp_path, "sdpa.py", CUDA_INPUTS)
    _verified(e)
    assert [tuple(i["shape"]) for i in e.inputs] == [(2, 4, 16, 8)] * 3


def test_gpu_submodules_and_inputs(tmp_path):
    path, e = _entry(tmp_path, "cudamod.py", CUDA_MODULE)
    _verified(e)
    assert e.totals["macs"] == 4 * 32 * 64 + 4 * 64 * 8


def test_the_build_notes_each_gpu_device_once(tmp_path):
    path = write(tmp_path, "cudamod.py", CUDA_MODULE)
    [entry] = discover(open(path).read(), path)
    notes: list[dict] = []
    model, inputs = build(load_module(path), entry, path, "meta", notes=notes)
    assert all(t.device.type == "meta" for t in [*model.parameters(), *inputs])
    [note] = notes
    assert note["kind"] == "device" and "'cuda'" in note["note"]
    assert note["line"] == line_of(path, "self.lin = nn.Linear(32, 64).cuda()")
    model, inputs = build(load_module(path), entry, path, "cpu")
    assert all(t.device.type == "cpu" for t in [*model.parameters(), *inputs])


def test_small_operands_with_a_huge_result_stay_shapes(tmp_path):
    path, e = _entry(tmp_path, "outer.py", SMALL_TIMES_SMALL, verify=False)
    assert e.status == "ok", e.error
    assert e.totals["macs"] == 4 * 64 * 64


def test_values_of_a_huge_tensor_fail_clearly(tmp_path):
    path, e = _entry(tmp_path, "hugeitem.py", HUGE_ITEM)
    assert e.status == "error"
    assert "building the entry failed" in e.error and "item()" in e.error
    assert "1 MiB" in e.error  # says which tensors have values, and what to do
    assert e.error_line == line_of(path, ".item()")


def test_item_of_input_data_in_forward_fails_clearly(tmp_path):
    path, e = _entry(tmp_path, "fwditem.py", ITEM_OF_INPUT)
    assert e.status == "error"
    assert "trace" in e.error and "tensor values" in e.error
    assert e.error_line == line_of(path, "x.max().item()")


def test_gpu_device_in_forward(tmp_path):
    path, e = _entry(tmp_path, "fwdcuda.py", CUDA_IN_FORWARD)
    _verified(e)
    assert any(n["kind"] == "device" for n in e.notes)
