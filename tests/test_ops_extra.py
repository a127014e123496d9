"""Integer bit operations, the remaining elementwise transcendentals, pow with a small integer
exponent, complex dtypes, and a gate that every core ATen op is lowered or deliberately not.

Each model is analyzed with verification (the IR is run and compared with torch), and where
the values matter the lowered program is also run in full and compared with eager torch."""

from __future__ import annotations

import pathlib
import re
import types

import numpy as np
import pytest
import torch
from conftest import analyzed, line_of, only_entry, write

from solar_lsp.bounds.einsum_graph import SFU_COST
from solar_lsp.frontend.torch import lower as torch_lower
from solar_lsp.frontend.torch.trace import Traced, _decomp_table, build, load_module, trace
from solar_lsp.ir import execute as ex
from solar_lsp.ir.core import SCALAR_FUNCS, Affine, Call, Kernel, Load
from solar_lsp.source.discover import discover_file

ROOT = pathlib.Path(__file__).resolve().parent.parent


def verified(path: str):
    e = only_entry(analyzed(path, verify=True))
    assert e.status == "ok", e.error
    assert e.unsupported == [], e.unsupported
    assert e.verification["status"] == "verified", e.verification
    return e


def ops_at(e, line: int) -> list:
    return [o for ln in e.lines for o in ln.ops if o.line == line]


def run_lowered(path: str) -> tuple[dict, list]:
    """The lowered program run in full on the entry's real inputs, and torch's outputs."""
    module = load_module(path)
    entry = discover_file(path)[0]
    traced = trace(module, entry, path)
    low = torch_lower.lower(traced)
    model, inputs = build(module, entry, path, device="cpu")
    arrays = {s.name: t.numpy() for s, t in zip(traced.input_specs, inputs)}
    with torch.no_grad():
        ref = model(*inputs)
    ex.run_program_ops(low.program, arrays)
    outs = [arrays[o] for o in low.program.outputs]
    return outs, list(ref) if isinstance(ref, (tuple, list)) else [ref]


# ------------------------------------------------------------------ bitwise

BITWISE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y, w, m, n):
        a = (x & 3) + (~x)
        b = (x | y) ^ (x & -16)
        c = (w ^ 123456789) & (~w)
        d = (m & n) | (~m ^ n)
        u = ~(x & 255).to(torch.uint8)
        return a, b, c, d, u


def get_inputs():
    return [torch.randint(-1000, 1000, (64, 128), dtype=torch.int32),
            torch.randint(-1000, 1000, (64, 128), dtype=torch.int32),
            torch.randint(-2**40, 2**40, (64, 128)),
            torch.rand(64, 128) < 0.5, torch.rand(64, 128) < 0.5]


def get_init_inputs():
    return []
'''


def test_bitwise_int_and_bool_values(tmp_path):
    """``(x & 3) + (~x)`` on int32 is two's-complement arithmetic (it verified as a mismatch
    when & meant logical and); on bool the same operators are the logical ones."""
    path = write(tmp_path, "bitwise.py", BITWISE)
    e = verified(path)
    n = 64 * 128
    targets = {o.target for ln in e.lines for o in ln.ops}
    assert {"aten.bitwise_and.Scalar", "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor",
            "aten.bitwise_xor.Tensor", "aten.bitwise_xor.Scalar", "aten.bitwise_not.default"} <= targets
    for o in (o for ln in e.lines for o in ln.ops if o.target.startswith("aten.bitwise")):
        assert (o.vector_flops, o.transcendentals) == (n, 0), o  # one integer ALU op per element
    outs, ref = run_lowered(path)
    for got, want in zip(outs, ref):
        np.testing.assert_array_equal(got, want.to(torch.float64).numpy())


SHIFTS = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y, s):
        a = x << 3
        b = x >> 2
        c = torch.bitwise_left_shift(y, s)
        d = torch.bitwise_right_shift(y, s)
        e = 1 << s
        return a, b, c, d, e


def get_inputs():
    return [torch.randint(-2**30, 2**30, (16, 32), dtype=torch.int32),
            torch.randint(-2**40, 2**40, (16, 32)), torch.randint(0, 12, (16, 32))]


def get_init_inputs():
    return []
'''


