"""Lower a traced jaxpr into an Affine Loop IR program (the JAX peer of ``torch_lower``).

The primitive table lives in ``prims`` and the per-equation context in ``context``; this
module holds the lowering state and the control-flow rules:

- call-like primitives (``jit``, ``custom_jvp_call``, ``custom_vjp_call``, ``remat``) are
  inlined by the shared :class:`~.jax_trace.Walker`;
- ``scan`` and ``while`` with a static trip count emit their body **once**, each body op
  with ``repeat`` = trip count (nested loops multiply). Loop plumbing is composition:
  per-iteration slices of ``xs`` are ``select`` views, carries enter through ``alias`` views
  and leave through ``loop_carry`` / ``loop_stack`` steps, which move no data of their own
  (the body's ops already write every iteration's result);
- a ``while`` whose trip count is data-dependent needs ``# solar: trips=N`` on its line,
  else it is listed in ``unsupported`` (its body counts nothing: still a lower bound);
- ``cond`` lowers every branch, keeps the costlier one (unfused roofline time on the
  report's first chip) and says so in ``notes``.

An equation without a lowering is never dropped silently: it is listed in ``unsupported``
with its line and reason, and its outputs stay declared so later equations still lower.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Lowered, Unsupported, UnsupportedOp
from solar_lsp.frontend.jax.context import JCtx, Opaque, Shape, known_dtype
from solar_lsp.frontend.jax.prims import LOWERINGS, UNLOWERED
from solar_lsp.frontend.jax.trace import JaxTraced, Key, Lit, Walker, WhileInfo, dtype_name
from solar_lsp.ir.core import Const, Kernel, Load, Op, Program, TensorType
from solar_lsp.ir.validate import IRValidationError, validate_kernel


@dataclass
class LoopInfo:
    """One lowered loop, for the verifier's replay: the body's ops in order (nested loops
    as LoopInfo) and how values enter and leave each iteration."""

    key: Key
    kind: str  # "scan" | "while"
    trips: int
    source: str  # "static" | "pragma"
    line: int | None
    reverse: bool = False
    body: list[Any] = field(default_factory=list)  # op ids and nested LoopInfo
    carry_in: list[str] = field(default_factory=list)  # per-iteration carry tensors
    carry_out: list[Any] = field(default_factory=list)  # body results (tensor or Lit)
    xs: list[tuple[str, str]] = field(default_factory=list)  # (stacked input, slice tensor)
    ys: list[tuple[Any, str]] = field(default_factory=list)  # (body result, stacked output)
    finals: list[str | None] = field(default_factory=list)  # outer final-carry tensors
    exit_ops: list[str] = field(default_factory=list)


@dataclass
class JaxLowered(Lowered):
    """A lowered JAX entry: the program plus what the verifier needs to replay it."""

    tensor_key: dict[str, Key] = field(default_factory=dict)  # tensor -> walker key
    derived: dict[str, str] = field(default_factory=dict)  # tensor -> op computing it (no key)
    choices: dict[Key, int] = field(default_factory=dict)  # cond key -> branch lowered
    loops: list[LoopInfo] = field(default_factory=list)  # top-level and nested, in order
    notes: list[dict] = field(default_factory=list)
    eqns: int = 0  # jaxpr equations lowered (inlined bodies included, loop bodies once)


class JaxLowerer(Walker):
    """Walks the jaxpr and emits ops; see the module docstring for the rules."""

    def __init__(self, traced: JaxTraced, score: Callable[[Program, list[Op]], float] | None = None):
        super().__init__(traced)
        self.program = Program(name=traced.entry.name)
        self.out = JaxLowered(self.program)
        self.score = score or op_count_score
        self.stack: list[list[Any]] = []  # body collectors of the loops being lowered
        self.iota_dim: dict[str, int] = {}  # iota tensors -> their dimension (argsort)
        self._ids: dict[str, int] = {}

    # -- names
    def new_tensor(self, base: str, shape: Shape, dtype: str) -> str:
        if keyword.iskeyword(base):  # `and`, `or`, `not` primitives: IR text needs identifiers
            base += "_"
        name = base
        n = 0
        while name in self.program.tensors:
            n += 1
            name = f"{base}{n}"
        self.program.tensors[name] = TensorType(tuple(int(s) for s in shape), dtype)
        return name

    def op_id_base(self, prim: str) -> str:
        return prim.replace("-", "_")

    def new_op_id(self, prim: str) -> str:
        base = self.op_id_base(prim)
        n = self._ids.get(base, 0)
        self._ids[base] = n + 1
        return f"{base}_{n}"

    def keyed(self, base: str, aval: Any, key: Key) -> Any:
        dt = dtype_name(aval.dtype)
        if not known_dtype(dt):
            return Opaque(dt)
        name = self.new_tensor(base, tuple(aval.shape), dt)
        self.out.tensor_key[name] = key
        return name

    # -- ops
    def add_op(self, op: Op) -> None:
        self.program.ops.append(op)
        if self.stack:
            self.stack[-1].append(op.id)

    def register_view(self, op: Op) -> None:
        p = self.program
        src, dst = op.inputs[0], op.outputs[0]
        p.views[dst] = src
        uniq = p.unique_numel(src)
        if op.call and op.call[0] in ("slice", "select"):
            uniq = min(uniq, p.tensors[dst].numel)
        p.unique[dst] = uniq
        if dst not in self.out.tensor_key:
            self.out.derived[dst] = op.id
        self.add_op(op)

    def unsupported(self, what: str, line: int | None, reason: str) -> None:
        self.out.unsupported.append(UnsupportedOp(what, line, reason))

    # -- walker hooks
    def const(self, value: Any, key: Key) -> Any:
        import numpy as np
        raw = getattr(value, "dtype", None)
        dt = dtype_name(np.asarray(value).dtype if raw is None else raw)
        if not known_dtype(dt):  # complex, or a PRNG key numpy cannot even hold
            return Opaque(dt)
        a = np.asarray(value)
        name = self.new_tensor("const", a.shape, dtype_name(a.dtype))
        self.out.tensor_key[name] = key
        self.program.params.append(name)
        return name

    def leaf(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        self.out.eqns += 1
        prim = eqn.primitive.name
        outs = [self.keyed(self.op_id_base(prim), v.aval, (key, j)) for j, v in enumerate(eqn.outvars)]
        fn = LOWERINGS.get(prim)
        if prim in UNLOWERED:  # known, with a reason (PRNG ops, functions the IR lacks)
            self.unsupported(prim, line, UNLOWERED[prim])
            return outs
        if fn is None:
            self.unsupported(prim, line, f"no lowering for the jaxpr primitive {prim!r}")
            return outs
        odd = [h.dtype for h in list(ins) + outs if isinstance(h, Opaque)]
        if odd:
            self.unsupported(prim, line, f"dtype {odd[0]} has no type in the IR")
            return outs
        c = JCtx(self, eqn, ins, outs, key, line, repeat)
        try:
            if any(self.program.tensors[o].numel == 0 for o in outs):
                c.kind = "alloc"
                for j in range(len(outs)):
                    c.out(j)
            else:
                fn(c)
        except Unsupported as exc:
            self.unsupported(prim, line, str(exc))
            return outs
        except Exception as exc:  # a lowering bug must not lose the rest of the entry
            self.unsupported(prim, line, f"lowering failed: {type(exc).__name__}: {exc}")
            return outs
        try:
            for op in c.pre_ops:
                for k in op.kernels:
                    validate_kernel(k, self.program.tensors)
            for k in c.kernels:
                validate_kernel(k, self.program.tensors)
        except IRValidationError as exc:
            self.unsupported(prim, line, f"lowering produced invalid IR: {exc}")
            return outs
        for op in c.pre_ops:
            if op.kind == "view":
                self.register_view(op)
            else:
                for o in op.outputs:
                    self.out.derived[o] = op.id
                self.add_op(op)
        if c.kind == "none":  # everything was emitted as helper ops (split)
            return outs
        if c.kind == "alias":  # the output is the input: no op, no tensor
            del self.program.tensors[outs[0]]
            del self.out.tensor_key[outs[0]]
            return [c.inputs[0]] + outs[1:]
        op = Op(id=self.new_op_id(prim), target=prim, line=line, inputs=c.inputs,
                outputs=c.outputs, kernels=c.kernels, kind=c.kind, call=c.call, repeat=repeat)
        if c.kind == "view":
            self.register_view(op)
        else:
            self.add_op(op)
        return outs

    # -- control flow
    def _enter(self, value: Any, aval: Any, key: Key, line: int | None, repeat: int,
               prim: str) -> str:
        """A loop carry's per-iteration tensor: an alias view of the initial value, or a
        one-element fill when the initial value is a literal (a counter starting at 0)."""
        name = self.keyed(f"{prim}_carry", aval, key)
        if isinstance(value, Lit):
            shape = tuple(aval.shape)
            vs = B.ivars(len(shape))
            k = Kernel(f"{prim}_init", tuple(zip(vs, shape)), Load(name, B.plain(vs)), "=",
                       Const(float(value.value)))
            self.add_op(Op(id=self.new_op_id(prim + "_init"), target=prim, line=line,
                           inputs=[], outputs=[name], kernels=[k], repeat=repeat))
        else:
            self.register_view(Op(id=self.new_op_id(prim + "_enter"), target=prim,
                                  line=line, inputs=[value], outputs=[name], kind="view",
                                  call=("alias",), repeat=repeat))
        return name

    def _exit(self, loop: LoopInfo, value: Any, aval: Any, key: Key, line: int | None, repeat: int,
              callspec: tuple, prim: str) -> Any:
        if isinstance(value, Lit) and callspec[0] == "loop_carry":
            return value
        name = self.keyed(f"{prim}_out", aval, key)
        if isinstance(value, Lit):  # stacked constants
            shape = tuple(aval.shape)
            vs = B.ivars(len(shape))
            op = Op(id=self.new_op_id(prim + "_exit"), target=prim, line=line, inputs=[],
                    outputs=[name], kernels=[Kernel(f"{prim}_fill", tuple(zip(vs, shape)),
                                                    Load(name, B.plain(vs)), "=",
                                                    Const(float(value.value)))], repeat=repeat)
        else:
            op = Op(id=self.new_op_id(prim + "_exit"), target=prim, line=line,
                    inputs=[value], outputs=[name], kind="view", call=callspec, repeat=repeat,
                    note="loop plumbing: the body's ops write every iteration's result")
        self.add_op(op)
        loop.exit_ops.append(op.id)
        return name

    def scan(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        p = eqn.params
        T, nc, ncar, rev = int(p["length"]), p["num_consts"], p["num_carry"], bool(p["reverse"])
        consts, init, xs = ins[:nc], ins[nc:nc + ncar], ins[nc + ncar:]
        body = p["jaxpr"]
        bj = body.jaxpr
        if any(isinstance(h, Opaque) for h in ins) or \
                any(not known_dtype(dtype_name(v.aval.dtype)) for v in eqn.outvars):
            self.unsupported("scan", line, "a loop value has a dtype with no type in the IR")
            return [self.keyed("scan_out", v.aval, (key, j)) for j, v in enumerate(eqn.outvars)]
        loop = LoopInfo(key, "scan", T, "static", line, rev)
        self._note(line, "scan", f"scan of {T} steps: its body is counted {T}x")
        if T == 0:
            return list(init) + [self.keyed("scan_out", v.aval, (key, ncar + j))
                                 for j, v in enumerate(eqn.outvars[ncar:])]
        at = T - 1 if rev else 0
        xts = []
        for j, x in enumerate(xs):
            var = bj.invars[nc + ncar + j]
            name = self.keyed("scan_x", var.aval, key + ("x", j))
            self.register_view(Op(id=self.new_op_id("scan_slice"), target="scan", line=line,
                                  inputs=[x], outputs=[name], kind="view", call=("select", 0, at),
                                  repeat=repeat))
            loop.xs.append((x, name))
            xts.append(name)
        cins = [self._enter(v, bj.invars[nc + j].aval, key + ("cin", j), line, repeat, "scan")
                for j, v in enumerate(init)]
        loop.carry_in = cins
        self.stack.append(loop.body)
        try:
            outs = self.closed_block(body, list(consts) + cins + xts, key + ("body",), line, repeat * T)
        finally:
            self.stack.pop()
        loop.carry_out = outs[:ncar]
        self._register_loop(loop)
        results: list[Any] = []
        for j, v in enumerate(outs[:ncar]):
            r = self._exit(loop, v, eqn.outvars[j].aval, (key, j), line, repeat, ("loop_carry", T), "scan")
            loop.finals.append(r if isinstance(r, str) else None)
            results.append(r)
        for j, v in enumerate(outs[ncar:]):
            r = self._exit(loop, v, eqn.outvars[ncar + j].aval, (key, ncar + j), line, repeat,
                           ("loop_stack", T, rev), "scan")
            loop.ys.append((v, r))
            results.append(r)
        return results

    def while_(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int,
               info: WhileInfo) -> list[Any]:
        p = eqn.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, init = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]
        if info.trips is not None and (any(isinstance(h, Opaque) for h in ins) or any(
                not known_dtype(dtype_name(v.aval.dtype)) for v in eqn.outvars)):
            info = WhileInfo(None, "dynamic", "a loop value has a dtype with no type in the IR")
        if info.trips is None:
            self.unsupported("while", line, info.reason)
            return [self.keyed("while_out", v.aval, (key, j)) for j, v in enumerate(eqn.outvars)]
        T = info.trips
        how = "a static counter" if info.source == "static" else "the `# solar: trips` pragma"
        self._note(line, "while", f"while loop of {T} trips (from {how}): its body is counted {T}x")
        loop = LoopInfo(key, "while", T, info.source, line)
        bj = p["body_jaxpr"].jaxpr
        cins = [self._enter(v, bj.invars[bn + j].aval, key + ("cin", j), line, repeat, "while")
                for j, v in enumerate(init)]
        loop.carry_in = cins
        self.stack.append(loop.body)
        try:
            if T:
                self.closed_block(p["cond_jaxpr"], list(cconsts) + cins, key + ("cond",), line,
                                  repeat * T)
            outs = self.closed_block(p["body_jaxpr"], list(bconsts) + cins, key + ("body",), line,
                                     repeat * T)
        finally:
            self.stack.pop()
        loop.carry_out = outs
        self._register_loop(loop)
        results = []
        for j, v in enumerate(outs):
            r = self._exit(loop, v, eqn.outvars[j].aval, (key, j), line, repeat, ("loop_carry", T), "while")
            loop.finals.append(r if isinstance(r, str) else None)
            results.append(r)
        return results

    def _register_loop(self, loop: LoopInfo) -> None:
        self.out.loops.append(loop)
        if self.stack:
            self.stack[-1].append(loop)

    def cond(self, eqn: Any, ins: list[Any], key: Key, line: int | None, repeat: int) -> list[Any]:
        branches = eqn.params["branches"]
        index, operands = ins[0], list(ins[1:])
        if isinstance(index, Lit):  # a constant predicate: that branch only
            b = max(0, min(int(index.value), len(branches) - 1))
            self.out.choices[key] = b
            return self.closed_block(branches[b], operands, key + ("br", b), line, repeat)
        scores = []
        for b, br in enumerate(branches):
            snap = self._snapshot()
            start = len(self.program.ops)
            try:
                self.closed_block(br, operands, key + ("br", b), line, repeat)
                scores.append(self.score(self.program, self.program.ops[start:]))
            finally:
                self._restore(snap)
        b = max(range(len(branches)), key=lambda i: (scores[i], -i))
        self.out.choices[key] = b
        others = ", ".join(f"branch {i}: {s * 1e6:.3g} us" for i, s in enumerate(scores) if i != b)
        which = f" (lax.cond's {'true' if b else 'false'} function)" if len(branches) == 2 else ""
        self._note(line, "cond", f"cond: counted the costlier branch {b} of {len(branches)}{which} "
                                 f"({scores[b] * 1e6:.3g} us unfused; {others}); which branch runs "
                                 "depends on the data, so this bounds the worst case")
        return self.closed_block(branches[b], operands, key + ("br", b), line, repeat)

    def _note(self, line: int | None, kind: str, text: str) -> None:
        self.out.notes.append({"line": line, "kind": kind, "note": text})

    def _snapshot(self) -> tuple:
        p, o = self.program, self.out
        return (dict(p.tensors), list(p.ops), list(p.params), dict(p.views), dict(p.unique),
                list(o.unsupported), list(o.notes), dict(o.tensor_key), dict(o.derived),
                dict(o.choices), list(o.loops), [list(s) for s in self.stack], dict(self._ids), o.eqns)

    def _restore(self, s: tuple) -> None:
        p, o = self.program, self.out
        (p.tensors, p.ops, p.params, p.views, p.unique, o.unsupported, o.notes, o.tensor_key,
         o.derived, o.choices, o.loops, stacks, self._ids, o.eqns) = s
        for cur, old in zip(self.stack, stacks):
            cur[:] = old


def op_count_score(p: Program, ops: list[Op]) -> float:
    """A branch's cost when the caller gives no chip: its op count (the pipeline passes SOL time)."""
    return float(len(ops))


