"""Where the tensors of the user's code live while an entry is built or traced
(docs/architecture.md §2, "Building the entry").

Two things the user's code may ask for that this machine cannot, or should not, give:

- **A GPU.** ``device="cuda"``, ``torch.device("cuda:0")``, ``.cuda()``, ``.to("cuda")`` or
  ``.to(device)``: the tensor stays on the device the build is for (meta or CPU for analysis,
  the CPU for verification). The bounds are for the chip chosen with ``--hw`` anyway.
- **Values during analysis.** Analysis runs on meta tensors (no memory, no values), yet
  ``__init__`` often reads values: stochastic-depth rates (``x.item() for x in
  torch.linspace(...)``), relative-position tables built with ``arange``/``meshgrid`` and
  indexed, ``.tolist()``, ``.numpy()``. So, while the entry is built for analysis, a tensor
  of at most ``SMALL_BYTES`` is made on the CPU with its values, until ``BUDGET_BYTES`` of
  them exist; anything larger, or computed from a meta tensor, is made on meta. The build
  moves everything to meta afterwards (frontend/torch/build.py); only shapes reach the trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from solar_lsp.frontend.errors import stack_line
from solar_lsp.frontend.torch.metatrace import without_dynamo_import

SMALL_BYTES = 1 << 20  # a tensor up to 1 MiB is built with its values during analysis
BUDGET_BYTES = 64 << 20  # all such tensors of one build together (then meta only)

# every torch factory that takes ``device=`` (torch's own DeviceContext list, 2.13)
_FACTORIES = frozenset(f for f in (
    getattr(torch, n, None) for n in (
        "empty", "empty_permuted", "empty_strided", "ones", "zeros", "full", "arange", "range",
        "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm", "tensor",
        "as_tensor", "asarray", "scalar_tensor", "tril_indices", "triu_indices",
        "bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"))
    if f is not None) | {torch.fft.fftfreq, torch.fft.rfftfreq}
# Tensor methods answered without computing a new tensor: run as they are, never probed
_DIRECT = frozenset({
    "__get__", "__set__", "dim", "size", "numel", "nelement", "ndimension", "stride",
    "element_size", "is_floating_point", "is_complex", "is_contiguous", "storage_offset",
    "data_ptr", "untyped_storage", "item", "tolist", "numpy", "__bool__", "__int__",
    "__float__", "__index__", "__len__", "__repr__", "__format__", "__setitem__",
    "__iter__", "__reduce_ex__", "__deepcopy__"})
_MOVES = frozenset({"to", "cuda", "cpu", "pin_memory"})


def _is_move(func: Any) -> bool:
    return getattr(func, "__name__", "") in _MOVES and getattr(torch.Tensor, func.__name__, None) is func


def _device_type(d: Any) -> str | None:
    """The device type ``d`` names (a str, a torch.device, a bare index meaning a GPU)."""
    if isinstance(d, torch.device):
        return d.type
    if isinstance(d, str):
        try:
            return torch.device(d).type
        except RuntimeError:
            return None
    if isinstance(d, int) and not isinstance(d, bool):
        return "cuda"
    return None


def _tensors(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _tensors(x)]
    if isinstance(obj, dict):
        return [t for x in obj.values() for t in _tensors(x)]
    return []


def to_meta(obj: Any) -> Any:
    """``obj`` with every tensor in it (nested in lists, tuples, dicts) moved to meta; ``obj``
    itself when nothing in it needs to move."""
    if all(t.device.type == "meta" for t in _tensors(obj)):
        return obj
    if isinstance(obj, torch.Tensor):
        return obj if obj.device.type == "meta" else obj.to("meta")
    if isinstance(obj, (list, tuple)):
        out = [to_meta(x) for x in obj]
        return type(obj)(out) if type(obj) in (list, tuple) else type(obj)(*out)
    if isinstance(obj, dict):
        return {k: to_meta(v) for k, v in obj.items()}
    return obj


class LazyBuildRefused(Exception):
    """The user's code read or copied the values of a tensor a lazy build left on meta."""


def _nbytes(obj: Any) -> int:
    return sum(t.numel() * t.element_size() for t in _tensors(obj))


def _no_gpu_device() -> int:
    return 0