def test_shifts_wrap_and_sign_extend(tmp_path):
    """int32 ``x << 3`` wraps like the fixed-width type; ``>>`` on negatives is arithmetic;
    Tensor, Scalar and Scalar_Tensor overloads all lower."""
    path = write(tmp_path, "shifts.py", SHIFTS)
    e = verified(path)
    targets = {o.target for ln in e.lines for o in ln.ops}
    assert {"aten.__lshift__.Scalar", "aten.__rshift__.Scalar", "aten.bitwise_left_shift.Tensor",
            "aten.bitwise_right_shift.Tensor", "aten.bitwise_left_shift.Scalar_Tensor"} <= targets
    outs, ref = run_lowered(path)
    assert (ref[0].long() != (ref[0].long() & 0xFFFFFFFF)).any()  # some values did wrap
    for got, want in zip(outs, ref):
        np.testing.assert_array_equal(got, want.to(torch.float64).numpy())


def test_bitwise_on_float_is_reported_not_guessed():
    """Only integer and bool tensors have bits to operate on; any other dtype is refused."""
    from solar_lsp.frontend.torch.lower import BITWISE as table

    assert set(table) >= {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                          "bitwise_left_shift", "bitwise_right_shift", "__lshift__", "__rshift__"}
    for name in table:
        assert f"aten.{name}.Tensor" in torch_lower.LOWERINGS or f"aten.{name}.default" in torch_lower.LOWERINGS


@pytest.mark.parametrize("interp", [False, True], ids=["numba", "python"])
def test_bit_functions_execute_in_int64(interp, monkeypatch):
    monkeypatch.setattr(ex, "FORCE_INTERPRETER", interp)
    monkeypatch.setattr(ex, "EXECUTOR", "numba")
    a = np.array([0, 1, -1, 7, -8, 1000, -1000, 2**40 + 5, -(2**40) - 3], dtype=np.int64)
    b = np.array([3, 0, 5, 1, 2, 7, 3, 9, 1], dtype=np.int64)
    ref = {"band": a & b, "bor": a | b, "bxor": a ^ b, "bnot": ~a, "shl": a << b, "shr": a >> b}
    i = Affine.var("i")
    for fn, want in ref.items():
        arity = SCALAR_FUNCS[fn][0]
        args = tuple(Load(f"x{q}", (i,)) for q in range(arity))
        k = Kernel(fn, (("i", len(a)),), Load("y", (i,)), "=", Call(fn, args))
        arrays = {"x0": a.astype(float), "x1": b.astype(float), "y": np.zeros(len(a))}
        ex.run_kernel(k, arrays)
        np.testing.assert_array_equal(arrays["y"], want.astype(float), err_msg=fn)


# ------------------------------------------------------------------ transcendentals, fill

TRANS = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        a1 = torch.asin(x)
        a2 = torch.acos(x)
        a3 = torch.atanh(x)
        b1 = torch.sinh(y)
        b2 = torch.cosh(y)
        b3 = torch.asinh(y)
        b4 = torch.acosh(y + 2.0)
        c = torch.atan2(x, y)
        return a1, a2, a3, b1, b2, b3, b4, c


def get_inputs():
    return [torch.rand(32, 48) * 1.8 - 0.9, torch.rand(32, 48) * 4.0 - 2.0]


def get_init_inputs():
    return []
