"""The streamed golden run (issue 16, verify/stream.py): each op is checked as soon as its
tensors exist and each tensor is let go after its last use, so the budget is judged by the
peak of what is live at once. A chain whose tensors together exceed the budget, but of which
only a few are live at a time, is verified at its full size; a wrong lowering in it is still
caught; and an op is checked against the values its own node produced."""

from __future__ import annotations

from conftest import only_entry, write

MB = 2**20

# seven 32 MiB tensors (fp32, 8.4M elements each) in a chain: 0.7 GB with float64 copies of
# every one, about 0.2 GB live at any time
CHAIN = """
    import torch


    # solar: x=f32[4096,2048]
    def chain(x):
        a = torch.relu(x)
        b = torch.tanh(a)
        c = b * 2.0
        d = torch.sigmoid(c)
        e = d + 1.0
        return torch.exp(e)
    """


def _program(path: str):
    import importlib.util

    from solar_lsp.frontend.torch.lower import lower
    from solar_lsp.frontend.torch.trace import trace
    from solar_lsp.source.discover import discover
    from solar_lsp.source.reading import read_source

    spec = importlib.util.spec_from_file_location("h9_chain", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entry = discover(read_source(path), path, {})[0]
    traced = trace(module, entry, path)
    return traced, lower(traced), module


def test_peak_of_a_chain_is_a_few_tensors_not_all_of_them(tmp_path):
    from solar_lsp.verify.core import golden_bytes
    from solar_lsp.verify.stream import peak_bytes

    _, lowered, _ = _program(str(write(tmp_path, "chain.py", CHAIN)))
    p = lowered.program
    one = 4096 * 2048 * 4
    assert golden_bytes(p) == 7 * 4096 * 2048 * (4 + 8)
    # the input throughout, an op's input and output, the float64 copy of its input and the
    # (sampled) output's float64 buffer
    assert peak_bytes(p) <= 3 * one + 2 * 2 * one
    assert peak_bytes(p) >= 2 * one


def test_schedule_checks_each_op_once_and_frees_every_tensor(tmp_path):
    from solar_lsp.verify.stream import schedule

    traced, lowered, _ = _program(str(write(tmp_path, "chain.py", CHAIN)))
    steps = [n.name for n in traced.exported.graph.nodes]
    ops = lowered.program.ops
    plan = schedule(ops, lowered.node_of_tensor, steps)
    checked = sorted(i for v in plan.ready.values() for i in v) + plan.at_end
    assert sorted(checked) == list(range(len(ops)))
    freed = [t for v in plan.free.values() for t in v]
    assert sorted(freed) == sorted(lowered.node_of_tensor)
    # a tensor goes after the op reading it is checked, never before
    pos = {s: i for i, s in enumerate(steps)}
    for i, op in enumerate(ops):
        ready = next(pos[s] for s, v in plan.ready.items() if i in v)
        for t in op.inputs + op.outputs:
            gone = next(pos[s] for s, v in plan.free.items() if t in v)
            assert gone >= ready


def test_chain_over_the_old_budget_is_verified_at_full_size(tmp_path):
    from solar_lsp.pipeline.analyze import Config, analyze_file

    path = write(tmp_path, "chain.py", CHAIN)
    # 500 MiB: every tensor at once (0.7 GB) is over it, the streamed peak is not
    e = only_entry(analyze_file(str(path), Config(budget_bytes=500 * MB)))
    v = e.verification
    assert v["status"] == "verified", v["detail"]
    assert "reduced" not in v
    assert v["ops_checked"] == 6


def test_wrong_op_in_a_streamed_chain_is_still_caught(tmp_path, monkeypatch):
    from solar_lsp.verify import check_torch

    traced, lowered, module = _program(str(write(tmp_path, "chain.py", CHAIN)))
    good = check_torch.verify(traced, lowered, module, budget_bytes=500 * MB)
    assert good.status == "verified", good.detail
    # swap the golden value of one op's output for another node's: the check must use the
    # value its own node produced while it was still live
    p = lowered.program
    tanh = next(op for op in p.ops if "tanh" in op.target)
    sig = next(op for op in p.ops if "sigmoid" in op.target)
    lowered.node_of_tensor[tanh.outputs[0]] = lowered.node_of_tensor[sig.outputs[0]]
    bad = check_torch.verify(traced, lowered, module, budget_bytes=500 * MB)
    assert bad.status == "mismatch"
    assert any(c.op == tanh.id and c.status == "mismatch" for c in bad.ops)
