"""Training-step SOL for JAX / Flax entries (docs/training.md, "JAX"): ``jax.value_and_grad``
of the loss traced and lowered, backward work on the forward line it differentiates, counts
against hand formulas and XLA's own cost analysis, and gradients verified against jax."""

from __future__ import annotations

import dataclasses
import re

import pytest
from conftest import ROOT, line_of, only_entry, write

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

from solar_lsp.frontend.jax.prims import LOWERINGS  # noqa: E402
from solar_lsp.frontend.jax.train import lower_train, trace_train  # noqa: E402
from solar_lsp.frontend.torch.trace import load_module  # noqa: E402
from solar_lsp.ir.core import call  # noqa: E402
from solar_lsp.pipeline.analyze import Config, analyze_file  # noqa: E402
from solar_lsp.source.discover import discover_file  # noqa: E402
from solar_lsp.verify.check_jax import verify_train  # noqa: E402

CORPUS = ROOT / "tests" / "corpus_jax"

MLP_SRC = '''
import flax.linen as nn


# solar: x=f32[32,64]
class TwoDense(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Dense(128)(x))
        return nn.Dense(16)(h)
'''


def train(path, verify: bool = False, loss: str = "mean"):
    return analyze_file(str(path), Config(verify=verify, mode="train", optimizer="none", loss=loss))


def phase_tensor_flops(e) -> dict:
    """(line, phase) -> tensor FLOPs, from the report's ops and the program's phases."""
    phase = {op.id: op.phase for op in e.program.ops}
    out: dict = {}
    for ln in e.lines:
        for o in ln.ops:
            k = (ln.line, phase[o.op])
            out[k] = out.get(k, 0) + o.tensor_flops
    return out


def traced(path):
    entry = discover_file(str(path))[0]
    t = trace_train(load_module(str(path)), entry, str(path))
    return t, lower_train(t)


def test_dense_backward_is_twice_its_forward_and_inputs_get_no_gradient(tmp_path):
    path = write(tmp_path, "two_dense.py", MLP_SRC)
    e = only_entry(train(path))
    assert e.status == "ok", e.error
    assert e.mode == "train" and e.unsupported == []
    l0, l1 = line_of(path, "nn.Dense(128)"), line_of(path, "nn.Dense(16)")
    f = phase_tensor_flops(e)
    assert f[(l0, "forward")] == 2 * 32 * 64 * 128
    assert f[(l1, "forward")] == 2 * 32 * 128 * 16
    # the second Dense: dW and dX, each a matmul the size of the forward one
    assert f[(l1, "backward")] == 2 * f[(l1, "forward")]
    # the first Dense reads the input, which gets no gradient: dW only
    assert f[(l0, "backward")] == f[(l0, "forward")]
    p = e.program
    assert not any(op.phase == "backward" and p.tensors[t].shape == (32, 64)
                   for op in p.ops for t in op.outputs)


def test_gradients_of_trainable_parameters_only():
    t, lo = traced(CORPUS / "mlp_fn.py")  # plain function: every float argument after the first
    assert t.param_names == ["w1", "b1", "w2", "b2"] and t.input_names == ["x"]
    assert sorted(lo.grads) == ["b1", "b2", "w1", "w2"]
    p = lo.program
    for param, g in lo.grads.items():
        assert p.tensors[g].shape == p.tensors[param].shape
    assert p.outputs[0] == lo.loss and p.tensors[lo.loss].shape == ()
    # batch statistics are read, never differentiated
    t, lo = traced(CORPUS / "resnet_block_linen.py")
    assert lo.grads and all(name.startswith("params_") for name in lo.grads)
    assert any(name.startswith("batch_stats") for name in lo.program.params)


def test_backward_ops_carry_the_forward_line(tmp_path):
    path = write(tmp_path, "two_dense.py", MLP_SRC)
    t, lo = traced(path)
    p = lo.program
    l0, l1 = line_of(path, "nn.Dense(128)"), line_of(path, "nn.Dense(16)")
    dots = [op for op in p.ops if op.target == "dot_general" and op.phase == "backward"]
    by_shape = {p.tensors[op.outputs[0]].shape: op.line for op in dots}
    assert by_shape[(128, 64)] == l0  # dW of the first Dense (before its transpose)
    assert by_shape[(16, 128)] == l1  # dW of the second
    assert by_shape[(32, 128)] == l1  # dX of the second
    assert len(dots) == 3
    # the loss reduction and its seed have no line in the file: the entry's own line
    assert {op.line for op in p.ops} <= {l0, l1, line_of(path, "class TwoDense")}