'''


def test_transcendentals_verified_and_counted(tmp_path):
    """One vector op and one transcendental per element each; the SFU gets one exp for
    sinh/cosh, one log for atanh, a log and a sqrt for asinh/acosh, none for the
    polynomial asin/acos/atan2 (docs/sol-model.md)."""
    path = write(tmp_path, "trans.py", TRANS)
    e = verified(path)
    n = 32 * 48
    fns = ("asin", "acos", "atanh", "sinh", "cosh", "asinh", "acosh", "atan2")
    for fn in fns:
        (o,) = [o for ln in e.lines for o in ln.ops if o.target == f"aten.{fn}.default"]
        assert (o.vector_flops, o.transcendentals) == (n, n), fn
    assert e.totals["sfu_ops"] == n * (1 + 1 + 1 + 2 + 2)
    assert {f: SFU_COST.get(f, 0) for f in fns} == {"asin": 0, "acos": 0, "atanh": 1, "sinh": 1,
                                                    "cosh": 1, "asinh": 2, "acosh": 2, "atan2": 0}
    outs, ref = run_lowered(path)
    for got, want in zip(outs, ref):
        np.testing.assert_allclose(got, want.double().numpy(), rtol=1e-6, atol=1e-6)


def test_fill_lowers_scalar_and_tensor_values():
    """``fill.Scalar``/``fill.Tensor`` as they appear in an undecomposed export (the tracer's
    decompositions usually turn Tensor.fill_ into full_like/copy)."""

    class M(torch.nn.Module):
        def forward(self, x, s):
            return torch.ops.aten.fill.Scalar(x, 2.5) * x + torch.ops.aten.fill.Tensor(x, s)

    x, s = torch.randn(4, 6), torch.tensor(0.75)
    ep = torch.export.export(M(), (x, s))
    targets = [str(nd.target) for nd in ep.graph.nodes if nd.op == "call_function"]
    assert "aten.fill.Scalar" in targets and "aten.fill.Tensor" in targets
    traced = Traced(entry=types.SimpleNamespace(name="M"), path="<test>", exported=ep)
    low = torch_lower.lower(traced)
    assert low.unsupported == []
    arrays = {"x": x.numpy(), "s": s.numpy()}
    ex.run_program_ops(low.program, arrays)
    (out,) = low.program.outputs
    np.testing.assert_allclose(arrays[out], 2.5 * x.double().numpy() + 0.75, rtol=1e-12)


# ------------------------------------------------------------------ pow

POW = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        d = (x - y) ** 2
        c = x ** 3
        q = x.pow(4)
        r = x ** -1
        r2 = x ** -2
        h = x ** 0.5
        f = x ** 5
        t = x ** y
        return d, c, q, r, r2, h, f, t


def get_inputs():
    return [torch.rand(32, 64) + 0.5, torch.rand(32, 64)]


def get_init_inputs():
    return []
'''


def test_pow_small_integer_exponent_is_multiplies(tmp_path):
    """x**2 is one multiply, x**3 and x**4 two (square and multiply), a negative exponent adds
    a reciprocal; a fractional, large or tensor exponent stays exp2(y*log2(x)): one vector op,
    one transcendental, two SFU ops."""
    path = write(tmp_path, "powers.py", POW)
    e = verified(path)
    n = 32 * 64
    per_line = {"(x - y) ** 2": (1, 0), "x ** 3": (2, 0), "x.pow(4)": (2, 0), "x ** -1": (1, 0),
                "x ** -2": (2, 0), "x ** 0.5": (1, 1), "x ** 5": (1, 1), "x ** y": (1, 1)}
    for text, (vf, tr) in per_line.items():
        (o,) = [o for o in ops_at(e, line_of(path, text)) if o.target.startswith("aten.pow")]
        assert (o.vector_flops, o.transcendentals) == (vf * n, tr * n), text
    assert e.totals["sfu_ops"] == 3 * 2 * n  # x**0.5, x**5, x**y
    assert e.totals["vector_flops"] == n * (1 + 1 + 2 + 2 + 1 + 2 + 1 + 1 + 1)  # sub + the pows


# ------------------------------------------------------------------ complex dtypes

ROPE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)
        t = torch.arange(16).float()[:, None] * torch.arange(32).float()[None, :]
        self.register_buffer("freqs", torch.polar(torch.ones(16, 32), t))

    def forward(self, x):
        q = self.proj(x)
        qc = torch.view_as_complex(q.float().reshape(2, 16, 32, 2))
        qr = torch.view_as_real(qc * self.freqs).flatten(2)
        return torch.relu(qr) + q


def get_inputs():
    return [torch.randn(2, 16, 64)]


def get_init_inputs():
    return []
