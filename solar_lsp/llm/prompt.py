"""What the agent is told: the IR specification, worked examples, and one task per request.

The system prompt is the same for every request (so the API can cache it); the user message
carries the task: a whole entry (its file, input and weight shapes) or one op without a
lowering (its ATen signature, argument shapes and source line). Everything sent is built
here, so ``--llm-dry-run`` can print exactly that.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from solar_lsp.ir import text as ir_text
from solar_lsp.ir.core import ASSIGN_OPS, SCALAR_FUNCS, TensorType

PROMPT_VERSION = "1"  # part of every cache key: a new prompt is a new translation
TOOL_NAME = "submit_ir"
_EXAMPLES = os.path.join(os.path.dirname(__file__), "examples")

TOOL = {
    "name": TOOL_NAME,
    "description": ("Submit the complete Affine Loop IR program text for the task. It is parsed, "
                    "validated, executed with numba on real inputs and compared with the original "
                    "program; a failure comes back as the tool result."),
    "input_schema": {
        "type": "object",
        "properties": {
            "ir": {"type": "string", "description": "the whole IR program, text form"},
            "notes": {"type": "string",
                      "description": "optional: assumptions made (one or two sentences)"},
        },
        "required": ["ir"],
    },
}

_RULES = """\
You translate Python programs (PyTorch, sometimes with numpy or plain Python control flow)
into Solar's Affine Loop IR, the input of a Speed-of-Light performance model. Answer only by
calling the tool `submit_ir` with the complete IR program text. Solar parses the text,
validates it (affine indices, declared tensors, accesses in bounds), executes every kernel
with numba in float64 on the real inputs and compares the outputs with what the original
program computed. A failure comes back to you as the tool result; fix the program and call
`submit_ir` again with the whole program.

The IR bounds runtime from below, so it must describe the work the original computation
needs and never more:
- one @op per framework operation (what eager PyTorch launches as one kernel); the kernels
  inside one op share its buffer;
- no redundant kernels, no recomputation, no O(n^2) formulation of an O(n) computation
  (a running sum is a recurrence `out[i + 1] = out[i] + x[i + 1]`, not a triangular sum);
- `unit="matrix"` only for a multiply-accumulate contraction `out[...] += a[...] * b[...]`
  (matmul, linear, conv, einsum); everything else is on the vector unit (the default);
- reductions use `+=`, `*=`, `max(out[i], e)` or `min(out[i], e)` with init="identity";
  `init="keep"` accumulates onto what an earlier kernel of the same op wrote (a bias);
- padding and triangular masks are guards `if lo <= affine < hi:`, never a branch on data;
- data-dependent Python control flow: the shapes are static, so write the path that the
  given inputs take, or compute both sides and select with `where(cond, a, b)` when the
  condition varies per element;
- numpy or Python arithmetic inside forward is translated into kernels like torch ops;
- dtypes: declare every tensor with its real dtype (f32, bf16, ...); kernels compute in
  float64 and the comparison allows the declared dtype's rounding.
"""

_CALLS = """\
Composition steps (one line in an op body, no arithmetic; executed with numpy):
    out = x.permute((1, 0))            out = x.reshape((8, 64))
    out = x.expand((4, 8))             out = x.slice(dim, start, stop, step)
    out = x.select(dim, index)         out = x.unsqueeze(dim)      out = x.squeeze(dim)
    out = gather.embedding(table, ids) out = gather.index_select(x, dim, idx)
    out = gather.gather(x, dim, idx)
Views (permute, reshape, expand, slice, select, unsqueeze, squeeze) also need
`views({"out": "x"})` after the tensor declarations. Prefer kernels for everything else.
"""


@functools.cache
def worked_examples() -> tuple[str, str]:
    """(source, IR) of the bundled examples: the IR is what Solar's own tracer produced."""
    with open(os.path.join(_EXAMPLES, "worked.py"), encoding="utf-8") as f:
        src = f.read()
    with open(os.path.join(_EXAMPLES, "worked.ir"), encoding="utf-8") as f:
        ir = f.read()
    return src, ir


def numbered(source: str, first: int = 1) -> str:
    """The source with a line number before every line, so the agent can cite lines."""
    return "\n".join(f"{i:4d}| {ln}" for i, ln in enumerate(source.splitlines(), first))


@functools.cache
def system_prompt() -> str:
    """The fixed part of every request: rules, the IR grammar, the calls, worked examples."""
    funcs = ", ".join(f"{n}/{a}" for n, (a, _) in sorted(SCALAR_FUNCS.items()))
    src, ir = worked_examples()
    return "\n".join([
        _RULES,
        "## The IR text form (grammar)",
        ir_text.__doc__.strip(),
        "",
        f"Assignment ops: {', '.join(ASSIGN_OPS)}.",
        f"Scalar functions (name/arity): {funcs}.",
        "Logical functions are spelt and_, or_, not_. Comparisons give 1.0 or 0.0.",
        "Dtypes: " + ", ".join(sorted(ir_text.DTYPE_CANONICAL)) + ".",
        "",
        _CALLS,
        "## Worked examples",
        "Source (worked.py):",
        numbered(src),
        "",
        "The IR Solar's tracer writes for these entries (one program per entry):",
        ir,
    ])


