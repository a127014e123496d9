"""Build a discovered torch entry: import the user's file as a module, instantiate the entry's
model and make its inputs (on meta tensors for analysis, real ones for verification).

User code runs here (the file's top level, ``get_init_inputs``, the model's ``__init__``,
``get_inputs``); every failure becomes an EntryError pointing at the user's line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
import types
from typing import Any

import torch

from solar_lsp.frontend.errors import EntryError, user_line
from solar_lsp.frontend.torch.devices import (
    BUDGET_BYTES,
    SMALL_BYTES,
    DeviceMap,
    build_devices,
    to_meta,
)
from solar_lsp.frontend.torch.metatrace import tensor_attributes
from solar_lsp.source.discover import Entry, TensorSpec

_MODULE_COUNTER = [0]


def load_module(path: str) -> types.ModuleType:
    """Import the user's file as a fresh module. User code runs here: callers isolate it."""
    path = os.path.realpath(path)
    _MODULE_COUNTER[0] += 1
    name = f"solar_user_{_MODULE_COUNTER[0]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EntryError("import", f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = os.path.dirname(path)
    if folder not in sys.path:  # as `python model.py` does: sibling modules import (also lazily)
        sys.path.insert(0, folder)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    except Exception as exc:  # user code: any failure becomes a message
        sys.modules.pop(name, None)
        raise EntryError("import", f"importing the file failed: {type(exc).__name__}: {exc}",
                         user_line(exc, path)) from exc
    _anchor_user_frames(module, path)
    return module


def _anchor_user_frames(module: types.ModuleType, path: str) -> None:
    """torch.export keeps only ``forward`` frames in stack traces unless a frame is
    registered as an anchor; register every function of the user's file so that an op
    maps to the innermost line in that file (helpers and plain-function entries included)."""
    try:
        from torch.fx import proxy
        anchors = proxy._STACK_TRACE_ANCHORS
    except (ImportError, AttributeError):
        return

    def visit(code: types.CodeType) -> None:
        if os.path.realpath(code.co_filename) != path:
            return
        anchors.add((code.co_filename, code.co_name))
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                visit(const)

    def visit_obj(obj: Any, depth: int = 0) -> None:
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType):
            visit(code)
        elif isinstance(obj, type) and depth < 3:
            for v in vars(obj).values():
                visit_obj(v, depth + 1)

    for v in list(vars(module).values()):
        visit_obj(v)