def lower(traced: JaxTraced, score: Callable[[Program, list[Op]], float] | None = None) -> JaxLowered:
    """The IR program of a traced entry: params (weights, then jaxpr consts), inputs, ops."""
    lw = JaxLowerer(traced, score)
    lower_with(lw)
    return lw.out


def lower_with(lw: JaxLowerer) -> list[Any]:
    """Run a lowerer over its traced entry; the handles of the jaxpr's outputs, in order
    (a tensor name, or a :class:`Lit` for a literal output)."""
    traced = lw.traced
    invars = traced.closed.jaxpr.invars
    args = []
    names = list(traced.param_names) + list(traced.input_names)
    for i, v in enumerate(invars):
        base = names[i] if i < len(names) else f"arg{i}"
        name = lw.keyed(_ident(base), v.aval, ("in", i))
        if isinstance(name, str):
            (lw.program.params if i < traced.n_params else lw.program.inputs).append(name)
        args.append(name)
    outs = lw.run(args)
    for o in outs:
        if isinstance(o, str) and o not in lw.program.outputs:
            lw.program.outputs.append(o)
    lw.out.node_of_tensor = {t: str(k) for t, k in lw.out.tensor_key.items()}
    return outs


def _ident(s: str) -> str:
    out = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in s).strip("_")
    out = "_".join(x for x in out.split("_") if x)
    return out if out and not out[0].isdigit() else f"t_{out}"
