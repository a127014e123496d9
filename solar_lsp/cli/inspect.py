"""``solar graph`` and ``solar ir``: the einsum graph and the Affine Loop IR of each entry."""

from __future__ import annotations

from rich.console import Console

from solar_lsp.bounds.einsum_graph import to_dot
from solar_lsp.ir.text import print_program


def graph_command(report, args, err: Console) -> int:
    """Each entry's einsum graph: a node list, or Graphviz text with ``--dot``."""
    texts = []
    for e in report.entries:
        g = getattr(e, "einsum_graph", None)
        if g is None:
            err.print(f"[red]error:[/red] {e.name}: {e.error}")
            continue
        if args.dot:
            texts.append(to_dot(g))
        else:
            texts.append(f"{e.name}: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges")
            for n, d in g.nodes(data=True):
                if d["kind"] == "einsum":
                    texts.append(f"  {n}: {d['einsum']}  [{d['unit']}]")
    text = "\n".join(texts)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0 if report.ok else 1


def ir_command(report) -> int:
    """Each entry's IR in its text form (a failed entry prints its error as a comment)."""
    for e in report.entries:
        p = getattr(e, "program", None)
        if p is None:
            print(f"# {e.name}: {e.error}")
            continue
        print(print_program(p))
    return 0 if report.ok else 1
