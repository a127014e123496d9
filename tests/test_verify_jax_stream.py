"""The JAX golden run streamed like torch's (issue 16, verify/golden_jax.py, verify/stream.py):
each op is checked as soon as jax has produced its tensors and each tensor is let go after
its last use, so a JAX entry is judged by the peak of what is live at once; a chain whose
tensors together exceed the budget is verified at its full size, a wrong lowering in it is
still caught, and when the run is cheap it is repeated with the inputs scaled x1e-3 and x1e2
(docs/sol-model.md, Verification)."""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest

pytest.importorskip("jax")

from conftest import ROOT, write  # noqa: E402

MB = 2**20

# six 16 MiB tensors (fp32, 4M elements) in a chain: 0.34 GB with a float64 copy of every
# one, about 0.1 GB live at any time
CHAIN = """
    import jax
    import jax.numpy as jnp


    # solar: x=f32[2048,2048]
    @jax.jit
    def chain(x):
        a = jax.nn.relu(x)
        b = jnp.tanh(a)
        c = b * 2.0
        d = jax.nn.sigmoid(c)
        e = d + 1.0
        return jnp.exp(e)
    """


def _lowered(path: str):
    from solar_lsp.frontend.jax.lower import lower
    from solar_lsp.frontend.jax.trace import trace
    from solar_lsp.source.discover import discover
    from solar_lsp.source.reading import read_source

    spec = importlib.util.spec_from_file_location("h6_jax_stream", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entry = discover(read_source(path), path, {})[0]
    traced = trace(module, entry, path)
    return traced, lower(traced)


@pytest.mark.parametrize("name", ["rnn_scan.py", "stacked_rnn_nested_scan.py", "while_newton_sqrt.py",
                                  "cond_branch.py", "power_iteration_fori.py", "mlp_linen.py"])
def test_the_schedule_knows_the_order_the_golden_run_records_values_in(name):
    """The steps are found without running anything (``run_order``); they must be the keys
    the golden run records, in its order (loops, nested scans, conds, whiles, parameters)."""
    from solar_lsp.verify.golden_jax import GoldenRunner, run_order

    traced, lowered = _lowered(str(ROOT / "tests" / "corpus_jax" / name))
    keys: list[str] = []
    GoldenRunner(traced, lowered.choices, lambda k, v: keys.append(str(k))).run(traced.real_args(0))
    assert keys and keys == run_order(traced, lowered)


def test_a_chain_over_the_budget_by_its_sum_is_verified_streamed(tmp_path, monkeypatch):
    from solar_lsp.verify import check_jax
    from solar_lsp.verify.core import golden_bytes
    from solar_lsp.verify.stream import peak_bytes

    traced, lowered = _lowered(write(tmp_path, "chain.py", CHAIN))
    p = lowered.program
    budget = 200 * MB
    assert golden_bytes(p) > budget > peak_bytes(p)  # refused before; fits streamed
    live: list[int] = []
    run = check_jax.golden_run

    def watched(traced, lowered, seed=0, consume=None, scale=1.0, args=None):
        def spy(step, golden):
            consume(step, golden)
            live.append(sum(np.asarray(v).nbytes for v in golden.values()))
        return run(traced, lowered, seed, spy, scale, args)
    monkeypatch.setattr(check_jax, "golden_run", watched)
    v = check_jax.verify(traced, lowered, budget)
    assert v.status == "verified", v.detail
    assert len(v.ops) == len(p.ops)
    one = 2048 * 2048 * 4
    assert max(live) <= 3 * one  # the input, one op's input and output: never the whole chain
    assert "scaled_inputs" not in v.extra  # the second pass only where 8 runs fit the budget


def test_a_wrong_lowering_in_a_streamed_chain_is_caught(tmp_path):
    from solar_lsp.ir.core import Call
    from solar_lsp.verify import check_jax

    traced, lowered = _lowered(write(tmp_path, "chain.py", CHAIN))
    op = next(o for o in lowered.program.ops if o.target == "tanh")
    k = op.kernels[0]
    assert isinstance(k.expr, Call) and k.expr.fn == "tanh"
    op.kernels[0] = dataclasses.replace(k, expr=Call("sin", k.expr.args))
    v = check_jax.verify(traced, lowered, 200 * MB)
    assert v.status == "mismatch"
    assert v.detail.startswith(op.id), v.detail


def test_pipeline_verifies_the_chain_at_full_size_under_a_small_budget(tmp_path):
    """Through the pipeline: the budget judges the streamed peak, so the entry is verified at
    its full size where the sum of its tensors would have sent it to a reduced one."""
    from solar_lsp.pipeline.analyze import Config, analyze_file
    from solar_lsp.verify.core import golden_bytes
    from solar_lsp.verify.reduced import Limits

    path = write(tmp_path, "chain.py", CHAIN)
    _, lowered = _lowered(path)
    budget = 300 * MB
    limits = Limits.of_budget(budget, streamed=True)
    assert golden_bytes(lowered.program) > limits.bytes >= limits.need(lowered.program)
    report = analyze_file(path, Config(verify=True, budget_bytes=budget))
    v = report.entries[0].verification
    assert v["status"] == "verified", v
    assert not v.get("reduced"), v


SOFTMAX = """
    import jax


    # solar: x=f32[64,64]
    def sm(x):
        return jax.nn.softmax(x, axis=-1)
    """


def test_scaled_inputs_second_pass_for_a_cheap_jax_entry(tmp_path):
    from solar_lsp.verify import check_jax

    traced, lowered = _lowered(write(tmp_path, "sm.py", SOFTMAX))
    v = check_jax.verify(traced, lowered)
    assert v.status == "verified", v.detail
    assert v.extra == {"scaled_inputs": {"scales": ["x0.001", "x100"]}}
    assert v.detail.endswith("scaled inputs: verified at x0.001, x100")
    assert v.to_json()["scaled_inputs"]["scales"] == ["x0.001", "x100"]


def test_scaled_pass_sees_jax_values_at_the_scaled_inputs(tmp_path, monkeypatch):
    """The second pass really runs jax on scaled inputs: a lowering that is right only for
    |x| < 50 (relu lowered as min(max(x, 0), 50)) verifies at the golden inputs and is a
    mismatch at inputs x100."""
    from solar_lsp.ir.core import Call, Const
    from solar_lsp.verify import check_jax

    relu = """
        import jax


        # solar: x=f32[64,64]
        def r(x):
            return jax.nn.relu(x)
        """
    traced, lowered = _lowered(write(tmp_path, "relu.py", relu))
    op = next(o for o in lowered.program.ops if o.kernels and "max" in repr(o.kernels[0].expr))
    k = op.kernels[0]
    op.kernels[0] = dataclasses.replace(k, expr=Call("min", (k.expr, Const(50.0))))
    v = check_jax.verify(traced, lowered)
    assert v.status == "mismatch", v.detail
    assert v.detail.startswith("at inputs x100: "), v.detail
    assert v.extra["scaled_inputs"] == {"scales": ["x0.001"], "mismatch": "x100"}


# a scan whose stacked outputs are read once, early, while a larger op comes after: the loop's
# replay at the run's end still reads them, so they are live at that op's peak too
SCAN_THEN_BIG = """
    import jax
    import jax.numpy as jnp


    # solar: xs=f32[16,256,256], w=f32[256,4096]
    @jax.jit
    def f(xs, w):
        def body(c, x):
            c = jnp.tanh(c + x)
            return c, c * 2.0
        c, ys = jax.lax.scan(body, jnp.zeros((256, 256)), xs)
        s = ys.sum(axis=0)
        return jnp.exp(s @ w)
    """


def test_the_peak_counts_what_the_loop_replays_hold_to_the_end(tmp_path):
    from solar_lsp.verify import check_jax
    from solar_lsp.verify.stream import peak_bytes

    traced, lowered = _lowered(write(tmp_path, "scan_big.py", SCAN_THEN_BIG))
    p = lowered.program
    ops = [op for op in p.ops if op.phase != "optimizer"]
    held = check_jax.loop_tensors(lowered)
    ys = 16 * 256 * 256 * 4
    assert peak_bytes(p, ops, held) - peak_bytes(p, ops) >= ys
    budget = (peak_bytes(p, ops) + peak_bytes(p, ops, held)) // 2
    v = check_jax.verify(traced, lowered, budget)  # the old estimate fitted; the held one does not
    assert v.status == "unverified" and "budget" in v.detail, v.detail
    assert check_jax.verify(traced, lowered, 2 * peak_bytes(p, ops, held)).status == "verified"
