"""torch's own count of tensor FLOPs, per exported-graph node, taken during the golden run
(``torch.utils.flop_counter.FlopCounterMode``), and the parameters the golden run draws at
random so that an identity default cannot hide a dropped operand (docs/sol-model.md,
"Verification").
"""

from __future__ import annotations

import contextlib
import math
import zlib
from collections.abc import Callable
from typing import Any

import torch
from torch.utils import flop_counter

from solar_lsp.verify.counts import FrameworkFlops

NAME = "FlopCounterMode"

# Ops whose matrix work FlopCounterMode does not see on the CPU: oneDNN's LSTM (without a
# projection, the CPU runs one fused mkldnn kernel) and the int8 matmul.
UNCOUNTED_ON_CPU: dict[str, str] = {
    "aten.lstm.input": "the CPU runs LSTM as one oneDNN kernel that FlopCounterMode does not count",
    "aten.lstm.data": "the CPU runs LSTM as one oneDNN kernel that FlopCounterMode does not count",
    "aten._int_mm.default": "FlopCounterMode has no formula for torch._int_mm",
}
SDPA = "aten.scaled_dot_product_attention.default"
CONV_BACKWARD = "aten.convolution_backward.default"


class NodeFlops:
    """FlopCounterMode around the whole replay; each node's share is the difference of the
    running total before and after it. With ``only``, the mode is entered around those nodes
    alone: a Python loop's steps after the first run uncounted (the count is the first
    step's times the trips, verify/parts.py), as do the checks run between nodes."""

    def __init__(self, only: set[str] | None = None) -> None:
        self.only = only
        self.mode = flop_counter.FlopCounterMode(display=False)
        self.by_node: dict[str, int] = {}
        self.targets: dict[str, str] = {}
        self.sdpa: dict[str, int] = {}
        self.grouped: dict[str, int] = {}

    def before(self) -> int:
        return self.mode.get_total_flops()

    def around_run(self) -> Any:
        """The context of the whole replay: the mode itself, unless it is entered per node."""
        return self.mode if self.only is None else contextlib.nullcontext()

    def counted(self, node: Any, run: Callable[[], Any], args: Callable[[], tuple]) -> Any:
        """``run()`` (the replay of ``node``), its FLOPs recorded when they are read."""
        if node.op != "call_function" or (self.only is not None and node.name not in self.only):
            return run()
        if self.only is not None:
            with self.mode:
                out = run()
            self.after(node, 0, args())
            return out
        start = self.before()
        out = run()
        self.after(node, start, args())
        return out

    def after(self, node: Any, start: int, args: tuple) -> None:
        """Record the FLOPs ``node`` added (and, for attention on the CPU, the formula's)."""
        self.by_node[node.name] = self.mode.get_total_flops() - start
        self.targets[node.name] = str(node.target)
        if str(node.target) == SDPA and self.by_node[node.name] == 0:
            n = _sdpa_formula(args)
            if n is not None:
                self.sdpa[node.name] = n
        if str(node.target) == CONV_BACKWARD:
            n = _grouped_conv_backward(args, self.by_node[node.name])
            if n is not None:
                self.grouped[node.name] = n

    def framework(self, op_ids: set[str]) -> FrameworkFlops:
        """The counts per IR op (an op's id is its node's name)."""
        fw = FrameworkFlops(NAME)
        for node, n in self.by_node.items():
            if node not in op_ids:
                continue
            target = self.targets[node]
            if node in self.sdpa:
                fw.by_op[node] = self.sdpa[node]
                fw.notes = ["attention on the CPU runs a kernel FlopCounterMode does not count: "
                            "compared with its formula for the GPU kernels (sdpa_flop_count)"]
            elif node in self.grouped:
                fw.by_op[node] = self.grouped[node]
                fw.notes = ["FlopCounterMode counts the weight gradient of a grouped convolution "
                            "as if every input channel fed every output channel: compared with "
                            "its formula divided by the groups"]
            elif n == 0 and target in UNCOUNTED_ON_CPU:
                fw.uncounted[node] = UNCOUNTED_ON_CPU[target]
            else:
                fw.by_op[node] = n
        return fw


