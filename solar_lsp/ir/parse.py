"""Parser of the Affine Loop IR text form (grammar in :mod:`solar_lsp.ir.text`): reads the
restricted Python subset with :mod:`ast` and builds the IR objects, never running the text."""

from __future__ import annotations

import ast
import keyword
import math
import textwrap

from solar_lsp.ir.core import (
    Affine,
    Call,
    Const,
    Expr,
    Guard,
    Index,
    Kernel,
    Load,
    Op,
    Program,
    TensorType,
)
from solar_lsp.ir.dtype_names import DTYPE_CANONICAL

__all__ = ["IRSyntaxError", "parse_kernel", "parse_program"]

_BINOPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
    ast.Pow: "pow", ast.FloorDiv: "floordiv", ast.Mod: "remainder",
    ast.BitAnd: "band", ast.BitOr: "bor", ast.BitXor: "bxor", ast.LShift: "shl", ast.RShift: "shr",
}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}


class IRSyntaxError(ValueError):
    """Text outside the IR subset; ``lineno`` is the 1-based line (or None)."""

    def __init__(self, msg: str, lineno: int | None = None):
        self.msg = msg
        self.lineno = lineno
        super().__init__(f"line {lineno}: {msg}" if lineno is not None else msg)


class _Parser:
    def __init__(self, text: str):
        self.text = text

    def err(self, node: ast.AST | None, msg: str) -> IRSyntaxError:
        return IRSyntaxError(msg, getattr(node, "lineno", None))

    def src(self, node: ast.AST) -> str:
        seg = ast.get_source_segment(self.text, node)
        return seg if seg is not None else ast.unparse(node)

    # ---------------------------------------------------------------- literals

    def lit(self, node: ast.AST) -> object:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None))):
            return node.value
        if isinstance(node, ast.Name) and node.id in ("inf", "nan"):
            return math.inf if node.id == "inf" else math.nan
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.lit(node.operand)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v
        if isinstance(node, ast.Tuple):
            return tuple(self.lit(e) for e in node.elts)
        if isinstance(node, ast.List):
            return [self.lit(e) for e in node.elts]
        raise self.err(node, f"expected a literal, got {self.src(node)!r}")

    def int_lit(self, node: ast.AST, what: str) -> int:
        try:
            v = self.lit(node)
        except IRSyntaxError:
            v = None
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.err(node, f"{what} must be an integer literal, got {self.src(node)!r}")
        return v

    def str_lit(self, node: ast.AST, what: str) -> str:
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            raise self.err(node, f"{what} must be a string literal, got {self.src(node)!r}")
        return node.value

    def str_list(self, node: ast.AST, what: str) -> list[str]:
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.err(node, f"{what} must be a list of tensor names")
        return [self.str_lit(e, what) for e in node.elts]

    def keywords(self, call: ast.Call, allowed: tuple[str, ...], what: str) -> dict[str, ast.AST]:
        out: dict[str, ast.AST] = {}
        for kw in call.keywords:
            if kw.arg is None or kw.arg not in allowed:
                raise self.err(
                    call, f"{what} takes the keywords {', '.join(allowed)}; got {kw.arg or '**'!r}"
                )
            if kw.arg in out:
                raise self.err(call, f"{what}: keyword {kw.arg!r} given twice")
            out[kw.arg] = kw.value
        return out

    # ---------------------------------------------------------------- affine

    def affine(self, node: ast.AST, what: str) -> Affine:
        """``what`` names the place, with ``{}`` where the offending text goes."""
        def flat(n: ast.AST) -> tuple[list[tuple[str, int]], int]:
            if isinstance(n, ast.Name):
                return [(n.id, 1)], 0
            if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
                return [], n.value
            if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
                t, c = flat(n.operand)
                if isinstance(n.op, ast.UAdd):
                    return t, c
                return [(v, -k) for v, k in t], -c
            if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)):
                lt, lc = flat(n.left)
                rt, rc = flat(n.right)
                if isinstance(n.op, ast.Sub):
                    rt, rc = [(v, -k) for v, k in rt], -rc
                return lt + rt, lc + rc
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
                lt, lc = flat(n.left)
                rt, rc = flat(n.right)
                if not lt:
                    return [(v, k * lc) for v, k in rt], rc * lc
                if not rt:
                    return [(v, k * rc) for v, k in lt], lc * rc
            raise ValueError

        try:
            terms, const = flat(node)
        except ValueError:
            raise self.err(
                node, what.format(repr(self.src(node))) + " is not affine in the loop variables"
            ) from None
        return Affine(tuple(terms), const)

    # ---------------------------------------------------------------- expressions

    def load(self, node: ast.AST) -> Load:
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
            raise self.err(node, f"expected a tensor access `t[i, ...]`, got {self.src(node)!r}")
        name = node.value.id
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        for e in elts:
            if isinstance(e, (ast.Slice, ast.Starred)):
                raise self.err(e, f"slices are not allowed in index {self.src(e)!r} of {name!r}")
        return Load(name, tuple(self.affine(e, "index {} of " + repr(name)) for e in elts))

    def expr(self, node: ast.AST) -> Expr:
        if isinstance(node, ast.Subscript):
            return self.load(node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return Const(float(node.value))
            raise self.err(node, f"constant {self.src(node)!r} is not a number")
        if isinstance(node, ast.Name):
            if node.id in ("inf", "nan"):
                return Const(math.inf if node.id == "inf" else math.nan)
            raise self.err(
                node,
                f"bare name {node.id!r} in an expression; use t[...] for a tensor "
                f"or idx({node.id}) for a loop index",
            )
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                inner = node.operand
                if (isinstance(inner, ast.Constant) and isinstance(inner.value, (int, float))
                        and not isinstance(inner.value, bool)) or (
                        isinstance(inner, ast.Name) and inner.id in ("inf", "nan")):
                    v = -self.expr(inner).value
                    return Const(math.nan if math.isnan(v) else v)
                return Call("neg", (self.expr(inner),))
            if isinstance(node.op, ast.Invert):
                return Call("bnot", (self.expr(node.operand),))
            raise self.err(node, f"unary operator in {self.src(node)!r} is not in the IR (use not_(...))")
        if isinstance(node, ast.BinOp):
            fn = _BINOPS.get(type(node.op))
            if fn is None:
                raise self.err(node, f"operator in {self.src(node)!r} is not in the IR")
            return Call(fn, (self.expr(node.left), self.expr(node.right)))
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.err(node, f"chained comparison {self.src(node)!r} in an expression")
            fn = _CMPOPS.get(type(node.ops[0]))
            if fn is None:
                raise self.err(node, f"comparison in {self.src(node)!r} is not in the IR")
            return Call(fn, (self.expr(node.left), self.expr(node.comparators[0])))
        if isinstance(node, ast.IfExp):
            return Call("where", (self.expr(node.test), self.expr(node.body), self.expr(node.orelse)))
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise self.err(node, f"call {self.src(node)!r}: only plain scalar function names")
            if node.keywords:
                raise self.err(node, f"call {self.src(node)!r}: keyword arguments are not allowed")
            if any(isinstance(a, ast.Starred) for a in node.args):
                raise self.err(node, f"call {self.src(node)!r}: *args are not allowed")
            fn = node.func.id
            if fn == "idx":
                if len(node.args) != 1:
                    raise self.err(node, "idx(...) takes exactly one affine expression")
                return Index(self.affine(node.args[0], "idx argument {}"))
            if fn.endswith("_") and keyword.iskeyword(fn[:-1]):
                fn = fn[:-1]
            return Call(fn, tuple(self.expr(a) for a in node.args))
        if isinstance(node, ast.BoolOp):
            raise self.err(node, f"{self.src(node)!r}: use and_(a, b) / or_(a, b) in expressions")
        raise self.err(node, f"expression {self.src(node)!r} is outside the IR subset")

    # ---------------------------------------------------------------- guards

    def bound(self, node: ast.AST, inf_sign: int) -> int | None:
        """An integer bound, or None for ``inf`` of the given sign."""
        v = None
        try:
            v = self.lit(node)
        except IRSyntaxError:
            pass
        if isinstance(v, float) and math.isinf(v) and (v > 0) == (inf_sign > 0):
            return None
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.err(node, f"guard bound must be an integer literal, got {self.src(node)!r}")
        return v

    def guards(self, node: ast.AST) -> list[Guard]:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            out: list[Guard] = []
            for v in node.values:
                out += self.guards(v)
            return out
        if not isinstance(node, ast.Compare):
            raise self.err(node, f"guard {self.src(node)!r} must be a comparison like `0 <= e < n`")
        ops = [type(o) for o in node.ops]
        if len(ops) == 2:
            lo_n, e_n, hi_n = node.left, node.comparators[0], node.comparators[1]
            if ops[0] not in (ast.Lt, ast.LtE) or ops[1] not in (ast.Lt, ast.LtE):
                raise self.err(node, f"guard {self.src(node)!r} must read `lo <= e < hi`")
            lo = self.bound(lo_n, -1)
            hi = self.bound(hi_n, +1)
            if lo is not None and ops[0] is ast.Lt:
                lo += 1
            if hi is not None and ops[1] is ast.LtE:
                hi += 1
            return [Guard(self.affine(e_n, "guard expression {}"), lo, hi)]
        if len(ops) == 1:
            left, right, o = node.left, node.comparators[0], ops[0]
            if o in (ast.GtE, ast.Gt, ast.Lt, ast.LtE):
                # `e >= lo`, `e > lo`, `e < hi`, `e <= hi`; the expression is on the left
                e = self.affine(left, "guard expression {}")
                if o is ast.GtE:
                    return [Guard(e, self.bound(right, -1), None)]
                if o is ast.Gt:
                    b = self.bound(right, -1)
                    return [Guard(e, None if b is None else b + 1, None)]
                if o is ast.Lt:
                    return [Guard(e, None, self.bound(right, +1))]
                b = self.bound(right, +1)
                return [Guard(e, None, None if b is None else b + 1)]
        raise self.err(node, f"guard {self.src(node)!r} must read `lo <= e < hi`, `e >= lo` or `e < hi`")

    # ---------------------------------------------------------------- kernels

    def kernel(self, fn: ast.FunctionDef) -> Kernel:
        if len(fn.decorator_list) != 1:
            raise self.err(fn, f"kernel {fn.name!r} needs exactly one @kernel(...) decorator")
        deco = fn.decorator_list[0]
        kw: dict[str, ast.AST] = {}
        if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "kernel":
            if deco.args:
                raise self.err(deco, "@kernel takes keyword arguments only")
            kw = self.keywords(deco, ("unit", "init", "op", "name"), "@kernel")
        elif not (isinstance(deco, ast.Name) and deco.id == "kernel"):
            raise self.err(deco, f"{fn.name!r}: expected @kernel(...), got @{self.src(deco)}")
        name = self.str_lit(kw["name"], "kernel name") if "name" in kw else fn.name
        unit = self.str_lit(kw["unit"], "unit") if "unit" in kw else "vector"
        init = self.str_lit(kw["init"], "init") if "init" in kw else "identity"
        op_kw = self.str_lit(kw["op"], "op") if "op" in kw else None
        a = fn.args
        if a.args or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or fn.returns:
            raise self.err(fn, f"kernel {name!r} must be declared `def {fn.name}():`")
        try:
            return self._kernel_body(fn, name, unit, init, op_kw)
        except IRSyntaxError as e:
            if e.msg.startswith("kernel "):
                raise
            raise IRSyntaxError(f"kernel {name!r}: {e.msg}", e.lineno) from None

    def _single(self, body: list[ast.stmt], where: str) -> ast.stmt:
        if len(body) != 1:
            node = body[1] if len(body) > 1 else None
            raise self.err(node, f"{where} must hold exactly one statement (a perfect loop nest)")
        return body[0]

    def _kernel_body(self, fn: ast.FunctionDef, name: str, unit: str, init: str, op_kw: str | None) -> Kernel:
        stmt = self._single(fn.body, "a kernel body")
        loops: list[tuple[str, int]] = []
        while isinstance(stmt, ast.For):
            if stmt.orelse:
                raise self.err(stmt, "for-else is not allowed")
            if not isinstance(stmt.target, ast.Name):
                raise self.err(stmt, "loop target must be a single name")
            it = stmt.iter
            if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                    and len(it.args) == 1 and not it.keywords):
                raise self.err(stmt, f"loops must read `for {stmt.target.id} in range(N):`")
            loops.append((stmt.target.id, self.int_lit(it.args[0], "loop extent")))
            stmt = self._single(stmt.body, f"loop {stmt.target.id!r}")
        guards: list[Guard] = []
        while isinstance(stmt, ast.If):
            if stmt.orelse:
                raise self.err(stmt, "guards cannot have an else branch")
            guards += self.guards(stmt.test)
            stmt = self._single(stmt.body, "a guard")
        op, out, expr = self._statement(stmt, op_kw)
        return Kernel(name, tuple(loops), out, op, expr, tuple(guards), init, unit)

    def _statement(self, stmt: ast.stmt, op_kw: str | None) -> tuple[str, Load, Expr]:
        if isinstance(stmt, ast.AugAssign):
            op = {ast.Add: "+=", ast.Mult: "*="}.get(type(stmt.op))
            if op is None:
                raise self.err(stmt, "only `+=` and `*=` augmented assignments are in the IR")
            if op_kw is not None and op_kw != op:
                raise self.err(stmt, f"@kernel(op={op_kw!r}) does not match the statement `{op}`")
            return op, self.load(stmt.target), self.expr(stmt.value)
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1:
                raise self.err(stmt, "chained assignment is not allowed")
            out = self.load(stmt.targets[0])
            v = stmt.value
            if (op_kw != "=" and isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
                    and v.func.id in ("max", "min") and len(v.args) == 2 and not v.keywords
                    and isinstance(v.args[0], ast.Subscript)):
                first = self.expr(v.args[0])
                if first == out:
                    op = v.func.id + "="
                    if op_kw is not None and op_kw != op:
                        raise self.err(stmt, f"@kernel(op={op_kw!r}) does not match `{op}`")
                    return op, out, self.expr(v.args[1])
            if op_kw not in (None, "="):
                raise self.err(stmt, f"@kernel(op={op_kw!r}) does not match the statement")
            return "=", out, self.expr(v)
        raise self.err(stmt, f"statement {self.src(stmt)!r} is not an IR assignment")

    # ---------------------------------------------------------------- ops

    def op(self, fn: ast.FunctionDef) -> Op:
        if len(fn.decorator_list) != 1:
            raise self.err(fn, f"{fn.name!r} needs exactly one @op(...) decorator")
        deco = fn.decorator_list[0]
        if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name) and deco.func.id == "op"):
            raise self.err(deco, f"{fn.name!r}: expected @op(target, ...)")
        if len(deco.args) != 1:
            raise self.err(deco, "@op takes the target string as its only positional argument")
        target = self.str_lit(deco.args[0], "op target")
        kw = self.keywords(deco, ("line", "id", "kind", "call", "note", "repeat", "phase"), "@op")
        line = None
        if "line" in kw:
            lv = self.lit(kw["line"])
            if lv is not None and (not isinstance(lv, int) or isinstance(lv, bool)):
                raise self.err(deco, "line= must be an int or None")
            line = lv
        op_id = self.str_lit(kw["id"], "op id") if "id" in kw else fn.name
        kind = self.str_lit(kw["kind"], "kind") if "kind" in kw else None
        call = self.lit(kw["call"]) if "call" in kw else None
        note = self.str_lit(kw["note"], "note") if "note" in kw else ""
        repeat = self.int_lit(kw["repeat"], "repeat") if "repeat" in kw else 1
        phase = self.str_lit(kw["phase"], "phase") if "phase" in kw else "forward"
        if phase not in ("forward", "backward", "optimizer"):
            raise self.err(deco, f"phase= must be forward, backward or optimizer, not {phase!r}")
        a = fn.args
        if a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or a.defaults:
            raise self.err(fn, f"op {op_id!r}: parameters must be plain input tensor names")
        inputs = [x.arg for x in a.args]
        if any(x.annotation is not None for x in a.args):
            raise self.err(fn, f"op {op_id!r}: parameters take no annotations")
        outputs: list[str] = []
        r = fn.returns
        if r is not None:
            elts = r.elts if isinstance(r, ast.Tuple) else [r]
            for e in elts:
                if not isinstance(e, ast.Name):
                    raise self.err(r, f"op {op_id!r}: `-> ...` must name the output tensors")
                outputs.append(e.id)
        kernels: list[Kernel] = []
        body = fn.body
        if len(body) == 1 and isinstance(body[0], ast.Pass):
            pass
        elif len(body) == 1 and isinstance(body[0], ast.Assign):
            if kind is not None or call is not None:
                raise self.err(body[0], f"op {op_id!r}: give either kind=/call= or a call line, not both")
            kind, call = self._call_line(body[0], op_id, inputs, outputs)
        else:
            for st in body:
                if not isinstance(st, ast.FunctionDef):
                    raise self.err(st, f"op {op_id!r}: an op body holds @kernel functions, "
                                       "one view/gather line, or `pass`")
                kernels.append(self.kernel(st))
        return Op(op_id, target, line, inputs, outputs, kernels, kind or "compute", call, note,
                  repeat=repeat, phase=phase)

    def _call_line(self, st: ast.Assign, op_id: str, inputs: list[str], outputs: list[str]):
        if len(st.targets) != 1:
            raise self.err(st, "chained assignment is not allowed")
        t = st.targets[0]
        tnames = t.elts if isinstance(t, ast.Tuple) else [t]
        if not all(isinstance(x, ast.Name) for x in tnames):
            raise self.err(st, f"op {op_id!r}: the call line assigns to tensor names")
        if [x.id for x in tnames] != outputs:
            raise self.err(st, f"op {op_id!r}: the call line must assign exactly the op outputs {outputs}")
        v = st.value
        if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                and isinstance(v.func.value, ast.Name) and not v.keywords):
            raise self.err(st, f"op {op_id!r}: expected `out = x.method(...)` or `out = gather.fn(...)`")
        recv, method = v.func.value.id, v.func.attr
        kind = "gather" if recv == "gather" else "view"
        tensors = [] if kind == "gather" else [recv]
        lits: list[object] = []
        for arg in v.args:
            if isinstance(arg, ast.Name) and arg.id not in ("inf", "nan"):
                tensors.append(arg.id)
            else:
                lits.append(self.lit(arg))
        if tensors != inputs:
            raise self.err(st, f"op {op_id!r}: the call line reads {tensors}, but the op inputs are {inputs}")
        return kind, (method, *lits)

    # ---------------------------------------------------------------- program

    def tensor_type(self, node: ast.AST, name: str) -> TensorType:
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
            raise self.err(node, f"tensor {name!r}: type must read like `f32[8, 64]`")
        dt = node.value.id
        dtype = DTYPE_CANONICAL.get(dt, dt)
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        shape = tuple(self.int_lit(e, f"dimension of {name!r}") for e in elts)
        return TensorType(shape, dtype)

    def program(self, mod: ast.Module) -> Program:
        prog: Program | None = None
        tensors: dict[str, TensorType] = {}
        views: dict[str, str] = {}
        unique: dict[str, int] = {}
        ops: list[Op] = []
        for st in mod.body:
            if isinstance(st, ast.ImportFrom) and st.module == "__future__":
                continue
            if isinstance(st, ast.AnnAssign):
                if not isinstance(st.target, ast.Name) or st.value is not None:
                    raise self.err(st, "tensor declarations read `name: f32[8, 64]`")
                name = st.target.id
                if name in tensors:
                    raise self.err(st, f"tensor {name!r} is declared twice")
                tensors[name] = self.tensor_type(st.annotation, name)
                continue
            if isinstance(st, ast.FunctionDef):
                ops.append(self.op(st))
                continue
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name):
                c, fname = st.value, st.value.func.id
                if fname == "program":
                    if prog is not None:
                        raise self.err(st, "program(...) given twice")
                    if len(c.args) != 1:
                        raise self.err(st, "program(...) takes the program name as its only positional argument")
                    kw = self.keywords(c, ("inputs", "params", "outputs"), "program(...)")
                    prog = Program(self.str_lit(c.args[0], "program name"))
                    for role in ("inputs", "params", "outputs"):
                        if role in kw:
                            setattr(prog, role, self.str_list(kw[role], role))
                    continue
                if fname in ("views", "unique"):
                    if len(c.args) != 1 or c.keywords or not isinstance(c.args[0], ast.Dict):
                        raise self.err(st, f"{fname}(...) takes one dict literal")
                    d = c.args[0]
                    for kn, vn in zip(d.keys, d.values):
                        if kn is None:
                            raise self.err(st, f"{fname}(...): ** is not allowed")
                        key = self.str_lit(kn, f"{fname} key")
                        if fname == "views":
                            views[key] = self.str_lit(vn, "view base")
                        else:
                            unique[key] = self.int_lit(vn, "unique count")
                    continue
            raise self.err(st, f"statement {self.src(st).splitlines()[0]!r} is outside the IR subset")
        if prog is None:
            raise IRSyntaxError("missing the program(...) header", 1)
        prog.tensors, prog.views, prog.unique, prog.ops = tensors, views, unique, ops
        return prog


def _parse_module(text: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError as e:
        raise IRSyntaxError(f"Python syntax error: {e.msg}", e.lineno) from None


def parse_program(text: str) -> Program:
    """Parse the text form of a program (see the module docstring for the grammar)."""
    return _Parser(text).program(_parse_module(text))


def parse_kernel(text: str) -> Kernel:
    """Parse one ``@kernel(...) def name(): for ...`` block (comments allowed)."""
    text = textwrap.dedent(text)
    mod = _parse_module(text)
    parser = _Parser(text)
    defs = [s for s in mod.body if not (isinstance(s, ast.ImportFrom) and s.module == "__future__")]
    if len(defs) != 1 or not isinstance(defs[0], ast.FunctionDef):
        node = defs[1] if len(defs) > 1 else (defs[0] if defs else None)
        raise parser.err(node, "expected exactly one `@kernel(...) def name(): ...` block")
    return parser.kernel(defs[0])
