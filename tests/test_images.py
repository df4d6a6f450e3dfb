"""engine.images: PNG / SVG of figures through kaleido and Debian's Chromium (issue 16.4).

The tree test draws a 219-node tree at the size :func:`tree_image_size` picks and checks in
the SVG (where Chromium wrote the measured box of every label) that no two labels
overlap; the same tree squeezed into 1200 px overlaps, so the check can fail.
"""

import asyncio
import io
import re
import struct
import zipfile

import plotly.graph_objects as go
import pytest
from sklearn.datasets import make_classification
from sklearn.tree import DecisionTreeClassifier

from engine import images
from engine.figures.tree import tree_figure
from engine.images import (
    DEBIAN_CHROMIUM,
    browser_path,
    figure_image,
    figure_png,
    figure_svg,
    tree_image_size,
)
from engine.tree import from_sklearn

NAMES = [
    "petal length (cm)",
    "sepal width (cm)",
    "age",
    "income",
    "height",
    "x5",
    "colour code",
    "weight (kg)",
]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def svg_size(data: bytes) -> tuple[float, float]:
    head = data[:400].decode("utf-8")
    assert head.startswith("<svg")
    width = re.search(r'\bwidth="([\d.]+)"', head).group(1)
    height = re.search(r'\bheight="([\d.]+)"', head).group(1)
    return float(width), float(height)


def label_boxes(svg: bytes) -> list[tuple[float, float, float, float, str]]:
    """(x0, y0, x1, y1, text) of every annotation (the tree's node and edge labels)."""
    text = svg.decode("utf-8")
    pattern = re.compile(
        r'<g class="cursor-pointer" transform="translate\(([-\d.]+),([-\d.]+)\)">'
        r'<rect class="bg" x="[-\d.]+" y="[-\d.]+" width="([\d.]+)" height="([\d.]+)".*?'
        r'<text class="annotation-text"[^>]*>(.*?)</text>'
    )
    out = []
    for x, y, w, h, label in pattern.findall(text):
        x, y, w, h = float(x), float(y), float(w), float(h)
        out.append((x, y, x + w, y + h, label))
    return out


def overlaps(boxes) -> list[tuple[str, str]]:
    found = []
    ordered = sorted(boxes)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if b[0] >= a[2]:
                break
            if b[1] < a[3] and a[1] < b[3]:
                found.append((a[4], b[4]))
    return found


def test_the_browser_is_debians_chromium_unless_browser_path_says_otherwise(monkeypatch):
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    assert browser_path() == DEBIAN_CHROMIUM
    monkeypatch.setenv("BROWSER_PATH", "/opt/chrome/chrome")
    assert browser_path() == "/opt/chrome/chrome"


def test_bad_format_and_sizes_are_refused_before_rendering():
    fig = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]))
    with pytest.raises(ValueError, match="format must be one of"):
        figure_image(fig, "jpeg")
    with pytest.raises(ValueError, match="outside 16..16000 px"):
        figure_png(fig, width=20000, height=500)


def _big_tree():
    X, y = make_classification(2000, n_features=8, n_informative=6, random_state=0)
    model = DecisionTreeClassifier(max_leaf_nodes=110, random_state=0).fit(X, y)
    tree = from_sklearn(model)
    assert tree.node_count >= 200
    return tree


def test_tree_image_size_grows_with_the_tree():
    tree = _big_tree()
    width, height = tree_image_size(tree, feature_names=NAMES)
    assert width >= 60 * tree.n_leaves and height >= 140 * tree.max_depth
    small = DecisionTreeClassifier(max_depth=2, random_state=0).fit(
        [[0], [1], [2], [3]], [0, 1, 0, 1]
    )
    assert tree_image_size(from_sklearn(small)) == (900, 500)
    collapsed = tree_image_size(tree, feature_names=NAMES, collapse_depth=3)
    assert collapsed[0] < width and collapsed[1] == 220 + 140 * 3


@pytest.mark.slow
@pytest.mark.e2e
def test_png_and_svg_have_the_requested_size():
    fig = go.Figure(
        go.Bar(x=["a", "b", "c"], y=[3, 1, 2], name="counts"),
        layout={"title": "Counts per class", "xaxis_title": "class", "yaxis_title": "rows"},
    )
    png = figure_png(fig, width=640, height=400, scale=1)
    assert png_size(png) == (640, 400)
    assert png_size(figure_png(fig, width=640, height=400)) == (1280, 800)  # default scale 2
    svg = figure_svg(fig, width=640, height=400)
    assert svg_size(svg) == (640, 400)
    assert b"Counts per class" in svg and b"rows" in svg


@pytest.mark.slow
@pytest.mark.e2e
def test_a_200_node_tree_image_has_no_overlapping_labels(tmp_path):
    tree = _big_tree()
    width, height = tree_image_size(tree, feature_names=NAMES)
    fig = tree_figure(tree, feature_names=NAMES, show_labels=True, height=height, width=width)
    svg = figure_svg(fig, width=width, height=height)
    assert svg_size(svg) == (width, height)
    boxes = label_boxes(svg)
    assert len(boxes) == tree.node_count  # one label per node (rule or class)
    assert overlaps(boxes) == []
    assert all(0 <= b[0] and b[2] <= width and 0 <= b[1] and b[3] <= height for b in boxes)
    squeezed = label_boxes(figure_svg(fig, width=1200, height=height))
    assert len(overlaps(squeezed)) > 50  # the check sees overlaps when the size is too small
    png = figure_png(fig, width=width, height=height, scale=1)
    assert png_size(png) == (width, height)
    (tmp_path / "tree.png").write_bytes(png)


