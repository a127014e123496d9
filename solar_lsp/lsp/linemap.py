"""Map line numbers of the text a result was computed on to the current text, so a hint
moves with an edit above it and is withheld on a line that changed."""

from __future__ import annotations

import difflib


def line_map(old: list[str], new: list[str]) -> dict[int, int]:
    """0-based old line -> 0-based new line, for lines that are unchanged."""
    if old == new:
        return {i: i for i in range(len(old))}
    out: dict[int, int] = {}
    sm = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, _j2 in sm.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                out[i1 + k] = j1 + k
    return out