@pytest.mark.parametrize("name", ["mlp_linen.py", "cnn_linen.py"])
def test_gradients_verified_against_jax(name):
    e = only_entry(train(CORPUS / name, verify=True))
    assert e.status == "ok" and e.unsupported == []
    v = e.verification
    assert v["status"] == "verified", v
    assert v["counts"]["status"] == "checked"  # every contraction, backward too, against XLA
    g = v["gradients"]
    assert g["status"] == "verified"
    assert len(g["params"]) == len([n for n in e.program.params if n.startswith("params_")])
    assert all(d["status"] == "verified" for d in g["params"].values())


def test_mutated_backward_dot_is_caught():
    t, lo = traced(CORPUS / "mlp_linen.py")
    p = lo.program
    param = "params_Dense_2_kernel"
    writer = {o: op for op in p.ops for o in op.outputs}
    dw = writer[p.views.get(lo.grads[param], lo.grads[param])]  # the gradient is a transpose view
    assert dw.target == "dot_general" and dw.phase == "backward"
    k = dw.kernels[-1]
    dw.kernels[-1] = dataclasses.replace(k, expr=call("mul", k.expr, 1.01))
    v = verify_train(t, lo)
    assert v.status == "mismatch"
    assert next(c for c in v.ops if c.op == dw.id).status == "mismatch"
    assert v.to_json()["gradients"]["params"][param]["status"] == "mismatch"


def test_wrong_max_pool_gradient_lowering_is_caught(monkeypatch):
    """A backward-only primitive (the max pool's select_and_scatter_add) picking the min."""
    right = LOWERINGS["select_and_scatter_add"]

    def wrong(c):
        c.p = {**c.p, "select_prim": jax.lax.le_p}
        right(c)
    monkeypatch.setitem(LOWERINGS, "select_and_scatter_add", wrong)
    t, lo = traced(CORPUS / "cnn_linen.py")
    v = verify_train(t, lo)
    bad = [c for c in v.ops if c.status == "mismatch"]
    assert v.status == "mismatch" and bad
    assert all(c.op.startswith("select_and_scatter_add") for c in bad)


LIN_SRC = '''
import jax


# solar: x=f32[64,256], w1=f32[256,512], w2=f32[512,128]
def lin(x, w1, w2):
    return (x @ w1) @ w2
'''


def test_step_flops_equal_xla_cost_analysis(tmp_path):
    """Forward + backward FLOPs against XLA's cost analysis of the same value_and_grad.
    Comparable in total for a matmul chain with the sum loss (XLA counts the reduction's
    adds as the IR does); with the mean loss the IR also counts the two scalar divides of
    the mean and its seed, which XLA's figure leaves out; convolutions with padding are
    compared op by op in the verification (XLA skips padded taps)."""
    from jax.extend.core import jaxpr_as_fun
    path = write(tmp_path, "lin.py", LIN_SRC)
    e = only_entry(train(path, loss="sum"))
    t = trace_train(load_module(str(path)), discover_file(str(path))[0], str(path), "sum")
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in t.closed.jaxpr.invars]
    ca = jax.jit(jaxpr_as_fun(t.closed)).lower(*avals).cost_analysis()
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    assert e.totals["flops"] == int(ca["flops"])
    # forward x@w1, (x@w1)@w2; backward dW2, dH, dW1 (no dX): five matmuls
    assert e.totals["tensor_flops"] == 2 * (64 * 256 * 512 + 3 * 64 * 512 * 128 + 64 * 256 * 512)


def test_inference_is_unchanged_by_the_train_path():
    e = only_entry(analyze_file(str(CORPUS / "mlp_linen.py"), Config(verify=False)))
    assert e.mode == "inference"
    assert all(op.phase == "forward" for op in e.program.ops)
    assert e.program.outputs and not any(t.startswith("div") for t in e.program.outputs)


# -- which arguments a plain function trains: --params / the pragma's params=(...) ----------

PARAMS_SRC = '''
import jax


# solar: x=f32[64,256], w1=f32[256,512], w2=f32[512,128], idx=i32[64], params=(w2,)
def lin(x, w1, w2, idx):
    h = x @ w1
    return (h @ w2)[idx]
'''


