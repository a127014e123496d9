"""Python source templates of the IR's scalar functions (docs/architecture.md §4): the value
of each function, and a first-order bound on the rounding error a framework makes evaluating
it (docs/sol-model.md, Verification).

Value templates use the argument names ``a``, ``b``, ``c``. Error templates are
``str.format`` strings over ``{a}``, ``{b}``, ``{c}`` (argument values), ``{ea}``, ``{eb}``,
``{ec}`` (their error bounds), ``{r}`` (the result) and ``{u}`` (the accumulator's unit
roundoff): the error bound of the result, in units of that roundoff, is the arguments' errors
carried through the derivative plus one rounding of the result (``|r|``). Functions whose
result is exact for exact arguments (comparisons, casts to integers, floor) carry none.
"""

from __future__ import annotations

from solar_lsp.ir.core import SCALAR_FUNCS

# fn -> expression over argument names a, b, c (each a plain local name, may repeat).
FUNC_SRC: dict[str, str] = {
    "add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b",
    "neg": "-a", "abs": "np.abs(a)",
    "max": "np.maximum(a, b)", "min": "np.minimum(a, b)",
    "floor": "np.floor(a)", "ceil": "np.ceil(a)", "round": "np.rint(a)", "trunc": "np.trunc(a)",
    "sign": "np.sign(a)", "fmod": "np.fmod(a, b)", "remainder": "np.remainder(a, b)",
    "floordiv": "np.floor(a / b)",
    "exp": "np.exp(a)", "exp2": "np.exp2(a)", "expm1": "np.expm1(a)",
    "log": "np.log(a)", "log2": "np.log2(a)", "log1p": "np.log1p(a)",
    "sqrt": "np.sqrt(a)", "rsqrt": "_ONE / np.sqrt(a)", "reciprocal": "_ONE / a",
    "tanh": "np.tanh(a)", "erf": "np.float64(math.erf(a))",
    "sigmoid": "_ONE / (_ONE + np.exp(-a))", "pow": "np.power(a, b)",
    "sin": "np.sin(a)", "cos": "np.cos(a)", "tan": "np.tan(a)", "atan": "np.arctan(a)",
    "asin": "np.arcsin(a)", "acos": "np.arccos(a)", "atan2": "np.arctan2(a, b)",
    "sinh": "np.sinh(a)", "cosh": "np.cosh(a)", "asinh": "np.arcsinh(a)",
    "acosh": "np.arccosh(a)", "atanh": "np.arctanh(a)",
    "where": "(b if a != 0.0 else c)",
    "eq": "(_ONE if a == b else _ZERO)", "ne": "(_ONE if a != b else _ZERO)",
    "lt": "(_ONE if a < b else _ZERO)", "le": "(_ONE if a <= b else _ZERO)",
    "gt": "(_ONE if a > b else _ZERO)", "ge": "(_ONE if a >= b else _ZERO)",
    "and": "(_ONE if (a != 0.0 and b != 0.0) else _ZERO)",
    "or": "(_ONE if (a != 0.0 or b != 0.0) else _ZERO)",
    "not": "(_ONE if a == 0.0 else _ZERO)",
    "xor": "(_ONE if ((a != 0.0) != (b != 0.0)) else _ZERO)",
    # integer bit operations: the float64 operands hold integral values; compute in int64
    "band": "np.float64(np.int64(a) & np.int64(b))", "bor": "np.float64(np.int64(a) | np.int64(b))",
    "bxor": "np.float64(np.int64(a) ^ np.int64(b))", "bnot": "np.float64(~np.int64(a))",
    "shl": "np.float64(np.int64(a) << np.int64(b))", "shr": "np.float64(np.int64(a) >> np.int64(b))",
    "isnan": "(_ONE if np.isnan(a) else _ZERO)", "isinf": "(_ONE if np.isinf(a) else _ZERO)",
    "cast_f64": "a", "cast_f32": "a", "cast_f16": "a", "cast_bf16": "a", "cast_f8": "a",
    "cast_i64": "(np.trunc(a) if np.isfinite(a) else _I64MIN)",
    "cast_i32": "(np.remainder(np.trunc(a) + 2147483648.0, 4294967296.0) - 2147483648.0"
    " if np.isfinite(a) else _I32MIN)",
    "cast_i8": "(np.remainder(np.trunc(a) + 128.0, 256.0) - 128.0 if np.isfinite(a) else _ZERO)",
    "cast_u8": "(np.remainder(np.trunc(a), 256.0) if np.isfinite(a) else _ZERO)",
    "cast_bool": "(_ONE if a != 0.0 else _ZERO)",
}