def _grouped_conv_backward(args: tuple, counted: int) -> int | None:
    """FlopCounterMode's count of a grouped convolution's backward with its weight-gradient
    term divided by the groups (its formula contracts over all input channels, where each
    output channel reads only its group's); None when nothing needs correcting."""
    try:
        gy, x, w, transposed, groups, mask = args[0], args[1], args[2], args[7], int(args[9]), args[10]
    except (IndexError, TypeError, ValueError):
        return None
    if groups <= 1 or transposed or not mask[1] or not all(isinstance(t, torch.Tensor) for t in (gy, x, w)):
        return None

    def t(shape: Any) -> list[int]:
        return [shape[1], shape[0]] + list(shape[2:])
    wrong = int(flop_counter.conv_flop_count(t(x.shape), t(gy.shape), t(w.shape)))
    return counted - wrong + wrong // groups


def _sdpa_formula(args: tuple) -> int | None:
    """FlopCounterMode's formula for the fused attention kernels (QK^T and PV) on q, k, v."""
    shapes = []
    for t in args[:3]:
        if not isinstance(t, torch.Tensor) or t.dim() < 2:
            return None
        s = tuple(t.shape)
        lead = math.prod(s[:-3]) if len(s) > 3 else 1
        shapes.append((lead, s[-3] if len(s) >= 3 else 1, s[-2], s[-1]))
    try:
        return int(flop_counter.sdpa_flop_count(*shapes))
    except (AssertionError, ValueError):
        return None


# ------------------------------------------------------------------ parameters at random


def randomize_parameters(model: torch.nn.Module, seed: int) -> int:
    """Redraw every float parameter and buffer whose elements are all equal (LayerNorm's
    ones and zeros, BatchNorm's running statistics, zero biases), so that a lowering which
    drops a weight, a bias, a running statistic or an epsilon changes the values.

    Variances (``running_var`` and anything named ``*var*``) are drawn log-uniform in
    [1e-3, 2], so an epsilon of 1e-5 moves the result by up to 0.5%; scales near 1 in
    [0.5, 1.5]; zeros from N(0, 0.5). Returns how many tensors were redrawn."""
    g = torch.Generator().manual_seed(seed + 7919)
    n = 0
    with torch.no_grad():
        named = list(model.named_parameters()) + list(model.named_buffers())
        for name, t in named:
            if not _constant_float(t):
                continue
            leaf = name.rsplit(".", 1)[-1]
            u = torch.rand(t.shape, generator=g, dtype=torch.float64)
            if "var" in leaf:
                new = torch.exp(math.log(1e-3) + u * (math.log(2.0) - math.log(1e-3)))
            elif float(t.flatten()[0]) == 0.0:
                new = torch.randn(t.shape, generator=g, dtype=torch.float64) * 0.5
            else:
                new = float(t.flatten()[0]) * (0.5 + u)
            t.copy_(new.to(t.dtype))
            n += 1
    return n


def draw_weight(like: torch.Tensor, seed: int, name: str) -> torch.Tensor:
    """A large weight for the golden run, drawn where it is first read (verify/core.LAZY_BYTES):
    the shape, strides and dtype of ``like``, uniform in +-1/sqrt(fan_in) (torch's default for
    Linear and Conv weights), the same for the same ``seed`` and placeholder ``name`` in every
    pass. Any values serve: each op is checked on the values its own node read."""
    fan_in = like.numel() // like.shape[0] if like.dim() >= 2 and like.shape[0] else max(1, like.numel())
    bound = 1.0 / math.sqrt(max(1, fan_in))
    out = torch.empty_strided(like.shape, like.stride(), dtype=like.dtype)
    # the default generator, its state restored after: a draw from a torch.Generator object here
    # was followed, in about 3 of 10 cold runs of KernelBench L2 81 (2 threads), by a torch.tanh
    # whose one thread's half was 5e-5 off (unexplained; none in 30 runs this way)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
        return out.uniform_(-bound, bound)


_DRAWN = (torch.float16, torch.bfloat16, torch.float32, torch.float64)  # not fp8: no arithmetic


def _constant_float(t: torch.Tensor) -> bool:
    if t.dtype not in _DRAWN or t.numel() < 2 or t.device.type == "meta":
        return False
    first = t.flatten()[0]
    return bool(torch.isfinite(first)) and bool(torch.all(t == first))
