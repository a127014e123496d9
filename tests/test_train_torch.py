"""Training-step tracing of torch entries (issue 19; docs/training.md, "PyTorch"): the joint
forward + backward graph lowered to IR, its counts against hand formulas and against
torch's FlopCounterMode run over an eager forward + backward, backward work on the forward
line it differentiates, and the gradients verified against torch autograd."""

from __future__ import annotations

import collections

import pytest
import torch
from conftest import line_of, write
from torch.utils.flop_counter import FlopCounterMode

from solar_lsp.bounds.einsum_graph import count_kernel
from solar_lsp.bounds.sol import part_of
from solar_lsp.frontend.torch import contractions
from solar_lsp.frontend.torch.context import LOWERINGS
from solar_lsp.frontend.torch.lower import lower
from solar_lsp.frontend.torch.trace import build, load_module
from solar_lsp.frontend.torch.train import grad_tensors, trace_train
from solar_lsp.source.discover import discover

MLP = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(16, 32)
        self.l2 = nn.Linear(32, 24)
        self.l3 = nn.Linear(24, 8)
        self.l3.bias.requires_grad_(False)

    def forward(self, x):
        h = torch.relu(self.l1(x))  # first
        h = torch.relu(self.l2(h))  # second
        return self.l3(h)  # third


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
"""

CONV = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.conv = nn.Conv2d(8, 6, 3, stride=2, padding=1, groups=2)

    def forward(self, x):
        h = torch.relu(self.stem(x))  # stem
        return self.conv(h)  # conv


def get_inputs():
    return [torch.randn(2, 3, 10, 10)]


def get_init_inputs():
    return []
"""

CONVT = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return self.up(torch.relu(self.conv(x)))  # up


def get_inputs():
    return [torch.randn(2, 3, 6, 6)]


def get_init_inputs():
    return []
"""

CONSTANT = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(16, 32)
        self.register_buffer("scale", torch.full((32,), 0.5))

    def forward(self, x):
        h = self.l1(x) * torch.tensor(2.0) + torch.zeros(32)
        return h * self.scale


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
"""

# nn.LSTM traced on fake tensors: one cell per step, with in-place sigmoid_, tanh_ and add_
EMBEDDING_LSTM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.rnn = nn.LSTM(16, 24, batch_first=True)
        self.head = nn.Linear(24, 50)

    def forward(self, idx):
        h = self.emb(idx)
        h, _ = self.rnn(h)
        return torch.log_softmax(self.head(h), dim=-1)


def get_inputs():
    return [torch.randint(0, 50, (2, 7))]


def get_init_inputs():
    return []
"""

RESNET = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c_in=8, c_out=16, stride=2):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                                  nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.down(x))


def get_inputs():
    return [torch.randn(2, 8, 12, 12)]


def get_init_inputs():
    return [8, 16, 2]
"""