'''


def test_complex_rope_is_reported_and_the_rest_analyzed(tmp_path):
    path = write(tmp_path, "rope.py", ROPE)
    e = only_entry(analyzed(path, verify=True))
    assert e.status == "ok", e.error
    reason = "complex dtype complex64 has no lowering"
    lc, lm = line_of(path, "torch.view_as_complex("), line_of(path, "torch.view_as_real(")
    assert e.unsupported == [
        {"op": "aten.view_as_complex.default", "line": lc, "reason": reason},
        {"op": "aten.mul.Tensor", "line": lm, "reason": reason},
        {"op": "aten.view_as_real.default", "line": lm, "reason": reason},
    ]
    # everything else is analyzed, counted and verified
    assert e.verification["issues"] == [] and e.verification["ops_checked"] >= 4, e.verification
    tokens = 2 * 16
    assert e.totals["tensor_flops"] == 2 * tokens * 64 * 64
    (lin,) = [o for o in ops_at(e, line_of(path, "self.proj(x)")) if o.tensor_flops]
    assert lin.macs == tokens * 64 * 64
    last = ops_at(e, line_of(path, "torch.relu(qr) + q"))
    assert sum(o.vector_flops for o in last) == 2 * tokens * 64  # relu (max) and the add


FFT = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        h = x * 2.0
        f = torch.fft.rfft(h).abs()
        return h.sum() + f.sum()


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
'''


def test_rfft_abs_is_reported_not_an_internal_error(tmp_path):
    path = write(tmp_path, "fft.py", FFT)
    e = only_entry(analyzed(path, verify=True))
    assert e.status == "ok", e.error
    line = line_of(path, "torch.fft.rfft")
    reason = "complex dtype complex64 has no lowering"
    assert e.unsupported == [{"op": "aten._fft_r2c.default", "line": line, "reason": reason},
                             {"op": "aten.abs.default", "line": line, "reason": reason}]
    assert e.verification["issues"] == [], e.verification
    assert sum(o.vector_flops for o in ops_at(e, line_of(path, "x * 2.0"))) == 4 * 16
    # the real result of |rfft| (4 x 9) still feeds its sum and the final add
    assert sum(o.vector_flops for o in ops_at(e, line_of(path, "h.sum() + f.sum()"))) == 64 + 36 + 1


# ------------------------------------------------------------------ the core-op gate

def _core_ops() -> dict[str, list]:
    """Forward core ATen ops (torch.Tag.core) by name, with their core overloads."""
    ops: dict[str, list] = {}
    # every registered aten op (dir(torch.ops.aten) lists only those already looked up)
    names = {n.split("::")[1].split(".")[0] for n in torch._C._dispatch_get_all_op_names()
             if n.startswith("aten::")}
    for name in sorted(names):
        if "backward" in name:
            continue
        try:
            packet = getattr(torch.ops.aten, name)
            overloads = packet.overloads()
        except (AttributeError, RuntimeError):
            continue
        for ov in overloads:
            op = getattr(packet, ov)
            if torch.Tag.core in op.tags:
                ops.setdefault(name, []).append(op)
    return ops


def test_every_core_aten_op_is_lowered_or_deliberately_not():
    """A core op is covered when LOWERINGS has it (any overload), the tracer decomposes
    all its core overloads before lowering, the driver handles it (split pieces, symbolic
    sizes), or it is in the deliberate list torch_lower.NOT_LOWERED (docs/coverage.md)."""
    core = _core_ops()
    assert len(core) > 100
    lowered = {k.split(".")[1] for k in torch_lower.LOWERINGS}
    decomposed = set(_decomp_table())
    missing = []
    for name, overloads in sorted(core.items()):
        if name in lowered or name in torch_lower.DRIVER_OPS or name in torch_lower.NOT_LOWERED:
            continue
        if all(op in decomposed for op in overloads):
            continue
        missing.append(name)
    assert missing == [], f"core ATen ops with neither a lowering nor a reason: {missing}"
    # the deliberate list names real core ops that really have no lowering
    for name in torch_lower.NOT_LOWERED:
        assert name in core, name
        assert name not in lowered, f"{name} is lowered now: drop it from NOT_LOWERED"


def test_deliberate_list_is_in_the_docs():
    doc = (ROOT / "docs" / "coverage.md").read_text()
    section = doc.split("## Core ATen ops without a lowering", 1)[1]
    listed = dict(re.findall(r"^\| `([\w.]+)` \| (.+?) \|$", section, flags=re.M))
    assert listed == torch_lower.NOT_LOWERED
