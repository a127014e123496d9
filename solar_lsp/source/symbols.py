"""Which module globals a project marks as shape symbols (``--symbol``, ``[tool.solar] symbols``).

Read from the text alone (pyproject.toml and the file's AST), so that the CLI and the server can
decide what to vary without importing sympy or running user code; pipeline/symbolic_costs.py
varies them (docs/sol-model.md, "Symbolic costs").
"""

from __future__ import annotations


def parse_symbols(values: list) -> dict[str, str]:
    """``--symbol GLOBAL[=NAME]`` values (or ``[tool.solar] symbols``: a list of globals or a
    table global -> name) as ``{global: symbol name}``; ValueError saying which is malformed."""
    values = [values] if isinstance(values, str) else values
    pairs = list(values.items()) if isinstance(values, dict) else [
        tuple(str(v).partition("=")[::2]) for v in values]
    out: dict[str, str] = {}
    for glob, name in pairs:
        glob, name = str(glob).strip(), str(name).strip() or str(glob).strip()
        if not glob.isidentifier() or not name.isidentifier():
            raise ValueError(f"symbol {glob}={name}: expected GLOBAL or GLOBAL=NAME (identifiers)")
        out[glob] = name
    return out


def pyproject_solar(file: str) -> dict:
    """``[tool.solar]`` of the nearest pyproject.toml at or above ``file`` ({} when none);
    ValueError naming the file when it does not parse."""
    import tomllib
    from pathlib import Path
    folder = Path(file).resolve().parent
    for d in [folder, *folder.parents]:
        if (d / "pyproject.toml").is_file():
            try:
                with open(d / "pyproject.toml", "rb") as f:
                    return tomllib.load(f).get("tool", {}).get("solar", {})
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ValueError(f"{d / 'pyproject.toml'}: {exc}") from None
    return {}


def file_symbols(file: str, listed) -> dict[str, str]:
    """The project's ``symbols`` list (``[tool.solar] symbols``: globals, or a table global ->
    name) as ``{global: symbol name}``, kept to the globals ``file`` assigns at module level: the
    list is project-wide, so a file without ``dim`` is analyzed without that symbol."""
    import ast
    from pathlib import Path
    try:
        symbols = parse_symbols(listed or [])
    except ValueError as exc:
        raise ValueError(f"[tool.solar] {exc}") from None
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return symbols  # the analysis reports it
    assigned = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    return {g: s for g, s in symbols.items() if g in assigned}