@pytest.mark.slow
@pytest.mark.e2e
def test_a_half_column_wine_tree_has_no_overlapping_labels():
    """The Split strategies and Compare pages draw two trees side by side, each about 420 px
    wide at 1280 px: the wine tree's node labels were placed for an 800 px plot and ran
    into each other ('class_2' into 'alcohol <= 13.18', 'class_1' into '+2 nodes').  With
    the width given they are staggered (or left to the hover) and none overlaps, in the
    measured boxes Chromium writes into the SVG."""
    from sklearn.datasets import load_wine

    data = load_wine()
    model = DecisionTreeClassifier(max_depth=5, random_state=0).fit(data.data, data.target)
    tree = from_sklearn(model)
    names = list(data.feature_names)
    width = 420
    old = tree_figure(tree, feature_names=names, collapse_depth=4)
    fig = tree_figure(tree, feature_names=names, collapse_depth=4, width=width)
    height = fig.layout.height
    before = label_boxes(figure_svg(old, width=width, height=old.layout.height))
    assert overlaps(before)  # the check sees the overlaps of the 800 px placement
    boxes = label_boxes(figure_svg(fig, width=width, height=height))
    assert overlaps(boxes) == []
    shown = {b[4] for b in boxes}
    assert len(shown) >= 0.8 * len({b[4] for b in before})  # staggered, few left out
    assert all(0 <= b[0] and b[2] <= width for b in boxes)
    # the wrapped legend (split node, three classes, collapsed subtree) has room above
    assert fig.layout.margin.t > old.layout.margin.t == 90


@pytest.mark.slow  # a browser session
@pytest.mark.skipif(browser_path() is None, reason="needs Chromium (apt-get install chromium)")
def test_figures_zip_renders_each_figure_and_lists_what_it_could_not():
    """One browser session for all figures: each is in the zip in order, at its own size;
    one too large is left out and problems.txt names it and why."""
    import io
    import zipfile

    from engine.images import figures_zip

    small = go.Figure(go.Scatter(x=[1, 2], y=[2, 1]), layout={"width": 400, "height": 300})
    other = go.Figure(go.Bar(x=["a", "b"], y=[1, 3]), layout={"width": 500, "height": 200})
    huge = go.Figure(layout={"width": 20_000, "height": 300})
    archive = zipfile.ZipFile(
        io.BytesIO(figures_zip([("Small / line", small), ("huge", huge), ("bars", other)]))
    )
    names = archive.namelist()
    assert names == ["01-small-line.png", "03-bars.png", "problems.txt"]
    assert png_size(archive.read(names[0])) == (800, 600)  # scale 2
    assert png_size(archive.read(names[1])) == (1000, 400)
    problems = archive.read("problems.txt").decode()
    assert "02-huge.png: image size 20000 x 300 px is outside" in problems
    assert archive.getinfo(names[0]).external_attr >> 16 == 0o644
    svgs = zipfile.ZipFile(io.BytesIO(figures_zip([("bars", other)], "svg")))
    assert svg_size(svgs.read("01-bars.svg")) == (500, 200)
    with pytest.raises(ValueError, match="no figure"):
        figures_zip([])


@pytest.mark.slow  # a browser session
@pytest.mark.skipif(browser_path() is None, reason="needs Chromium (apt-get install chromium)")
def test_a_render_past_its_deadline_closes_the_browser_and_leaves_no_thread(monkeypatch):
    """A render that hangs must end its thread (and so its browser) at the deadline, not
    keep running behind the page: the deadline is enforced inside the render's event loop."""
    import threading

    import kaleido

    async def hang(self, fig, opts=None, **kwargs):
        await asyncio.sleep(600)

    monkeypatch.setattr(images, "TIMEOUT", 1.0)
    monkeypatch.setattr(kaleido.Kaleido, "calc_fig", hang)
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    try:
        archive = images.figures_zip([("a", fig), ("b", fig)], "png")
    except images.ImageExportError as exc:  # the whole session's deadline came first
        assert "took more than" in str(exc)
    else:  # each figure's own deadline
        with zipfile.ZipFile(io.BytesIO(archive)) as opened:
            assert opened.namelist() == ["problems.txt"]
            assert opened.read("problems.txt").decode().count("took more than 1 s") == 2
    assert not [t for t in threading.enumerate() if t.name == "figure-images"]


@pytest.mark.slow  # waits for the deadline
@pytest.mark.skipif(browser_path() is None, reason="needs Chromium (apt-get install chromium)")
def test_a_browser_stopped_while_starting_at_the_deadline_is_reported_as_the_deadline(
    monkeypatch,
):
    """A browser still starting when the session's deadline cancels it raises its own
    "failed to start" error (as choreographer does under load); the message names the
    deadline, the cause, not a broken browser."""
    import kaleido

    async def slow_start(self):
        try:
            await asyncio.sleep(600)
        except asyncio.CancelledError:
            raise RuntimeError("The browser seemed to close immediately after starting.") from None

    monkeypatch.setattr(images, "TIMEOUT", 0.5)
    monkeypatch.setattr(kaleido.Kaleido, "__aenter__", slow_start)
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    with pytest.raises(images.ImageExportError, match="took more than"):
        images.figures_zip([("a", fig)], "png")


@pytest.mark.skipif(browser_path() is None, reason="needs Chromium (apt-get install chromium)")
def test_a_browser_that_fails_before_the_deadline_says_why(monkeypatch):
    """A start that fails at once keeps its own message (not called a timeout)."""
    import kaleido

    async def broken_start(self):
        raise RuntimeError("no display")

    monkeypatch.setattr(kaleido.Kaleido, "__aenter__", broken_start)
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    with pytest.raises(images.ImageExportError, match="no display") as caught:
        images.figures_zip([("a", fig)], "png")
    assert "took more than" not in str(caught.value)
