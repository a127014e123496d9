"""Keep sympy out of a plain trace (issue 17: about 0.35 s of a cold start).

torch's Python meta kernels and ``torch._check`` import ``torch.fx.experimental.symbolic_shapes``,
and with it sympy, only to call guard helpers (``guard_or_false``, ``expect_true``...) that, on
plain Python bools and ints, return their argument; ``elementwise_dtypes`` imports sympy only to
ask ``isinstance(x, sympy.Basic)``. The tracer runs on concrete shapes, so they never see
anything symbolic. :func:`install` puts two stand-ins in ``sys.modules``:

* for symbolic_shapes, a module whose helpers answer plain values themselves and hand anything
  symbolic to the real function;
* for sympy, a module whose ``Basic`` is a class nothing is an instance of. That is exact while
  sympy is not imported: no sympy object can exist before sympy does;
* for ``torch.utils._sympy.functions``, a module whose names are such classes too, until they
  are called or sympy is imported.

Any other attribute (dunders included), or any symbolic argument, imports the real modules
(sympy first), and ``sys.modules`` then holds them, so torch.export, make_fx, dynamo and our
own symbolic costs import the real ones as usual. The stand-ins change when sympy is imported,
never a result."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

NAME = "torch.fx.experimental.symbolic_shapes"
# the attribute or helper that first needed a real module, for diagnosis
LOADED_BY: list[str] = []


def _load(name: str, why: str) -> types.ModuleType:
    """The real module ``name``, imported on first need (its stand-in leaves first). When the
    real sympy comes in, the stand-in for sympy's torch functions leaves ``sys.modules`` too."""
    mod = sys.modules.get(name)
    if mod is not None and not isinstance(mod, (_StandIn, _SympyStandIn, _FunctionsStandIn)):
        return mod
    LOADED_BY.append(why)
    sys.modules.pop(name, None)
    if name == "sympy" and isinstance(sys.modules.get(FUNCTIONS), _FunctionsStandIn):
        del sys.modules[FUNCTIONS]  # imported for real when next asked (not now: it may be
        # what is importing sympy, through torch.utils._sympy.numbers)
    return importlib.import_module(name)


def _real(why: str) -> types.ModuleType:
    """The real symbolic_shapes (after the real sympy, so that what it imports binds that)."""
    _load("sympy", why)
    return _load(NAME, why)


class _StandIn(types.ModuleType):
    """symbolic_shapes until something needs more than the plain-value helpers below."""

    def __getattr__(self, name: str) -> Any:
        if name == "__path__":  # asked by every ``from ... import``: a module, not a package
            raise AttributeError(name)
        return getattr(_real(name), name)


FUNCTIONS = "torch.utils._sympy.functions"


class _LazyClass(type):
    """A name of torch.utils._sympy.functions (sympy functions: ``Max``, ``FloorDiv``...)
    while sympy is not imported: nothing is an instance or a subclass of it then, which is
    exact; calling it, or any of its attributes, imports the real one. (A dtype conversion's
    meta kernel imports ``Max`` from there without using it.)"""

    def _target(cls) -> Any:
        _load("sympy", f"{FUNCTIONS}.{cls.__name__}")
        return getattr(_load(FUNCTIONS, cls.__name__), cls.__name__)

    def __instancecheck__(cls, obj: Any) -> bool:
        return sympy_loaded() and isinstance(obj, cls._target())

    def __subclasscheck__(cls, sub: type) -> bool:
        return sympy_loaded() and issubclass(sub, cls._target())

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._target()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._target(), name)


class _FunctionsStandIn(types.ModuleType):
    """torch.utils._sympy.functions until something needs one of its names for real."""

    def __getattr__(self, name: str) -> Any:
        if name == "__path__":  # a module, not a package
            raise AttributeError(name)
        if name.startswith("__") or sympy_loaded():
            _load("sympy", f"{FUNCTIONS}.{name}")
            return getattr(_load(FUNCTIONS, name), name)
        lazy = _LazyClass(name, (), {"__module__": FUNCTIONS})
        setattr(self, name, lazy)
        return lazy


class _NotSympy:
    """``sympy.Basic`` while sympy is not imported: nothing is an instance of it."""


class _SympyStandIn(types.ModuleType):
    """sympy until something needs more than ``isinstance(x, sympy.Basic)``."""

    def __getattr__(self, name: str) -> Any:
        if name == "Basic" and isinstance(sys.modules.get("sympy"), _SympyStandIn):
            return _NotSympy
        return getattr(_load("sympy", f"sympy.{name}"), name)


