"""Contraction reordering: chains of contractions whose written order costs more FLOPs than the
best one (matmul chains, einsums of three or more operands, low-rank and MLA-style projections
that can be absorbed).

A chain is a tree of pure contraction kernels (``out += a * b``, no bias, no epilogue) where
each intermediate is read by exactly one other kernel of the chain and by nothing else, through
views that keep every dimension whole. The chain is rewritten as one einsum over its leaf
operands; opt_einsum finds the cheapest pairwise order, and both orders are counted the way the
einsum graph counts (2 FLOPs per point of each pairwise iteration space).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import opt_einsum

from solar_lsp.bounds.viewmap import ViewMap
from solar_lsp.ir.core import Call, Kernel, Load, Program, loads

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class Chain:
    """A tree of contractions rewritable as one einsum over its leaf operands."""

    kernels: list[tuple[str, Kernel]]  # (op id, kernel), producers first
    operands: list[tuple[str, str]]  # (name, subscripts) of the leaf operands
    output: str
    sizes: dict[str, int]
    lines: list[int]
    flops_before: int  # of all runs (a loop body's chain runs ``repeat`` times)
    repeat: int = 1


def _pure(k: Kernel) -> bool:
    e = k.expr
    return (k.op == "+=" and k.init == "identity" and not k.guards and isinstance(e, Call)
            and e.fn == "mul" and len(e.args) == 2 and all(isinstance(a, Load) for a in e.args)
            and all(_plainvar(a, k) is not None for a in k.out.index)
            and all(_plainvar(x, k) is not None for a in e.args for x in a.index))


def _plainvar(a, k: Kernel) -> str | None:
    """The loop variable of a plain index position, "" for a size-1 position, else None."""
    ext = dict(k.loops)
    t = [(v, c) for v, c in a.terms if c and ext.get(v, 1) > 1]
    if not t:
        return "" if a.const == 0 else None
    if len(t) == 1 and t[0][1] == 1 and a.const == 0:
        return t[0][0]
    return None


def find_chains(p: Program) -> list[Chain]:
    """Trees of pure contraction kernels joined by single-use intermediates."""
    vm = ViewMap(p)
    kern: list[tuple[str, Kernel, int | None]] = []
    repeat: list[int] = []
    for op in p.ops:
        for k in op.kernels:
            kern.append((op.id, k, op.line))
            repeat.append(getattr(op, "repeat", 1))
    uses: dict[str, int] = {}
    for op in p.ops:
        if op.kind == "view":
            continue
        for k in op.kernels:
            for ld in loads(k.expr):
                b = p.base(ld.tensor)
                uses[b] = uses.get(b, 0) + 1
        for t in op.inputs if op.kind != "compute" else ():
            b = p.base(t)
            uses[b] = uses.get(b, 0) + 1
    outs = {p.base(t) for t in p.outputs}
    writer = {}
    for i, (_, k, _) in enumerate(kern):
        writer.setdefault(k.out.tensor, []).append(i)
    pure = {i for i, (_, k, _) in enumerate(kern) if _pure(k) and len(writer[k.out.tensor]) == 1}
    # parent[i] = the kernel that consumes kernel i's output as one operand
    feeds: dict[int, tuple[int, Load]] = {}
    for j in pure:
        _, kj, _ = kern[j]
        for ld in kj.expr.args:
            b = p.base(ld.tensor)
            src = writer.get(b)
            if not src or len(src) != 1 or src[0] not in pure or b in outs or uses.get(b) != 1:
                continue
            if repeat[src[0]] != repeat[j]:
                continue
            m = vm.to_base(ld.tensor, ld.index)
            if m is None or not all(_plainvar(a, kj) is not None for a in m[1]):
                continue
            feeds[src[0]] = (j, ld)
    roots = {j for _, (j, _) in feeds.items()} - set(feeds)
    chains = []
    for r in sorted(roots):
        members = _subtree(r, feeds)
        if len(members) >= 2:
            c = _combine(p, vm, kern, members, r, feeds)
            if c is not None:
                c.repeat = repeat[r]
                c.flops_before *= c.repeat
                chains.append(c)
    return chains


def _subtree(r: int, feeds: dict[int, tuple[int, Load]]) -> list[int]:
    out = [r]
    frontier = [r]
    while frontier:
        x = frontier.pop()
        for child, (parent, _) in feeds.items():
            if parent == x:
                out.append(child)
                frontier.append(child)
    return sorted(out)


def _combine(p: Program, vm: ViewMap, kern, members: list[int], root: int, feeds) -> Chain | None:
    parent: dict[tuple[int, str], tuple[int, str]] = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    def union(a, b) -> None:
        parent[find(a)] = find(b)

    ext: dict[tuple[int, str], int] = {}
    for i in members:
        for v, n in kern[i][1].loops:
            if n > 1:
                ext[(i, v)] = n
                find((i, v))
    for child in members:
        if child == root:
            continue
        j, ld = feeds[child]
        kc, kj = kern[child][1], kern[j][1]
        _, bidx = vm.to_base(ld.tensor, ld.index)
        for pe, ce in zip(kc.out.index, bidx):
            pv, cv = _plainvar(pe, kc), _plainvar(ce, kj)
            if pv and cv:
                if ext[(child, pv)] != ext[(j, cv)]:
                    return None
                union((child, pv), (j, cv))
            elif pv or cv:
                return None
    letters: dict = {}
    sizes: dict[str, int] = {}
    for key, n in ext.items():
        r = find(key)
        if r not in letters:
            if len(letters) >= len(LETTERS):
                return None
            letters[r] = LETTERS[len(letters)]
            sizes[letters[r]] = n

    def sub(i: int, index) -> str:
        k = kern[i][1]
        out = ""
        for a in index:
            v = _plainvar(a, k)
            if v:
                out += letters[find((i, v))]
        return out

    operands = _leaf_operands(p, vm, kern, members, root, sub)
    out = sub(root, kern[root][1].out.index)
    before = sum(2 * kern[i][1].points for i in members)
    lines = sorted({kern[i][2] for i in members if kern[i][2] is not None})
    return Chain([(kern[i][0], kern[i][1]) for i in members], operands, out, sizes, lines, before)


def _leaf_operands(p: Program, vm: ViewMap, kern, members: list[int], root: int,
                   sub) -> list[tuple[str, str]]:
    """(name, subscripts) of every operand of the chain not produced inside it, read through
    its views on the base tensor where they keep every dimension whole."""
    inner = {kern[c][1].out.tensor for c in members if c != root}
    operands = []
    for i in members:
        for ld in kern[i][1].expr.args:
            if p.base(ld.tensor) in inner:
                continue
            name, idx = ld.tensor, ld.index
            m = vm.to_base(ld.tensor, ld.index)
            if m is not None and all(_plainvar(a, kern[i][1]) is not None for a in m[1]):
                name, idx = m
            operands.append((name, sub(i, idx)))
    return operands


def path_flops(subs: list[str], out: str, sizes: dict[str, int], path) -> int:
    """FLOPs of a pairwise order (opt_einsum path format): 2 per point of each step's
    iteration space, as the einsum graph counts a contraction."""
    cur = list(subs)
    total = 0
    for step in path:
        picked = [cur[i] for i in step]
        for i in sorted(step, reverse=True):
            cur.pop(i)
        idx = set("".join(picked))
        total += 2 * math.prod(sizes[c] for c in idx)
        keep = set(out).union(*[set(s) for s in cur]) if cur else set(out)
        cur.append("".join(c for c in dict.fromkeys("".join(picked)) if c in keep))
    return total


def expression(names: list[str], subs: list[str], out: str, path, einsum: str = "torch.einsum") -> str:
    """Nested einsum calls (``torch.einsum``, or ``jnp.einsum`` for a JAX entry) that contract
    in ``path`` order."""
    cur = list(zip(names, subs))
    for n, step in enumerate(path):
        picked = [cur[i] for i in step]
        for i in sorted(step, reverse=True):
            cur.pop(i)
        last = n == len(path) - 1
        if last:
            res = out
        else:
            keep = set(out).union(*[set(s) for _, s in cur])
            res = "".join(c for c in dict.fromkeys("".join(s for _, s in picked)) if c in keep)
        eq = ",".join(s for _, s in picked) + "->" + res
        cur.append((f'{einsum}("{eq}", {", ".join(e for e, _ in picked)})', res))
    return cur[0][0]


def suggestions(p: Program, min_gain: float = 1e-6, einsum: str = "torch.einsum") -> list[dict]:
    """Chains whose best order saves FLOPs, as JSON items (``reorder`` of an entry)."""
    out = []
    for c in find_chains(p):
        subs = [s for _, s in c.operands]
        shapes = [tuple(c.sizes[ch] for ch in s) for s in subs]
        eq = ",".join(subs) + "->" + c.output
        strategy = "optimal" if len(subs) <= 8 else "dp"
        path, _ = opt_einsum.contract_path(eq, *shapes, shapes=True, optimize=strategy)
        after = path_flops(subs, c.output, c.sizes, path) * c.repeat
        if after >= c.flops_before * (1 - min_gain):
            continue
        names = [n for n, _ in c.operands]
        out.append({"line": c.lines[-1] if c.lines else None, "lines": c.lines,
                    "ops": list(dict.fromkeys(o for o, _ in c.kernels)),
                    "flops_before": c.flops_before, "flops_after": after,
                    "einsum": eq, "operands": names,
                    "expression": expression(names, subs, c.output, path, einsum)})
    out.sort(key=lambda r: r["flops_after"] - r["flops_before"])
    return out