# d(result) in units of u: |f'(a)|·ea (+ |∂f/∂b|·eb) + one rounding of the result.
# _pm(e, x) is e·|x| with 0·inf taken as 0; _q(n, d) is n/d with 0/0 taken as 0;
# _rd(r, top, tiny) is |r| plus the absolute error of underflow (``tiny``: the smallest
# normal value, in units of u; frameworks flush subnormals), or inf past the accumulator's
# range ``top``: the framework overflowed there (torch's fp32 sigmoid(-89) is 1 / (1 + inf)),
# so nothing bounds its value.
_ROUND = " + _rd({r}, {top}, {tiny})"
ERR_SRC: dict[str, str] = {
    "add": "{ea} + {eb}" + _ROUND, "sub": "{ea} + {eb}" + _ROUND,
    "mul": "_pm({ea}, {b}) + _pm({eb}, {a})" + _ROUND,
    "div": "_q(_pm({ea}, _ONE) + _pm({eb}, {r}), np.abs({b}))" + _ROUND,
    "neg": "{ea}", "abs": "{ea}",
    "max": "({ea} if {r} == {a} else {eb})", "min": "({ea} if {r} == {a} else {eb})",
    "fmod": "{ea} + {eb}", "remainder": "{ea} + {eb}",
    "exp": "_pm({ea}, {r})" + _ROUND, "exp2": "_pm({ea}, 0.6931471805599453 * {r})" + _ROUND,
    "expm1": "_pm({ea}, {r} + _ONE)" + _ROUND,
    "log": "_pm({ea}, _ONE / {a})" + _ROUND, "log2": "_pm({ea}, 1.4426950408889634 / {a})" + _ROUND,
    "log1p": "_pm({ea}, _ONE / (_ONE + {a}))" + _ROUND,
    "sqrt": "_pm({ea}, 0.5 / {r})" + _ROUND, "rsqrt": "_pm({ea}, 0.5 * {r} / {a})" + _ROUND,
    "reciprocal": "_pm({ea}, {r} * {r})" + _ROUND,
    "tanh": "_pm({ea}, _ONE - {r} * {r})" + _ROUND,
    "erf": "_pm({ea}, 1.1283791670955126 * np.exp(-{a} * {a}))" + _ROUND,
    "sigmoid": "_pm({ea}, {r} * (_ONE - {r}))" + _ROUND,
    "pow": "_pm({ea}, {b} * np.power({a}, {b} - _ONE)) + _pm({eb}, {r} * np.log(np.abs({a})))" + _ROUND,
    "sin": "_pm({ea}, np.cos({a}))" + _ROUND, "cos": "_pm({ea}, np.sin({a}))" + _ROUND,
    "tan": "_pm({ea}, _ONE + {r} * {r})" + _ROUND,
    "atan": "_pm({ea}, _ONE / (_ONE + {a} * {a}))" + _ROUND,
    "asin": "_pm({ea}, _ONE / np.sqrt(np.abs(_ONE - {a} * {a})))" + _ROUND,
    "acos": "_pm({ea}, _ONE / np.sqrt(np.abs(_ONE - {a} * {a})))" + _ROUND,
    "atan2": "_q(_pm({ea}, {b}) + _pm({eb}, {a}), {a} * {a} + {b} * {b})" + _ROUND,
    "sinh": "_pm({ea}, np.cosh({a}))" + _ROUND, "cosh": "_pm({ea}, np.sinh({a}))" + _ROUND,
    "asinh": "_pm({ea}, _ONE / np.sqrt({a} * {a} + _ONE))" + _ROUND,
    "acosh": "_pm({ea}, _ONE / np.sqrt(np.abs({a} * {a} - _ONE)))" + _ROUND,
    "atanh": "_pm({ea}, _ONE / np.abs(_ONE - {a} * {a}))" + _ROUND,
    "where": "({eb} if {a} != 0.0 else {ec})",
    "cast_f64": "{ea}", "cast_f32": "{ea} + np.abs({r}) * (5.9604644775390625e-08 / {u})",
    "cast_f16": "{ea} + np.abs({r}) * (4.8828125e-04 / {u})",
    "cast_bf16": "{ea} + np.abs({r}) * (3.90625e-03 / {u})",
    "cast_f8": "{ea} + np.abs({r}) * (6.25e-02 / {u})",
}
# A math library's transcendental functions are not correctly rounded: allow 2 ulp (4 u)
# for their result where IEEE arithmetic rounds within 1 u.
ERR_SRC.update({fn: s.replace(_ROUND, " + 4.0 * _rd({r}, {top}, {tiny})") for fn, s in ERR_SRC.items()
                if SCALAR_FUNCS.get(fn, (0, False))[1]})
# everything else (comparisons, logic, bit operations, floor/round, casts to integers) is
# exact on exact arguments
EXACT = "_ZERO"


def is_arg_char(src: str, i: int) -> bool:
    """True where ``src[i]`` is a standalone argument name a/b/c in a FUNC_SRC template."""
    ch = src[i]
    if ch not in "abc":
        return False
    before = src[i - 1] if i else " "
    after = src[i + 1] if i + 1 < len(src) else " "
    return not (before.isalnum() or before in "_.") and not (after.isalnum() or after == "_")
