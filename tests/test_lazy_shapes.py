"""The sympy-free stand-ins (frontend/torch/lazy_shapes.py): a plain trace imports no sympy, the
numbers are the same as with the real modules, and anything that needs sympy still gets it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.bn = nn.BatchNorm2d(8).eval()  # its decomposition converts dtypes (_to_copy)
            self.scale = nn.Parameter(torch.randn(8, 1, 1))

        def forward(self, x):
            y = torch.sigmoid(self.bn(self.conv(x))) * self.scale + 1.0
            return torch.nn.functional.group_norm(y, 2).sum(dim=(2, 3))

    def get_inputs():
        return [torch.randn(2, 3, 16, 16)]

    def get_init_inputs():
        return []
    """
)


def _python(code: str, *args: str) -> str:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         cwd=ROOT, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


ANALYZE = textwrap.dedent(
    """
    import io, contextlib, json, sys
    if sys.argv[2] == "real":
        import torch.fx.experimental.symbolic_shapes  # the real module first: no stand-ins
    from solar_lsp.cli.main import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["analyze", sys.argv[1], "--json", "--no-verify", "--hw", "h100-sxm"])
    doc = json.loads(buf.getvalue())
    e = doc["entries"][0]
    print(json.dumps({"imported": doc["tool"]["imported"], "totals": e["totals"],
                      "sympy": type(sys.modules.get("sympy")).__name__}))
    """
)


def test_plain_trace_imports_no_sympy_and_counts_match_the_real_modules(tmp_path):
    f = tmp_path / "model.py"
    f.write_text(MODEL)
    lazy = json.loads(_python(ANALYZE, str(f), "lazy"))
    real = json.loads(_python(ANALYZE, str(f), "real"))
    assert "sympy" not in lazy["imported"] and lazy["sympy"] == "_SympyStandIn"
    assert "sympy" in real["imported"]
    assert lazy["totals"] == real["totals"]
    assert lazy["totals"]["flops"] > 0


STAND_INS = textwrap.dedent(
    """
    import inspect, json, sys
    import torch
    from solar_lsp.frontend.torch import lazy_shapes as ls
    assert ls.install()
    from torch.fx.experimental.symbolic_shapes import guard_or_false, sym_eq, guard_int
    import sympy
    seen = {
        "plain": [guard_or_false(True), guard_or_false(False), sym_eq((2, 3), [2, 3]),
                  sym_eq(2, 3), guard_int(7)],
        "basic_is_placeholder": isinstance(1.5, sympy.Basic),
        "getmodule": inspect.getmodule(inspect.getmodule) is inspect,
        "loaded_after_plain": ls.sympy_loaded(),
    }
    try:
        guard_or_false(3)  # not a bool: the real helper's own error
    except AssertionError as exc:
        seen["real_error"] = str(exc)
    seen["loaded_after_error"] = ls.sympy_loaded()
    from sympy import Symbol  # needs real sympy: it is imported
    x = Symbol("x")
    seen["real_symbol"] = type(x).__module__
    seen["basic_is_real"] = isinstance(x, sympy.Basic)
    import torch.fx.experimental.symbolic_shapes as ss
    seen["real_module"] = hasattr(ss, "ShapeEnv") and ss is sys.modules[ss.__name__]
    from torch.utils._sympy.functions import Max
    seen["real_max"] = Max(x, 2).func.__name__ == "Max"
    print(json.dumps(seen))
    """
)


def test_stand_ins_answer_plain_values_and_hand_over_the_rest():
    seen = json.loads(_python(STAND_INS))
    assert seen["plain"] == [True, False, True, False, 7]
    assert seen["basic_is_placeholder"] is False
    assert seen["getmodule"] is True and seen["loaded_after_plain"] is False
    assert "Expected bool" in seen["real_error"] and seen["loaded_after_error"] is True
    assert seen["real_symbol"].startswith("sympy.") and seen["basic_is_real"] is True
    assert seen["real_module"] is True and seen["real_max"] is True


FUNCTIONS = textwrap.dedent(
    """
    import json, sys
    import torch
    from solar_lsp.frontend.torch import lazy_shapes as ls
    ls.install()
    from torch.utils._sympy.functions import Max, FloorDiv  # what a meta kernel imports
    seen = {"placeholder": isinstance(3, Max) or issubclass(int, FloorDiv),
            "loaded": ls.sympy_loaded()}
    # torch's own module that imports sympy while it is being imported (through inductor in
    # KernelBench L3 44_MiniGPTBlock): no circular import through the stand-ins
    import torch.utils._sympy.numbers as numbers
    seen["int_oo"] = str(numbers.int_oo)
    import sympy
    e = Max(sympy.Symbol("n", positive=True), 2)  # the early import still gives the real Max
    seen["max_is_real"] = isinstance(e, Max) and type(e).__module__ == "torch.utils._sympy.functions"
    print(json.dumps(seen))
    """
)


def test_sympy_functions_stand_in_answers_isinstance_and_hands_over():
    seen = json.loads(_python(FUNCTIONS))
    assert seen == {"placeholder": False, "loaded": False, "int_oo": "int_oo", "max_is_real": True}