def _spec_tensor(spec: TensorSpec, device: str) -> Any:
    if spec.scalar is not None or spec.dtype in ("int", "float"):
        return spec.scalar
    dtype = getattr(torch, spec.dtype)
    if dtype.is_floating_point:
        return torch.randn(spec.shape, dtype=dtype, device=device) if device != "meta" else torch.empty(
            spec.shape, dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.rand(spec.shape, device=device) > 0.5 if device != "meta" else torch.empty(
            spec.shape, dtype=dtype, device=device)
    if device == "meta":
        return torch.empty(spec.shape, dtype=dtype, device=device)
    return torch.randint(0, 8, spec.shape, dtype=dtype, device=device)


def _function_module(fn: Any) -> torch.nn.Module:
    """Wrap a function so that it *is* the forward: export then records its own frames."""
    cls = type(f"solar_fn_{getattr(fn, '__name__', 'fn')}", (torch.nn.Module,),
               {"forward": staticmethod(fn)})
    return cls()


def build(module: types.ModuleType, entry: Entry, path: str, device: str = "meta",
          seed: int = 0, notes: list[dict] | None = None,
          lazy_bytes: int | None = None) -> tuple[torch.nn.Module, tuple]:
    """Instantiate the entry's module and inputs on ``device`` ("meta" for analysis, "cpu" for
    verification; frontend/torch/devices.py says how small tensors keep their values and
    where GPU requests go). ``notes``, when given, gets one note per GPU device the code
    asked for (EntryReport.notes). ``lazy_bytes`` (a CPU build for the golden run): the
    model's parameters of that size or more are left on meta, for the golden run to draw at
    their first use, when nothing else of the model's state depends on their values (else the
    model is built in full, as without it)."""
    path = os.path.realpath(path)
    if lazy_bytes is not None and device == "cpu":
        lazy = _build_lazy(module, entry, path, seed, lazy_bytes)
        if lazy is not None:
            return lazy
    torch.manual_seed(seed)
    # a real GPU (`solar headroom --device cuda`) takes the code as it is
    where = torch.device(device) if device not in ("meta", "cpu") else build_devices(device, path)
    try:
        with where:
            model, inputs = _instantiate(module, entry, device)
    except Exception as exc:
        raise EntryError("build", f"building the entry failed: {type(exc).__name__}: {exc}"
                         + _hint(exc, device), user_line(exc, path)) from exc
    if not isinstance(model, torch.nn.Module):
        raise EntryError("build", f"{entry.name} did not produce a torch.nn.Module")
    model.eval()
    if device == "meta":  # small tensors were built on the CPU (devices.py): shapes only now
        model = model.to("meta")
        _attributes_to_meta(model)
        inputs = [to_meta(t) for t in inputs]
    if notes is not None and isinstance(where, DeviceMap):
        notes.extend(where.notes())
    return model, tuple(inputs)


def _build_lazy(module: types.ModuleType, entry: Entry, path: str, seed: int,
                lazy_bytes: int) -> tuple[torch.nn.Module, tuple] | None:
    """The model with its large tensors on meta (devices.DeviceMap ``lazy_bytes``) and the
    inputs built in full; None when that fails or leaves on meta anything but a float
    parameter (a buffer or attribute computed from a large tensor needs its values)."""
    torch.manual_seed(seed)
    try:
        with DeviceMap("cpu", path, lazy_bytes=lazy_bytes):
            model = _make_model(module, entry)
        with build_devices("cpu", path):
            inputs = _make_inputs(module, entry, "cpu")
    except Exception:  # noqa: BLE001 - the full build below says what is wrong, if anything
        return None
    if not isinstance(model, torch.nn.Module):
        return None
    params = {id(t) for t in model.parameters()}
    state = [*model.parameters(), *model.buffers(), *tensor_attributes(model).values(), *inputs]
    if any(isinstance(t, torch.Tensor) and t.device.type == "meta"
           and (id(t) not in params or not t.is_floating_point()) for t in state):
        return None
    model.eval()
    return model, tuple(inputs)


def _instantiate(module: types.ModuleType, entry: Entry, device: str) -> tuple[Any, list]:
    return _make_model(module, entry), _make_inputs(module, entry, device)


def _make_model(module: types.ModuleType, entry: Entry) -> Any:
    if entry.kind == "model":
        return getattr(module, entry.name)(*getattr(module, "get_init_inputs", lambda: [])())
    obj = getattr(module, entry.name)
    if entry.kind == "module" or isinstance(obj, type):
        return obj(*entry.init_args, **dict(entry.init_kwargs))
    return _function_module(obj)


def _make_inputs(module: types.ModuleType, entry: Entry, device: str) -> list:
    if entry.kind == "model":
        return list(module.get_inputs())
    return [_spec_tensor(s, device) for s in entry.inputs or ()]


def _hint(exc: Exception, device: str) -> str:
    """What the user can do about a build failure caused by how solar builds."""
    text = str(exc)
    if device == "meta" and "meta" in text.lower():
        return (f" (analysis keeps the values of tensors up to {SMALL_BYTES >> 20} MiB, "
                f"{BUDGET_BYTES >> 20} MiB in all; a larger tensor, or one computed from it, "
                "has a shape only, and this line reads its values: compute them from Python "
                "numbers or a smaller tensor)")
    if "cuda" in text.lower() and device in ("meta", "cpu"):
        return " (solar runs the code without a GPU: GPU-only calls cannot be analyzed)"
    return ""


def _attributes_to_meta(model: torch.nn.Module) -> None:
    """Plain tensor attributes (not parameters or buffers, which ``.to`` moves) to meta,
    directly or in a list, tuple or dict."""
    for m in model.modules():
        for k, v in list(vars(m).items()):
            if k not in _MODULE_STATE:
                m.__dict__[k] = to_meta(v)


_MODULE_STATE = frozenset(vars(torch.nn.Module()))  # _parameters, _buffers, _modules, hooks