def test_pragma_params_trains_only_the_named_arguments(tmp_path):
    path = write(tmp_path, "lin_params.py", PARAMS_SRC)
    entry = discover_file(path)[0]
    assert entry.params == ("w2",)
    t, lo = traced(path)
    assert t.param_names == ["w2"] and t.input_names == ["x", "w1", "idx"]
    assert sorted(lo.grads) == ["w2"]
    e = only_entry(train(path, verify=True))
    assert e.status == "ok", e.error
    f = phase_tensor_flops(e)
    l1, l2 = line_of(path, "h = x @ w1"), line_of(path, "(h @ w2)")
    # w1 is not trained and x is an input: nothing to differentiate on the first matmul's line
    assert (l1, "backward") not in f
    # the second: dW only (its input h needs no gradient), as many FLOPs as the forward
    assert f[(l2, "backward")] == f[(l2, "forward")] == 2 * 64 * 512 * 128
    assert e.verification["status"] == "verified", e.verification
    assert list(e.verification["gradients"]["params"]) == ["w2"]


def test_cli_params_override_the_pragma_and_may_name_the_first_argument(tmp_path):
    path = write(tmp_path, "lin_params.py", PARAMS_SRC)
    e = only_entry(analyze_file(path, Config(verify=False, mode="train", optimizer="none",
                                             params=("w1", "x"))))
    assert e.status == "ok", e.error
    assert sorted(e.program.params) == ["w1", "x"]
    f = phase_tensor_flops(e)
    l1, l2 = line_of(path, "h = x @ w1"), line_of(path, "(h @ w2)")
    assert f[(l1, "backward")] == 2 * f[(l1, "forward")]  # dX and dW
    assert f[(l2, "backward")] == f[(l2, "forward")]  # dH only: w2 is not trained


def test_default_without_params_is_every_float_argument_after_the_first(tmp_path):
    path = write(tmp_path, "lin_default.py", PARAMS_SRC.replace(", params=(w2,)", ""))
    assert discover_file(path)[0].params is None
    t, lo = traced(path)
    assert t.param_names == ["w1", "w2"] and sorted(lo.grads) == ["w1", "w2"]


@pytest.mark.parametrize("names, says", [
    (("w3",), "'w3' is not a tensor argument of lin (tensor arguments: x, w1, w2, idx)"),
    (("idx",), "'idx' is a int32 tensor, which has no gradient"),
])
def test_cli_params_naming_a_wrong_argument_is_the_entrys_error(tmp_path, names, says):
    path = write(tmp_path, "lin_params.py", PARAMS_SRC)
    e = only_entry(analyze_file(path, Config(verify=False, mode="train", params=names)))
    assert e.status == "error" and says in e.error and e.error.startswith("--params")


@pytest.mark.parametrize("item, says", [
    ("params=(w3,)", "params=: 'w3' is not a tensor argument of 'lin'"),
    ("n=int:4, params=(n,)", "params=: 'n' is a scalar argument"),
    ("params=(w1, 2)", "params= expects argument names"),
])
def test_pragma_params_naming_a_wrong_argument_is_a_pragma_error(tmp_path, item, says):
    from solar_lsp.source.pragma import PragmaError
    src = PARAMS_SRC.replace("params=(w2,)", item)
    if "n=int" in item:
        src = src.replace("def lin(x, w1, w2, idx)", "def lin(x, w1, w2, idx, n)")
    path = write(tmp_path, "bad_params.py", src)
    with pytest.raises(PragmaError, match=re.escape(says)) as info:
        discover_file(path)
    assert info.value.line == line_of(path, "# solar:")


def test_params_on_a_flax_module_or_pytorch_code_is_refused(tmp_path):
    e = only_entry(analyze_file(str(CORPUS / "mlp_linen.py"),
                                Config(verify=False, mode="train", params=("x",))))
    assert e.status == "error" and "MLP is a Flax module" in e.error
    e = only_entry(analyze_file(str(ROOT / "examples" / "mlp.py"),
                                Config(verify=False, mode="train", params=("x",))))
    assert e.status == "error" and "PyTorch code" in e.error
    from solar_lsp.source.pragma import PragmaError
    path = write(tmp_path, "torch_fn.py", '''
        import torch


        # solar: x=f32[8,16], w=f32[16,4], params=(w,)
        def f(x, w):
            return x @ w
        ''')
    with pytest.raises(PragmaError, match="params= names the trained arguments of a JAX function"):
        discover_file(path)


