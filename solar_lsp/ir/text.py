'''Text form of the Affine Loop IR (docs/architecture.md §3): a printer and a parser.

The text form is a restricted subset of Python; with :data:`PRELUDE` executed first it
is executable Python (the kernel bodies are plain loops over subscripts).  Grammar::

    # solar IR v1 — program 'Model'                        (comment, ignored)
    from __future__ import annotations                    (optional)
    program("Model", inputs=["x"], params=["w"], outputs=["t1"])   (required, once)
    x: f32[8, 64]                                         tensor declarations, in order
    s: f32[()]                                            a 0-d tensor
    views({"wt": "w"})                                    Program.views   (optional)
    unique({"xb": 64})                                    Program.unique  (optional)

    @op("aten.linear.default", line=12)                   one op, in execution order;
    def linear_0(x, wt) -> t0:                            params = Op.inputs,
        @kernel(unit="matrix", init="identity")           return annotation = Op.outputs
        def k0():                                         (`-> (a, b)` for several)
            for m in range(8):
                for k in range(64):
                    if 0 <= m - 1 < 8 and k >= 1:          guards: `lo <= e < hi`,
                        t0[m] += x[m, k] * wt[k, m]        `e >= lo`, `e < hi`

    @op("aten.permute.default")                           view / gather ops: one line
    def permute_1(w) -> wt:                               built from Op.call
        wt = w.permute((1, 0))                            view:   out = in0.NAME(*call[1:], *in[1:])
    @op("aten.index_select.default", line=3)
    def index_select_2(w, i) -> t3:
        t3 = gather.index_select(w, 0, i)                 gather: out = gather.NAME(in0, *call[1:], *in[1:])

Decorator keywords: ``@op(target, line=, id=, kind=, call=, note=, repeat=, phase=)`` (``id=``
only when the op id is not an identifier; ``kind=``/``call=`` only when the op is not printable
in the one-line form; ``phase=`` only for a training step's "backward" or "optimizer" ops) and ``@kernel(unit=, init=, op=, name=)``.

Statements: ``out[i] = e``, ``out[i] += e``, ``out[i] *= e``, ``out[i] = max(out[i], e)``
(op ``max=``), ``out[i] = min(out[i], e)`` (op ``min=``); ``@kernel(op="=")`` marks a
plain ``=`` whose right side happens to look like ``max(out[i], e)``.

Expressions: ``t[affine, ...]`` loads; number literals, ``inf``, ``-inf``, ``nan`` are
constants; ``idx(affine)`` is :class:`Index`; ``a + b``, ``a - b``, ``a * b``, ``a / b``
(also ``add(a, b)`` ...); any other scalar function is a call ``exp(a)``, ``lt(a, b)``,
``where(c, a, b)``; the Python keywords ``and``/``or``/``not`` are spelt ``and_``,
``or_``, ``not_`` (logical: 1.0 or 0.0). Integer bit operations are ``band``, ``bor``,
``bxor``, ``bnot``, ``shl``, ``shr`` (two's complement, ``shr`` arithmetic). For convenience
the parser also reads ``-a`` (neg), ``a ** b`` (pow), ``a // b`` (floordiv), ``a % b``
(remainder), ``a & b``, ``a | b``, ``a ^ b``, ``~a``, ``a << b``, ``a >> b`` (the bit
operations), ``a < b`` (lt, ...) and ``a if c else b``.
'''

from __future__ import annotations

from solar_lsp.ir.dtype_names import DTYPE_CANONICAL, DTYPE_SHORT
from solar_lsp.ir.parse import IRSyntaxError, parse_kernel, parse_program
from solar_lsp.ir.printer import print_kernel, print_program

__all__ = [
    "DTYPE_SHORT",
    "DTYPE_CANONICAL",
    "PRELUDE",
    "IRSyntaxError",
    "print_kernel",
    "print_program",
    "parse_program",
    "parse_kernel",
]

PRELUDE = '''\
import math as _m
import numpy as _np
inf, nan = _m.inf, _m.nan
class _DType:
    def __init__(self, name): self.name = name
    def __getitem__(self, shape): return (self, shape)
for _n in ("f64 f32 f16 bf16 f8e4m3 f8e5m2 i64 i32 i16 i8 u8 bool").split():
    globals()[_n] = _DType(_n)
def program(*a, **k): pass
def views(d): pass
def unique(d): pass
def op(*a, **k): return lambda f: f
def kernel(*a, **k): return lambda f: f
class _Gather:
    def __getattr__(self, name): return lambda *a: None
gather = _Gather()
def idx(i): return i
add, sub, mul = (lambda a, b: a + b), (lambda a, b: a - b), (lambda a, b: a * b)
div, neg, sign = (lambda a, b: a / b), (lambda a: -a), _np.sign
floor, ceil, trunc = _np.floor, _np.ceil, _np.trunc
fmod, remainder, floordiv = _np.fmod, _np.remainder, _np.floor_divide
exp, exp2, expm1, log, log2, log1p = _np.exp, _np.exp2, _np.expm1, _np.log, _np.log2, _np.log1p
sqrt, reciprocal = _np.sqrt, _np.reciprocal
def rsqrt(a): return 1.0 / _np.sqrt(a)
def sigmoid(a): return 1.0 / (1.0 + _np.exp(-a))
tanh, sin, cos, tan, atan = _np.tanh, _np.sin, _np.cos, _np.tan, _np.arctan
asin, acos, atan2 = _np.arcsin, _np.arccos, _np.arctan2
sinh, cosh, asinh, acosh, atanh = _np.sinh, _np.cosh, _np.arcsinh, _np.arccosh, _np.arctanh
erf = _np.vectorize(_m.erf)
where = _np.where
eq, ne, lt, le, gt, ge = _np.equal, _np.not_equal, _np.less, _np.less_equal, _np.greater, _np.greater_equal
and_, or_, not_, xor = _np.logical_and, _np.logical_or, _np.logical_not, _np.logical_xor
def _i(a): return _np.asarray(a).astype(_np.int64)
def band(a, b): return _i(a) & _i(b)
def bor(a, b): return _i(a) | _i(b)
def bxor(a, b): return _i(a) ^ _i(b)
def bnot(a): return ~_i(a)
def shl(a, b): return _i(a) << _i(b)
def shr(a, b): return _i(a) >> _i(b)
isnan, isinf = _np.isnan, _np.isinf
cast_f64, cast_f32, cast_f16 = _np.float64, _np.float32, _np.float16
cast_bf16 = cast_f8 = _np.float32
cast_i64, cast_i32, cast_i8, cast_u8, cast_bool = _np.int64, _np.int32, _np.int8, _np.uint8, _np.bool_
'''
