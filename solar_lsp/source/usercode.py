"""The user's own modules among those loaded: what an analysis depends on beyond the analyzed
file (its sibling modules and their imports), for cache keys and for unloading between jobs."""

from __future__ import annotations

import contextlib
import hashlib
import os
import site
import sys


def library_roots() -> tuple[str, ...]:
    """Where installed code lives: the interpreter's prefixes, site-packages and this package."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}  # solar_lsp/
    with contextlib.suppress(AttributeError):
        roots.update(site.getsitepackages())
    with contextlib.suppress(AttributeError):
        roots.add(site.getusersitepackages())
    return tuple(os.path.realpath(r) + os.sep for r in roots if r)


def user_modules() -> dict[str, str]:
    """Loaded modules whose source is the user's own code: a ``.py`` file outside the
    interpreter, site-packages and solar_lsp (the analyzed file, its siblings, their imports)."""
    roots = library_roots()
    out = {}
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        # relative names (torch._classes says "_classes.py") are not files of the user's, and
        # solar's own generated numba kernels are not either
        if not isinstance(f, str) or not f.endswith(".py") or not os.path.isabs(f) \
                or name.startswith("solar_kernel_"):
            continue
        real = os.path.realpath(f)
        if not real.startswith(roots):
            out[name] = real
    return out


def user_module_files() -> list[str]:
    """Source files of the user's modules loaded now."""
    return sorted(set(user_modules().values()))


def forget_user_modules() -> None:
    """Drop the user's modules after a job so that the next one imports the edited files,
    the way a fresh ``python model.py`` would; torch and the engine stay warm."""
    for name in user_modules():
        sys.modules.pop(name, None)


def sources_digest(path: str) -> str:
    """A digest of the loaded user modules beside or below the analyzed file ``path`` (path
    and bytes; the file itself left out): changes when a module it imports from its own
    project is edited."""
    h = hashlib.sha256()
    skip = os.path.realpath(path)
    root = os.path.dirname(skip) + os.sep
    for f in user_module_files():
        if f == skip or not f.startswith(root):
            continue
        h.update(f.encode() + b"\0")
        try:
            with open(f, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()