def _identity_helper(name: str, plain: tuple[type, ...]):
    """``name`` as the real module has it, answering a plain value of the ``plain`` types with
    the value itself (which is what the real one does) without importing it."""
    def helper(a, *args, **kwargs):
        if type(a) in plain and not args and not kwargs:
            return a
        return getattr(_real(name), name)(a, *args, **kwargs)

    helper.__name__ = helper.__qualname__ = name
    helper.__doc__ = f"``{name}`` of a plain value is the value itself; anything else: the real one."
    return helper


def _plain(xs: tuple) -> bool:
    return all(type(x) is bool for x in xs)


def sym_and(x, *others):
    """``and`` of plain bools; with a SymBool among them: the real ``sym_and``."""
    if _plain((x, *others)):
        return all((x, *others))
    return _real("sym_and").sym_and(x, *others)


def sym_or(x, *others):
    """``or`` of plain bools; with a SymBool among them: the real ``sym_or``."""
    if _plain((x, *others)):
        return any((x, *others))
    return _real("sym_or").sym_or(x, *others)


def sym_eq(x, y):
    """``==`` of plain ints, or of equal-length lists and tuples of them; else the real one."""
    if type(x) is int and type(y) is int:
        return x == y
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        if all(type(a) is int for a in x) and all(type(b) is int for b in y):
            return len(x) == len(y) and all(a == b for a, b in zip(x, y))
    return _real("sym_eq").sym_eq(x, y)


def has_guarding_hint(a) -> bool:
    """A plain value always has its hint; a SymInt/SymFloat/SymBool: the real one."""
    if type(a) in (int, float, bool):
        return True
    return _real("has_guarding_hint").has_guarding_hint(a)


def is_symbolic(val) -> bool:
    """A plain int, float or bool is not symbolic; anything else: the real one."""
    if type(val) in (int, float, bool):
        return False
    return _real("is_symbolic").is_symbolic(val)


def is_nested_int(s) -> bool:
    """Only a SymInt can be a nested int."""
    import torch

    if not isinstance(s, torch.SymInt):
        return False
    return _real("is_nested_int").is_nested_int(s)


# helpers that return a plain argument of these types as it is
_IDENTITY_HELPERS = {name: (bool,) for name in ("guard_or_false", "guard_or_true", "expect_true",
                                                "statically_known_true", "guard_bool",
                                                "guard_size_oblivious")}
_IDENTITY_HELPERS |= {"guard_int": (int,), "guarding_hint_or_throw": (bool, int)}


def _stand_in(cls: type, name: str) -> types.ModuleType:
    """A stand-in with the real module's ``__file__`` (``inspect.getmodule`` reads it off every
    module in ``sys.modules``; that must not import sympy)."""
    mod = cls(name, "stand-in: solar_lsp.frontend.torch.lazy_shapes")
    spec = importlib.util.find_spec(name)
    mod.__file__ = spec.origin if spec is not None else None
    return mod


def install() -> bool:
    """Put the stand-ins in place unless the real modules are already imported; True if the
    stand-in for symbolic_shapes is (or already was) in place."""
    if "sympy" not in sys.modules:
        sys.modules["sympy"] = _stand_in(_SympyStandIn, "sympy")
    if FUNCTIONS not in sys.modules and not sympy_loaded():
        import torch.utils._sympy as sympy_pkg  # torch's package: no sympy import of its own

        sys.modules[FUNCTIONS] = _stand_in(_FunctionsStandIn, FUNCTIONS)
        sympy_pkg.functions = sys.modules[FUNCTIONS]  # type: ignore[attr-defined]
    current = sys.modules.get(NAME)
    if current is not None:
        return isinstance(current, _StandIn)
    import torch.fx.experimental as parent

    mod = _stand_in(_StandIn, NAME)
    mod.__package__ = parent.__name__
    for name, plain in _IDENTITY_HELPERS.items():
        setattr(mod, name, _identity_helper(name, plain))
    for fn in (sym_and, sym_or, sym_eq, is_nested_int, has_guarding_hint, is_symbolic):
        setattr(mod, fn.__name__, fn)
    sys.modules[NAME] = mod
    parent.symbolic_shapes = mod  # type: ignore[attr-defined]
    return True


def sympy_loaded() -> bool:
    """Whether the real sympy has been imported in this process."""
    mod = sys.modules.get("sympy")
    return mod is not None and not isinstance(mod, _SympyStandIn)