def test_cli_params_option(cli, tmp_path):
    from solar_lsp.cli.args import parse_params
    assert parse_params(["w1,b1", "w2", "w1"]) == ("w1", "b1", "w2")
    assert parse_params(None) is None
    path = write(tmp_path, "lin_params.py", PARAMS_SRC)
    r = cli("analyze", path, "--params", "w1", "--no-verify")
    assert r.code == 2 and "--params only applies to a training step: add --mode train" in r.err
    r = cli("analyze", path, "--mode", "train", "--params", "w1,", "--no-verify")
    assert r.code == 2 and "expected argument names" in r.err
    r = cli("analyze", path, "--mode", "train", "--params", "w1", "--no-verify", "--json")
    e = r.json()["entries"][0]
    assert r.code == 0 and e["status"] == "ok"
    assert [i["name"] for i in e["inputs"]] == ["x", "w2", "idx"]


# -- verification at a reduced size ---------------------------------------------------------

def test_a_step_over_the_budget_is_verified_at_a_reduced_size():
    """The reduced step is re-traced without its optimizer (checked on its own), so its
    lowering is compared with the full step's forward and backward only."""
    e = only_entry(analyze_file(str(CORPUS / "mlp_fn.py"), Config(
        mode="train", budget_bytes=2 * 2**20)))
    v = e.verification
    assert v["status"] == "verified", v["detail"]
    assert v["full_size"].startswith("golden run needs")
    assert v["reduced_inputs"][0]["shape"] != [64, 256]
    assert v["gradients"]["status"] == "verified" and len(v["gradients"]["params"]) == 4
    assert v["optimizer"]["status"] == "verified"
    assert any(op.phase == "optimizer" for op in e.program.ops)  # the bounds keep the update


@pytest.mark.parametrize("name, full", [("rnn_scan.py", [50, 16, 64]), ("lstm_scan.py", [32, 8, 64])])
def test_recurrent_steps_whose_code_fixes_a_size_verify_at_a_reduced_size(name, full):
    """Both steps replay more loop points than the limit, and both hard-code the hidden size
    (128) that the pragma's weights carry too, so shrinking every size breaks the trace: the
    reduced run shrinks only the sizes that shrink alone."""
    e = only_entry(train(CORPUS / name, verify=True))
    v = e.verification
    assert v["status"] == "verified", v["detail"]
    assert "loop points, over the limit" in v["full_size"]
    x = v["reduced_inputs"][0]
    assert x["name"] == "x" and x["shape"] != full
    assert v["gradients"]["status"] == "verified"


TAKE_SRC = '''
import jax.numpy as jnp


# solar: x=f32[16,8], w=f32[8,8]
def pick(x, w):
    h = x @ w
    order = jnp.concatenate([jnp.argmax(h, 1, keepdims=True), jnp.argmin(h, 1, keepdims=True),
                             jnp.argmax(x, 1, keepdims=True)], axis=1)
    return jnp.take_along_axis(h, order, axis=1) * 2.0
'''


def test_backward_of_take_along_axis_is_a_scatter_add_along_the_axis(tmp_path):
    """The transpose of a take_along_axis gather (batching dims on operand and indices) adds
    each update into its row at the gathered position: torch's scatter_add along that axis."""
    path = write(tmp_path, "pick.py", TAKE_SRC)
    e = only_entry(train(path, verify=True))
    assert e.status == "ok" and e.unsupported == [], e.unsupported
    sc = [op for op in e.program.ops if op.call and op.call[0] == "scatter"]
    assert len(sc) == 1 and sc[0].phase == "backward"
    assert sc[0].call[4] == 1 and sc[0].call[5] == "sum"  # along axis 1, accumulating
    assert sc[0].line == line_of(path, "jnp.take_along_axis")
    assert e.verification["status"] == "verified", e.verification["detail"]
    assert e.verification["gradients"]["status"] == "verified"


def test_moe_router_step_has_every_backward_op():
    e = only_entry(train(CORPUS / "moe_router.py", verify=True))
    assert e.unsupported == []
    assert any(op.call and op.call[0] == "scatter" for op in e.program.ops)  # top_k's backward
    assert e.verification["status"] == "verified", e.verification["detail"]
    assert e.verification["gradients"]["status"] == "verified"
