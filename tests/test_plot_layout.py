"""The roofline figure as a reader sees it (issue 18): rendered to PNG, no two labels overlap,
each unit keeps one color in every panel, and no fidelity marker hides under another."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import pytest
from conftest import analyzed, example_path
from matplotlib.colors import to_hex
from matplotlib.transforms import Affine2D, Bbox

from solar_lsp.hardware.chips import load_chips
from solar_lsp.pipeline.plot import roofline_figure

# T4 has no bf16 matrix path, so its panel has other roofs than the H100's and Thor's.
CHIPS = ("t4", "h100-sxm", "jetson-thor")
EXAMPLES = ("pragma_functions.py", "transformer_block.py", "resnet_block.py")  # long op names


@pytest.fixture(scope="module", params=EXAMPLES)
def drawn(request, tmp_path_factory):
    """(figure, renderer, report) of an example drawn on CHIPS and saved as a PNG."""
    report = analyzed(example_path(request.param), hw=CHIPS)
    fig = roofline_figure(report, load_chips(CHIPS))
    out = tmp_path_factory.mktemp("roofline") / "roofline.png"
    fig.savefig(out)
    assert out.read_bytes()[:4] == b"\x89PNG"
    yield fig, fig.canvas.get_renderer(), report
    plt.close(fig)


def op_labels(ax) -> list:
    return [t for t in ax.texts if (t.get_gid() or "").startswith("label ")]


def marker_box(coll, renderer) -> Bbox:
    """Display box of a one-point scatter's marker: ``s`` is the marker box's area in points²."""
    side = coll.get_sizes()[0] ** 0.5 * renderer.points_to_pixels(1.0)
    x, y = coll.get_offset_transform().transform(coll.get_offsets()[0])
    return coll.get_paths()[0].get_extents().transformed(Affine2D().scale(side).translate(x, y))


def fidelity_markers(ax) -> list:
    return [c for c in ax.collections if (c.get_gid() or "").startswith("fidelity ")]


def test_no_label_overlaps_another_text(drawn):
    fig, renderer, report = drawn
    fixed = list(fig.texts)  # the suptitle
    labels = []
    for ax in fig.axes:
        labels += op_labels(ax)
        fixed += [ax.title, ax.xaxis.label, ax.yaxis.label, ax.get_legend()]
        fixed += [t for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
    assert len(boxes) >= 4
    for (a, ba), (b, bb) in itertools.combinations(boxes, 2):
        assert not ba.overlaps(bb), f"{a!r} overlaps {b!r}"
    for text, box in boxes:
        for other in fixed:
            assert not box.overlaps(other.get_window_extent(renderer)), (text, other)
        assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1), text
    for ax in fig.axes:  # every op point still has its label
        ops = {c.get_gid().split()[-1] for c in ax.collections if (c.get_gid() or "").startswith("op ")}
        said = " ".join(t.get_text() for t in op_labels(ax))
        assert ops and all(f"{op} (line" in said for op in ops)


def test_each_unit_has_one_color_in_every_panel(drawn):
    fig, _, _ = drawn
    colors: dict[str, set[str]] = {}
    roof_sets = []
    for ax, chip in zip(fig.axes, load_chips(CHIPS)):
        roofs = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("roof ")]
        roof_sets.append({ln.get_gid() for ln in roofs})
        assert "roof dram" in roof_sets[-1]
        for ln in roofs:
            unit = ln.get_gid().split()[1]
            colors.setdefault(unit, set()).add(to_hex(ln.get_color()))
            if unit == "matrix":  # a matrix roof only where the chip has that matrix path
                assert not chip.lacks("matrix", ln.get_gid().split()[2]), (chip.name, ln.get_gid())
        for c in ax.collections:  # the ring of an op bound by a unit is that unit's roof color
            if (c.get_label() or "").startswith("op bound by "):
                unit = c.get_label().split()[-1].lower()
                colors.setdefault(unit, set()).add(to_hex(c.get_edgecolor()[0]))
    assert all(len(v) == 1 for v in colors.values()), colors
    assert len({next(iter(v)) for v in colors.values()}) == len(colors), colors
    assert {"dram", "vector"} <= set(colors)
    if drawn[2].file.endswith("pragma_functions.py"):
        assert len({frozenset(s) for s in roof_sets}) > 1  # panels differ, colors do not


def test_no_fidelity_marker_hides_under_another(drawn):
    fig, renderer, report = drawn
    entries = [e for e in report.entries if e.status == "ok"]
    for ax in fig.axes:
        order = {id(a): i for i, a in enumerate(ax.get_children())}  # drawn later: on top
        markers = fidelity_markers(ax)
        assert len(markers) == 3 * len(entries)
        above_all = markers + op_labels(ax)
        for m in markers:
            box = marker_box(m, renderer)
            for other in above_all:
                if other is m or (other.get_zorder(), order[id(other)]) < (m.get_zorder(), order[id(m)]):
                    continue
                ob = marker_box(other, renderer) if other in markers else other.get_window_extent(renderer)
                covered = ob.x0 <= box.x0 and ob.x1 >= box.x1 and ob.y0 <= box.y0 and ob.y1 >= box.y1
                assert not covered, f"{m.get_gid()} is hidden under {other.get_gid()}"