ENCODER = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d=32, h=4, ff=64):
        super().__init__()
        self.h = h
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ff)
        self.fc2 = nn.Linear(ff, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q = q.view(b, s, self.h, d // self.h).transpose(1, 2)
        k = k.view(b, s, self.h, d // self.h).transpose(1, 2)
        v = v.view(b, s, self.h, d // self.h).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def get_inputs():
    return [torch.randn(2, 16, 32)]


def get_init_inputs():
    return [32, 4, 64]
"""


def traced_and_lowered(path: str, loss: str = "mean"):
    module = load_module(path)
    entry = discover(open(path).read(), path, {})[0]
    traced = trace_train(module, entry, path, loss)
    return module, traced, lower(traced)


def tensor_flops(program, phase: str | None = None, line: int | None = None) -> int:
    """Tensor FLOPs of the ops of ``phase`` on ``line`` (None: any)."""
    return sum(count_kernel(k).tensor_flops * op.repeat for op in program.ops for k in op.kernels
               if (phase is None or op.phase == phase) and (line is None or op.line == line))


def eager_step_flops(path: str) -> int:
    """FlopCounterMode over an eager forward, loss and backward of the real model (attention
    through its math kernels: FlopCounterMode does not see the CPU's fused attention)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    module = load_module(path)
    entry = discover(open(path).read(), path, {})[0]
    model, inputs = build(module, entry, path, device="cpu")
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    with FlopCounterMode(display=False) as mode, sdpa_kernel(SDPBackend.MATH):
        torch.autograd.grad(model(*inputs).mean(), trainable)
    return mode.get_total_flops()


def test_linear_backward_is_twice_its_forward_and_skips_the_input(tmp_path):
    path = write(tmp_path, "mlp3.py", MLP)
    _, traced, lowered = traced_and_lowered(path)
    p = lowered.program
    assert not lowered.unsupported
    first, second, third = (line_of(path, f"# {w}") for w in ("first", "second", "third"))
    for ln, (m, k, n) in ((second, (4, 32, 24)), (third, (4, 24, 8))):
        fwd = tensor_flops(p, "forward", ln)
        assert fwd == 2 * m * k * n
        assert tensor_flops(p, "backward", ln) == 2 * fwd  # dX and dW
    # the first layer reads the input, which gets no gradient: its backward is dW alone
    assert tensor_flops(p, "backward", first) == tensor_flops(p, "forward", first) == 2 * 4 * 16 * 32


def test_frozen_parameters_and_inputs_get_no_gradient(tmp_path):
    path = write(tmp_path, "mlp3.py", MLP)
    _, traced, lowered = traced_and_lowered(path)
    assert sorted(traced.grads) == ["l1.bias", "l1.weight", "l2.bias", "l2.weight", "l3.weight"]
    grads = grad_tensors(traced, lowered)
    p = lowered.program
    inputs = set(p.inputs)
    shapes = {p.tensors[w].shape: p.tensors[g].shape for w, g in grads.items()}
    assert len(grads) == 5 and all(a == b for a, b in shapes.items())
    assert not inputs & set(grads)
    # nothing the backward writes has the input's shape (no dX of the input)
    x_shape = p.tensors[p.inputs[0]].shape
    written = {t for op in p.ops if op.phase == "backward" and op.kind == "compute" for t in op.outputs}
    assert all(p.tensors[t].shape != x_shape for t in written)


def test_backward_ops_carry_their_forward_line(tmp_path):
    path = write(tmp_path, "mlp3.py", MLP)
    _, traced, lowered = traced_and_lowered(path)
    p = lowered.program
    fwd_lines = {op.line for op in p.ops if op.phase == "forward"}
    bwd = [op for op in p.ops if op.phase == "backward"]
    assert bwd and all(op.line in fwd_lines for op in bwd)
    entry_line = line_of(path, "class Model")
    # the loss (mean) and its backward (the seed gradient spread over the output) are the entry's
    loss_ops = [op for op in p.ops if op.line == entry_line]
    assert {op.phase for op in loss_ops} == {"forward", "backward"}
    relu_bwd = [op for op in bwd if op.target.startswith("aten.threshold_backward")
                or op.target.startswith("aten.where") or op.target.startswith("aten.le")]
    assert relu_bwd and {op.line for op in relu_bwd} <= {line_of(path, "# first"), line_of(path, "# second")}


def test_conv_backward_is_twice_its_forward(tmp_path):
    path = write(tmp_path, "conv.py", CONV)
    _, _, lowered = traced_and_lowered(path)
    p = lowered.program
    assert not lowered.unsupported
    stem, conv = line_of(path, "# stem"), line_of(path, "# conv")
    # conv: 6 output channels of 2x... groups=2: 3 input channels per output, 3x3 taps, 5x5 out
    assert tensor_flops(p, "forward", conv) == 2 * (2 * 6 * 5 * 5) * (4 * 9)
    assert tensor_flops(p, "backward", conv) == 2 * tensor_flops(p, "forward", conv)
    # stem reads the input: only dW
    assert tensor_flops(p, "backward", stem) == tensor_flops(p, "forward", stem) == 2 * (2 * 8 * 100) * 27
    targets = collections.Counter(op.target for op in p.ops if op.phase == "backward")
    assert targets["aten.convolution_backward.default"] == 2


def test_transposed_conv_backward(tmp_path):
    path = write(tmp_path, "convt.py", CONVT)
    _, _, lowered = traced_and_lowered(path)
    assert not lowered.unsupported
    p, up = lowered.program, line_of(path, "# up")
    conv = 2 * (2 * 8 * 36) * 27  # the plain conv: 8 outputs of 27 taps at 6x6
    up_fwd = 2 * (2 * 8 * 36) * (4 * 9)  # each of the 8x6x6 input points feeds 4 channels x 9 taps
    assert tensor_flops(p, "forward", up) == conv + up_fwd
    # dX and dW of the transposed conv, dW of the plain one (its input needs no gradient)
    assert tensor_flops(p, "backward", up) == 2 * up_fwd + conv
    assert tensor_flops(p) == eager_step_flops(path)


@pytest.mark.parametrize("source", [MLP, RESNET, ENCODER], ids=["mlp", "resnet_block", "encoder"])
def test_step_tensor_flops_match_flop_counter_mode(tmp_path, source):
    path = write(tmp_path, "model.py", source)
    _, _, lowered = traced_and_lowered(path)
    assert not lowered.unsupported, lowered.unsupported
    assert tensor_flops(lowered.program) == eager_step_flops(path)


@pytest.mark.parametrize("source", [MLP, CONV, CONVT, CONSTANT, EMBEDDING_LSTM, RESNET, ENCODER],
                         ids=["mlp", "conv", "conv_transpose", "constant", "embedding_lstm",
                              "resnet_block", "encoder"])
def test_gradients_verify_against_autograd(tmp_path, source):
    from solar_lsp.verify.check_torch import verify
    path = write(tmp_path, "model.py", source)
    module, traced, lowered = traced_and_lowered(path)
    v = verify(traced, lowered, module)
    assert v.status == "verified", v.detail
    checked = {c.op for c in v.ops if c.status == "verified"}
    # a part of an op (attention's recompute of P) is checked with its owner op
    bwd = {part_of(op) or op.id for op in lowered.program.ops if op.phase == "backward" and op.kind == "compute"}
    assert bwd and bwd <= checked
    produced = {t: op.id for op in lowered.program.ops for t in op.outputs}
    grads = grad_tensors(traced, lowered).values()
    assert grads and {produced[g] for g in grads} <= checked  # every gradient, op by op
    assert v.to_json()["counts"]["status"] == "checked"


def test_planted_backward_bug_is_caught(tmp_path, monkeypatch):
    """dW of a convolution reading the input one position off: verification must say mismatch."""
    from solar_lsp.verify.check_torch import verify
    real = contractions._conv_weight_grad

    def shifted(name, gy, gys, x, xs, out, ws, stride, padding, dilation, groups):
        return real(name, gy, gys, x, xs, out, ws, stride, [q + 1 for q in padding], dilation, groups)
    monkeypatch.setattr(contractions, "_conv_weight_grad", shifted)
    assert LOWERINGS["aten.convolution_backward.default"] is contractions._conv_backward
    path = write(tmp_path, "conv.py", CONV)
    module, traced, lowered = traced_and_lowered(path)
    v = verify(traced, lowered, module)
    assert v.status == "mismatch"
    phase = {op.id: op.phase for op in lowered.program.ops}
    bad = [c for c in v.ops if c.status == "mismatch"]
    assert bad and {phase[c.op] for c in bad} == {"backward"}
    assert {lowered.program.ops[[o.id for o in lowered.program.ops].index(c.op)].target
            for c in bad} == {"aten.convolution_backward.default"}


DROPOUT = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(16, 32)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.l1(x))  # drop


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
"""


def test_training_dropout_is_reported_not_dropped(tmp_path):
    path = write(tmp_path, "drop.py", DROPOUT)
    _, traced, lowered = traced_and_lowered(path)
    line = line_of(path, "# drop")
    assert [(u.op, u.line) for u in lowered.unsupported] == [("aten.native_dropout.default", line)]
    assert "random mask" in lowered.unsupported[0].reason
    # the rest of the step is analyzed: both Linear gradients exist
    assert sorted(traced.grads) == ["l1.bias", "l1.weight"]
    assert tensor_flops(lowered.program, "backward", line) == 2 * 4 * 16 * 32


def test_entry_without_trainable_parameters_is_an_error(tmp_path):
    from solar_lsp.frontend.errors import EntryError
    path = write(tmp_path, "frozen.py", MLP.replace(
        "self.l3.bias.requires_grad_(False)", "self.requires_grad_(False)"))
    with pytest.raises(EntryError, match="no trainable parameter"):
        traced_and_lowered(path)


def test_analyze_file_in_train_mode_reports_the_step(tmp_path):
    from solar_lsp.pipeline.analyze import Config, analyze_file
    path = write(tmp_path, "mlp3.py", MLP)
    er = analyze_file(path, Config(mode="train", optimizer="none", verify=True)).entries[0]
    assert er.status == "ok" and er.mode == "train"
    assert er.verification["status"] == "verified", er.verification
    assert er.inputs == [{"name": "x", "dtype": "float32", "shape": [4, 16]}]
    _, _, lowered = traced_and_lowered(path)
    assert er.totals["tensor_flops"] == tensor_flops(lowered.program)
    inference = analyze_file(path, Config(verify=False)).entries[0]
    assert inference.mode == "inference"
    assert inference.totals["tensor_flops"] == tensor_flops(lowered.program, "forward")