def ttype(t: TensorType) -> str:
    """A tensor type as the IR text writes it (``f32[4, 8]``), for prompts and messages."""
    dims = ", ".join(str(s) for s in t.shape) if t.shape else "()"
    return f"{ir_text.DTYPE_SHORT.get(t.dtype, t.dtype)}[{dims}]"


@dataclass
class EntryTask:
    """Everything the whole-entry prompt needs (and the checker expects)."""

    name: str
    path: str
    source: str
    error: str
    inputs: list[tuple[str, TensorType]]
    params: list[tuple[str, str, TensorType]]  # (IR name, module FQN, type)
    outputs: list[TensorType]
    scalars: list[tuple[str, object]] = field(default_factory=list)  # non-tensor arguments
    call: str = ""  # how the entry is built and called


@dataclass
class NodeTask:
    """One op without a lowering, as the per-node prompt states it."""

    node: str  # fx node name = op id
    target: str  # "aten.sinh.default", "mylib.op.default"
    schema: str
    call: str  # "out = target(a, 2.0, dim=1)"
    line: int | None
    source_line: str
    inputs: list[tuple[str, TensorType]]
    outputs: list[tuple[str, TensorType]]
    impl: str = ""  # Python source of a custom op's implementation, when found
    temp_prefix: str = ""


def _names(names) -> str:
    return ", ".join(f'"{n}"' for n in names)


def entry_message(t: EntryTask) -> str:
    """The user message of a whole-entry translation: the file, the interface to keep."""
    lines = [
        f"Task (whole entry): translate the entry `{t.name}` of the file `{os.path.basename(t.path)}`.",
        f"Why Solar's tracer could not take it: {t.error}",
        "",
        f"How it is run: {t.call}",
        "",
        "The file (line-numbered):",
        numbered(t.source),
        "",
        "Write one program:",
        f'    program("{t.name}", inputs=[{_names(n for n, _ in t.inputs)}], '
        f"params=[...], outputs=[...])",
        "Inputs, exactly these names and types, in this order:",
        *[f"    {n}: {ttype(tt)}" for n, tt in t.inputs],
    ]
    if t.scalars:
        lines += ["Non-tensor arguments (constants: write their values into the kernels):",
                  *[f"    {n} = {v!r}" for n, v in t.scalars]]
    if t.params:
        lines += ["Weights and buffers of the module: declare the ones the computation reads, "
                  "under these names, and list them in params=[...]:",
                  *[f"    {n}: {ttype(tt)}    # {fqn}" for n, fqn, tt in t.params]]
    lines += ["Outputs, in the order the entry returns them (name them as you like):",
              *[f"    output {i}: {ttype(tt)}" for i, tt in enumerate(t.outputs)],
              "Give every op line= the line of the file it comes from."]
    return "\n".join(lines)


def node_message(t: NodeTask) -> str:
    """The user message of a one-op translation: the op, its call, the tensors to declare."""
    ins = ", ".join(n for n, _ in t.inputs)
    outs = ", ".join(n for n, _ in t.outputs)
    lines = [
        "Task (one op): Solar traced the program, but has no lowering for this op.",
        f"Op: {t.target}",
        f"Schema: {t.schema}",
        f"Call in the traced graph: {t.call}",
    ]
    if t.line is not None:
        lines.append(f"Source line {t.line}: {t.source_line.strip()}")
    if t.impl:
        lines += ["Its implementation (a custom op defined in the user's file):", t.impl.rstrip()]
    lines += [
        "",
        "Write a program with exactly one op:",
        f'    program("{t.node}", inputs=[{_names(n for n, _ in t.inputs)}], '
        f'outputs=[{_names(n for n, _ in t.outputs)}])',
        f'    @op("{t.target}")',
        f"    def {t.node}({ins}) -> {outs if len(t.outputs) == 1 else '(' + outs + ')'}:",
        "        ... kernels ...",
        "Declare these tensors with exactly these types:",
        *[f"    {n}: {ttype(tt)}    # input" for n, tt in t.inputs],
        *[f"    {n}: {ttype(tt)}    # output" for n, tt in t.outputs],
        f"Name every other tensor you need with the prefix `{t.temp_prefix}` and declare it.",
    ]
    return "\n".join(lines)


def request(cfg_model: str, max_tokens: int, message: str) -> dict:
    """The Messages API request of a first round (later rounds append to ``messages``)."""
    return {
        "model": cfg_model,
        "max_tokens": max_tokens,
        "system": [{"type": "text", "text": system_prompt(),
                    "cache_control": {"type": "ephemeral"}}],
        "tools": [TOOL],
        "tool_choice": {"type": "tool", "name": TOOL_NAME},
        "messages": [{"role": "user", "content": message}],
    }