class DeviceMap(TorchFunctionMode):
    """Keep the user's tensors on ``target`` ("meta" or "cpu") whatever device the code names;
    with ``values``, build small tensors on the CPU with their values (module docstring).
    ``asked`` records each device the code named that was not used, with the user's line."""

    def __init__(self, target: str, path: str | None = None, values: bool = False,
                 lazy_bytes: int | None = None):
        super().__init__()
        self.target = target
        self.path = path
        self.values = values and target == "meta"
        # a CPU build for verification that makes every tensor of ``lazy_bytes`` or more, and
        # anything computed from one, on meta (verify/core.LAZY_BYTES): build.py keeps such a
        # build only when those are all parameters, which the golden run draws itself
        self.lazy = lazy_bytes if target == "cpu" else None
        self.asked: dict[str, int | None] = {}
        self._live: dict[int, int] = {}  # CPU storage -> bytes, for the budget
        self._total = 0

    def __enter__(self) -> DeviceMap:
        # a tensor subclass's own .cuda() (FunctionalTensor's, under a functionalizing
        # tracer) asks torch.cuda.current_device() before any torch function is called: on a
        # machine without a GPU it is answered with device 0, which ``_move`` then maps
        self._current_device = None
        if not torch.cuda.is_available():
            self._current_device = torch.cuda.current_device
            torch.cuda.current_device = _no_gpu_device
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._current_device is not None:
            torch.cuda.current_device = self._current_device
        super().__exit__(*exc)

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if _is_move(func):
            return self._move(func, args, kwargs)
        foreign = kwargs.get("device") is not None and self._foreign(kwargs["device"])
        if foreign:
            kwargs["device"] = None
        if kwargs.get("pin_memory"):
            kwargs["pin_memory"] = False
        if func in _FACTORIES and (foreign or self.values):
            return self._create(func, args, kwargs)
        if self.values:
            return self._compute(func, args, kwargs)
        if self.lazy is not None:
            return self._lazy(func, args, kwargs)
        return func(*args, **kwargs)

    def _lazy(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """A CPU build's op with large tensors left on meta (``lazy_bytes``): a large new
        tensor is made on meta, and so is what is computed from one; a value read from one, or
        an update of a CPU tensor from one, raises (build.py then builds for real)."""
        if func in _FACTORIES and not (kwargs.get("device") is not None
                                       and _device_type(kwargs["device"]) == "meta"):
            probe = func(*args, **{**kwargs, "device": "meta"})
            return probe if _nbytes(probe) >= self.lazy else func(*args, **kwargs)
        tensors = _tensors(args) + _tensors(kwargs)
        if not any(t.device.type == "meta" for t in tensors):
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if name in _DIRECT or (name.endswith("_") and not name.startswith("__")):
            if name in ("item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__") or (
                    first is not None and first.device.type != "meta") or name == "__setitem__":
                raise LazyBuildRefused(f"{name} reads the values of a large tensor")
            return func(*args, **kwargs)
        return func(*to_meta(args), **to_meta(kwargs))

    def _foreign(self, d: Any) -> bool:
        """Whether ``d`` is a device this build does not use (and note where the code asked)."""
        kind = _device_type(d)
        if kind is None or kind in ("cpu", "meta"):
            return False
        if kind not in self.asked:
            self.asked[kind] = None if self.path is None else stack_line(self.path)
        return True

    def _move(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """``.cuda()``, ``.pin_memory()``: the tensor itself; ``.to(device)`` and ``.cpu()``
        keep the tensor where the build put it; dtypes and copies are kept."""
        t, name = args[0], func.__name__
        if name in ("cuda", "pin_memory"):
            if name == "cuda":
                self._foreign("cuda")
            return t
        if name == "cpu":
            return t if self.target == "meta" else func(*args, **kwargs)
        rest = list(args[1:])
        for i, a in enumerate(rest):
            if isinstance(a, torch.Tensor) and self.target == "meta":
                rest[i:i + 1] = [t.device, a.dtype]
                break
            if isinstance(a, (str, torch.device)) or (i == 0 and _device_type(a) == "cuda"):
                rest[i] = self._where(t, a)
        if "device" in kwargs:
            kwargs["device"] = self._where(t, kwargs["device"])
        return func(t, *rest, **kwargs)

    def _where(self, t: torch.Tensor, d: Any) -> Any:
        if self._foreign(d) or (self.target == "meta" and _device_type(d) == "cpu"):
            return t.device
        return d

    def _create(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        if kwargs.get("device") is not None and _device_type(kwargs["device"]) == "meta":
            return func(*args, **kwargs)
        if not self.values:
            return func(*args, **{**kwargs, "device": self.target})
        probe = func(*args, **{**kwargs, "device": "meta"})
        if not self._fits(probe):
            return probe
        return self._count(func(*args, **{**kwargs, "device": "cpu"}))

    def _compute(self, func: Callable, args: tuple, kwargs: dict) -> Any:
        """An op while values are kept: on meta if any operand is (the others follow); on
        the CPU if its result is small and the budget allows, else on meta."""
        tensors = _tensors(args) + _tensors(kwargs)
        if all(t.device.type == "meta" for t in tensors):
            return func(*args, **kwargs)
        if any(t.device.type == "meta" for t in tensors):
            return func(*to_meta(args), **to_meta(kwargs))
        name = getattr(func, "__name__", "")
        if name in _DIRECT or (name.endswith("_") and not name.startswith("__")):
            return func(*args, **kwargs)  # metadata, values, in place: nothing new is made
        try:
            with without_dynamo_import():  # reference ops behind meta kernels would import it
                probe = func(*to_meta(args), **to_meta(kwargs))
        except Exception:  # no meta kernel, or the op reads values: run it on the CPU
            return self._count(func(*args, **kwargs))
        if _tensors(probe) and not self._fits(probe):
            return probe
        return self._count(func(*args, **kwargs))

    def _fits(self, probe: Any) -> bool:
        n = _nbytes(probe)
        return n <= SMALL_BYTES and self._total + n <= BUDGET_BYTES

    def _count(self, out: Any) -> Any:
        for t in _tensors(out):
            if t.device.type == "cpu":
                storage = t.untyped_storage()
                ptr, n = storage.data_ptr(), storage.nbytes()
                self._total += n - self._live.get(ptr, 0)
                self._live[ptr] = n
        return out

    def notes(self) -> list[dict]:
        """One note per device the code asked for and did not get (EntryReport.notes)."""
        where = {"meta": "meta tensors", "cpu": "the CPU"}[self.target]
        return [{"line": line, "kind": "device", "note": (
            f"the code asks for device {kind!r}; solar builds it on {where} instead (the "
            f"bounds are for the chips chosen with --hw, and verification runs on the CPU)")}
            for kind, line in self.asked.items()]


def device_map(target: str, path: str | None = None) -> DeviceMap:
    """A context in which tensors the code puts on a GPU (factories with ``device=``,
    ``.cuda()``, ``.to(...)``) stay on ``target``; for a traced forward or a golden run."""
    return DeviceMap(target, path)


def build_devices(device: str, path: str) -> DeviceMap:
    """The context the entry is built in for ``device``: "meta" (analysis: small tensors
    keep their values on the CPU) or "cpu" (verification); GPU requests mapped to those."""
    return DeviceMap(device, path, values=device == "meta")
