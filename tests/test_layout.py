"""The package layout stays the pipeline: no import cycles, no upward imports, no private names
crossing modules, modules and functions short enough to read (docs/architecture.md)."""

from __future__ import annotations

import ast
import pathlib

import networkx as nx
import pytest

PKG = pathlib.Path(__file__).resolve().parent.parent / "solar_lsp"

# Lowest first. A module may import from its own package or from any package of a lower rank.
# Packages of equal rank must not import each other (frontend.torch / frontend.jax; cli / lsp).
RANKS: dict[str, int] = {
    "solar_lsp": 0, "solar_lsp.units": 0, "solar_lsp.defaults": 0,
    "solar_lsp.ir": 1,
    "solar_lsp.hardware": 2,
    "solar_lsp.source": 3,
    "solar_lsp.frontend": 4,
    "solar_lsp.frontend.torch": 5, "solar_lsp.frontend.jax": 5,
    "solar_lsp.bounds": 6,
    "solar_lsp.verify": 7,
    "solar_lsp.llm": 8,  # a frontend of last resort: writes IR, checked by verify/
    "solar_lsp.pipeline": 9,
    "solar_lsp.measure": 10,
    "solar_lsp.cli": 11, "solar_lsp.lsp": 11,
    "solar_lsp.server": 12,  # `python -m solar_lsp.server`: starts lsp.server, nothing else
}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        if "examples" in p.relative_to(PKG).parts:  # llm/examples: prompt text, sent verbatim
            continue
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _package(name: str) -> str:
    """The layer a module belongs to: the longest RANKS key that prefixes it."""
    best = ""
    for key in RANKS:
        if (name == key or name.startswith(key + ".")) and len(key) > len(best):
            best = key
    return best


def _imports(name: str, path: pathlib.Path) -> list[tuple[str, list[str], int]]:
    """(module imported, names taken from it, line) for every import, at any depth."""
    tree = ast.parse(path.read_text())
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            if not mod.startswith("solar_lsp"):
                continue
            names = [a.name for a in node.names]
            subs = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in MODULES]
            if subs:
                found += [(s, [], node.lineno) for s in subs]
                names = [n for n in names if f"{mod}.{n}" not in MODULES]
            if names or not subs:
                found.append((mod, names, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("solar_lsp")]
    return found


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for name, path in MODULES.items():
        g.add_node(name)
        for mod, _names, _line in _imports(name, path):
            if mod in MODULES and mod != name:
                g.add_edge(name, mod)
    return g


def test_every_module_has_a_layer():
    assert [m for m in MODULES if not _package(m)] == []


def test_no_import_cycles():
    g = _graph()
    # a package's __init__ importing its own modules is not a cycle of the pipeline
    g.remove_edges_from([(a, b) for a, b in g.edges if b.startswith(a + ".")])
    cycles = sorted(sorted(c) for c in nx.simple_cycles(g))
    assert cycles == []


def test_no_upward_or_sideways_imports():
    bad = []
    for name, path in MODULES.items():
        mine = _package(name)
        for mod, _names, line in _imports(name, path):
            theirs = _package(mod)
            if theirs == mine or (theirs and RANKS[theirs] < RANKS[mine]):
                continue
            bad.append(f"{path.relative_to(PKG.parent)}:{line} ({mine}) imports {mod} ({theirs})")
    assert bad == []


def test_no_private_names_across_modules():
    bad = []
    for name, path in MODULES.items():
        for mod, names, line in _imports(name, path):
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    bad.append(f"{path.relative_to(PKG.parent)}:{line} imports {mod}.{n}")
    assert bad == []


def test_jax_frontend_does_not_import_torch():
    """JAX-only analysis must not pay for (or need) torch."""
    bad = []
    for name, path in MODULES.items():
        if not name.startswith("solar_lsp.frontend.jax"):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                    else [])
            bad += [f"{name}:{node.lineno} {m}" for m in mods if m == "torch" or m.startswith("torch.")]
    assert bad == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_short(name):
    lines = MODULES[name].read_text().count("\n")
    assert lines <= MAX_MODULE_LINES, f"{name}: {lines} lines"


def test_functions_are_short():
    long = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {n} lines")
    assert long == []


def test_public_functions_have_docstrings():
    missing = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        if ast.get_docstring(tree) is None:
            missing.append(f"{name} (module)")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if not node.name.startswith("_") and ast.get_docstring(node) is None:
                    missing.append(f"{name}.{node.name}")
    assert missing == []


def test_no_reference_to_a_design_document_outside_the_repo():
    hits = [f"{p.relative_to(PKG.parent)}" for p in MODULES.values() if "DESIGN §" in p.read_text()]
    assert hits == []
