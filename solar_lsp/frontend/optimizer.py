"""The optimizer update of a training step as IR ops (phase ``"optimizer"``; docs/training.md).

Both frontends share it: the update does not depend on how the gradients were traced. Each op
is one kernel torch launches in ``torch.optim.AdamW(foreach=False)`` / ``torch.optim.SGD``
(PyTorch 2.x, ``_single_tensor_adam`` / ``_single_tensor_sgd``), with torch's formula per
element, so the unfused bound prices what eager mode runs and the counts are the ones stated in
docs/sol-model.md ("Optimizer"). The step number only changes the bias corrections, which are
scalar constants computed on the host.

Names: the state of parameter ``P`` is ``P_exp_avg`` and ``P_exp_avg_sq`` (program params, like
the weights: they live between steps); the updated tensors are ``P_next``, ``P_exp_avg_next``,
``P_exp_avg_sq_next`` (program outputs). Every op of ``P``'s update has the note
``"optimizer P"`` (:func:`slots` reads them back).
"""

from __future__ import annotations

from dataclasses import dataclass

from solar_lsp.frontend.builders import elementwise
from solar_lsp.ir.core import Op, Program, TensorType, call, loads

OPTIMIZERS = ("adamw", "sgd", "none")
NOTE = "optimizer "


@dataclass(frozen=True)
class AdamW:
    """``torch.optim.AdamW`` hyperparameters (its defaults)."""

    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 1e-2


@dataclass(frozen=True)
class SGD:
    """``torch.optim.SGD`` hyperparameters (its defaults: no momentum, no weight decay)."""

    lr: float = 1e-3


@dataclass(frozen=True)
class Slot:
    """One parameter's update: what it reads and what it writes."""

    param: str
    grad: str
    state: tuple[str, ...]  # (exp_avg, exp_avg_sq) for AdamW; () for SGD
    param_out: str
    state_out: tuple[str, ...]


class _Emitter:
    """Appends the elementwise ops of one parameter's update to a program."""

    def __init__(self, p: Program, param: str, grad: str, line: int | None):
        self.p, self.param, self.line = p, param, line
        self.tt = p.tensors[param]
        if grad not in p.tensors or p.tensors[grad].shape != self.tt.shape:
            have = p.tensors[grad].shape if grad in p.tensors else "no such tensor"
            raise ValueError(f"gradient {grad!r} of {param!r}: shape {have}, expected {self.tt.shape}")
        self.n = 0

    def tensor(self, name: str) -> str:
        if name in self.p.tensors:
            raise ValueError(f"optimizer tensor {name!r} already exists in {self.p.name}")
        self.p.tensors[name] = TensorType(self.tt.shape, self.tt.dtype)
        return name

    def op(self, target: str, out: str, operands: list[str], fn) -> str:
        shape = self.tt.shape
        k = elementwise(f"{out}_k", out, shape, [(t, shape) for t in operands], fn)
        ins = list(dict.fromkeys(ld.tensor for ld in loads(k.expr)))
        self.n += 1
        self.p.ops.append(Op(f"opt{self.n}_{self.param}", target, self.line, ins, [out], [k],
                             note=NOTE + self.param, phase="optimizer"))
        return out


def adamw_ops(p: Program, param: str, grad: str, line: int | None, hp: AdamW = AdamW(),
              step: int = 1) -> Slot:
    """Append ``torch.optim.AdamW(foreach=False)``'s update of ``param`` (its ``step``-th):

    p₁ = p·(1 − lr·wd); m' = m + (1 − β₁)(g − m); v₁ = β₂·v; v' = v₁ + (1 − β₂)·g·g;
    s = √v'; d₁ = s / √(1 − β₂ᵗ); d = d₁ + ε; p' = p₁ + (−lr / (1 − β₁ᵗ))·m' / d.
    """
    e = _Emitter(p, param, grad, line)
    m, v = e.tensor(f"{param}_exp_avg"), e.tensor(f"{param}_exp_avg_sq")
    p.params += [m, v]
    bc1 = 1 - hp.beta1 ** step
    bc2_sqrt = (1 - hp.beta2 ** step) ** 0.5
    p1 = e.op("aten.mul_.Scalar", e.tensor(f"{param}_decayed"), [param],
              lambda x: call("mul", x, 1 - hp.lr * hp.weight_decay))
    m1 = e.op("aten.lerp_.Scalar", e.tensor(f"{param}_exp_avg_next"), [m, grad],
              lambda a, g: call("add", a, call("mul", 1 - hp.beta1, call("sub", g, a))))
    v1 = e.op("aten.mul_.Scalar", e.tensor(f"{param}_exp_avg_sq_scaled"), [v],
              lambda a: call("mul", a, hp.beta2))
    v2 = e.op("aten.addcmul_.default", e.tensor(f"{param}_exp_avg_sq_next"), [v1, grad],
              lambda a, g: call("add", a, call("mul", call("mul", g, g), 1 - hp.beta2)))
    s = e.op("aten.sqrt.default", e.tensor(f"{param}_sqrt_v"), [v2], lambda a: call("sqrt", a))
    d1 = e.op("aten.div.Scalar", e.tensor(f"{param}_denom_raw"), [s],
              lambda a: call("div", a, bc2_sqrt))
    d = e.op("aten.add_.Scalar", e.tensor(f"{param}_denom"), [d1], lambda a: call("add", a, hp.eps))
    out = e.op("aten.addcdiv_.default", e.tensor(f"{param}_next"), [p1, m1, d],
               lambda a, mm, dd: call("add", a, call("mul", -hp.lr / bc1, call("div", mm, dd))))
    p.outputs += [out, m1, v2]
    return Slot(param, grad, (m, v), out, (m1, v2))


def sgd_ops(p: Program, param: str, grad: str, line: int | None, hp: SGD = SGD()) -> Slot:
    """Append ``torch.optim.SGD``'s update with its defaults: ``p' = p + (−lr)·g`` (``add_``
    with ``alpha=-lr``)."""
    e = _Emitter(p, param, grad, line)
    out = e.op("aten.add_.Tensor", e.tensor(f"{param}_next"), [param, grad],
               lambda a, g: call("add", a, call("mul", g, -hp.lr)))
    p.outputs.append(out)
    return Slot(param, grad, (), out, ())


def slots(p: Program) -> list[Slot]:
    """The updates :func:`adamw_ops` / :func:`sgd_ops` appended to ``p``, read back from the
    ops' notes and the tensor names, in program order."""
    by_param: dict[str, list[Op]] = {}
    for op in p.ops:
        if op.phase == "optimizer" and op.note.startswith(NOTE):
            by_param.setdefault(op.note[len(NOTE):], []).append(op)
    out = []
    for param, ops in by_param.items():
        written = {t for op in ops for t in op.outputs}
        state = tuple(t for t in (f"{param}_exp_avg", f"{param}_exp_avg_sq") if t in p.params)
        reads = [t for op in ops for t in op.inputs if t not in written]
        grad = next(t for t in reads if t != param and t not in state)
        out.append(Slot(param, grad, state, f"{param}_next", tuple(f"{t}_next" for t in state)))
    return out
