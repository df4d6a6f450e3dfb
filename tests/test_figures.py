"""Figure builders for the Data and Compare pages: the numbers drawn are the data's; the
projection style of a figure from every figure module."""

import json

import numpy as np
import pandas as pd
import pytest

from engine.data import load_bundled, make_dataset
from engine.figures.compare import cv_summary_figure
from engine.figures.data import feature_distribution_figure, target_distribution_figure


def _ds(name):
    df, _, entry = load_bundled(name)
    return make_dataset(df, entry["target"], missing="drop")


def test_class_histograms_partition_the_feature():
    ds = _ds("iris")
    fig = feature_distribution_figure(ds, "petal length (cm)")
    assert [t.name for t in fig.data] == list(ds.classes_)
    j = ds.feature_names.index("petal length (cm)")
    # bin counts, not rows, are drawn: each class's bars count its rows in shared bins
    x = ds.X[:, j]
    edges = np.linspace(x.min(), x.max(), 31)
    for k, trace in enumerate(fig.data):
        expected, _ = np.histogram(x[ds.y == k], bins=edges)
        np.testing.assert_array_equal(trace.y, expected)
        np.testing.assert_allclose(trace.x, (edges[:-1] + edges[1:]) / 2)
        np.testing.assert_allclose(trace.width, np.diff(edges))
    assert sum(int(np.sum(t.y)) for t in fig.data) == ds.n_samples
    assert fig.layout.title.text and fig.layout.xaxis.title.text == "petal length (cm)"
    assert fig.layout.yaxis.title.text == "rows (count)"


def test_categorical_feature_counts_use_labels():
    ds = _ds("penguins")
    fig = feature_distribution_figure(ds, "island")
    j = ds.feature_names.index("island")
    labels = ds.categories[j]
    assert list(fig.data[0].x) == list(labels)
    total = np.sum([np.asarray(t.y) for t in fig.data], axis=0)
    np.testing.assert_array_equal(total, np.bincount(ds.X[:, j].astype(int), minlength=len(labels)))


@pytest.mark.slow
def test_regression_scatter_and_target_histogram():
    ds = _ds("diabetes")
    fig = feature_distribution_figure(ds, 2)
    np.testing.assert_array_equal(fig.data[0].y, ds.y)
    hist = target_distribution_figure(ds)
    expected, _ = np.histogram(ds.y, bins=np.linspace(ds.y.min(), ds.y.max(), 41))
    np.testing.assert_array_equal(hist.data[0].y, expected)
    assert hist.layout.xaxis.title.text == ds.target


def test_class_count_bars():
    ds = _ds("wine")
    fig = target_distribution_figure(ds)
    np.testing.assert_array_equal(fig.data[0].y, np.bincount(ds.y))
    assert list(fig.data[0].x) == [str(c) for c in ds.classes_]


def test_cv_summary_has_one_panel_per_metric():
    summary = pd.DataFrame(
        {
            "model": ["A", "B"],
            "folds": [5, 5],
            "accuracy": [0.9, 0.8],
            "accuracy_std": [0.01, 0.02],
            "log_loss": [0.3, 0.5],
            "log_loss_std": [0.1, 0.1],
            "fit_seconds": [0.1, 1.0],
            "n_leaves": [8, 800],
            "depth": [3, 9],
        }
    )
    fig = cv_summary_figure(summary, "classification")
    axes = {(t.xaxis, t.yaxis) for t in fig.data}
    assert len(axes) == 4  # accuracy, log-loss, fit time, leaves in separate panels
    acc = [t for t in fig.data if t.yaxis == "y"]
    assert [t.y[0] for t in acc] == [0.9, 0.8]
    assert [t.name for t in fig.data if t.showlegend] == ["A", "B"]


def test_many_classes_put_the_legend_beside_the_plot():
    """17 classes wrap a top legend onto three rows, over the title: it goes to the right."""
    df, _, _ = load_bundled("digits")
    ds = make_dataset(df, "pixel_3_3", task="classification")
    assert ds.n_classes > 10
    fig = feature_distribution_figure(ds, "pixel_0_1")
    assert fig.layout.legend.orientation == "v" and fig.layout.legend.x > 1
    assert len([t for t in fig.data if t.showlegend is not False]) == ds.n_classes
    few = feature_distribution_figure(_ds("iris"), 0)
    assert few.layout.legend.orientation == "h"


def test_unknown_feature_name_is_a_keyerror():
    import pytest

    with pytest.raises(KeyError, match="no feature 'nope'"):
        feature_distribution_figure(_ds("iris"), "nope")


def test_pit_histogram_bars_are_densities_with_a_uniform_reference():
    from engine.figures.partition import pit_figure
    from engine.partition.scoring import pit_histogram

    rng = np.random.RandomState(0)
    a, b = rng.rand(400), rng.beta(4, 4, 300)  # calibrated / too wide a predictive
    fig = pit_figure({"model a": pit_histogram(a, 10), "model b": pit_histogram(b, 10)})
    bars = [d for d in fig.data if d.type == "bar"]
    assert [d.name for d in bars] == ["model a", "model b"]
    for d, u in zip(bars, (a, b), strict=True):
        counts, _ = np.histogram(u, bins=np.linspace(0, 1, 11))
        np.testing.assert_allclose(d.y, counts / len(u) * 10)
        assert abs(np.sum(d.y) / 10 - 1.0) < 1e-12  # a density on [0, 1]
    line = [d for d in fig.data if d.type == "scatter"][0]
    assert list(line.y) == [1.0, 1.0] and line.name.startswith("uniform")
    assert fig.layout.title.text.startswith("PIT histogram")
    assert "PIT value" in fig.layout.xaxis.title.text
    assert "density" in fig.layout.yaxis.title.text


# -- projection mode ---------------------------------------------------------------------------
def _line_width(trace):
    line = getattr(trace, "line", None)
    if line is None or "width" not in line:
        return None
    return line.width if line.width is not None else 2.0  # plotly's default scatter line


def _marker_sizes(trace):
    marker = getattr(trace, "marker", None)
    if trace.type not in ("scatter", "scattergl") or marker is None or marker.size is None:
        return None
    return np.atleast_1d(np.asarray(marker.size, dtype=float))


def _projection_figures():
    """One real figure from each module of engine.figures (the figures the pages draw)."""
    from sklearn.datasets import load_iris
    from sklearn.tree import DecisionTreeClassifier

    from engine.cit.report import rankings_table
    from engine.figures.cit import rankings_figure
    from engine.figures.literati import gap_figure
    from engine.figures.partition import pit_figure
    from engine.figures.splits import strategy_tradeoff_figure
    from engine.figures.teaching import split_preview_figure
    from engine.figures.tree import tree_figure
    from engine.figures.treegrad import kendall_figure
    from engine.partition.scoring import pit_histogram
    from engine.tree import from_sklearn

    X, y = load_iris(return_X_y=True)
    tree = from_sklearn(DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y))
    summary = pd.DataFrame(
        {
            "model": ["A", "B"],
            "folds": [5, 5],
            "accuracy": [0.9, 0.8],
            "accuracy_std": [0.01, 0.02],
            "log_loss": [0.3, 0.4],
            "log_loss_std": [0.05, 0.04],
            "fit_seconds": [0.02, 0.005],
            "candidates": [5000, 300],
            "n_leaves": [8, 6],
            "depth": [3, 3],
        }
    )
    trace = pd.DataFrame(
        {
            "time": [0.001, 0.01, 0.1, 1.0],
            "ub": [30.0, 20.0, 12.0, 12.0],
            "lb": [2.0, 6.0, 10.0, 12.0],
            "event": ["incumbent", "incumbent", "incumbent", "optimal"],
        }
    )
    rng = np.random.default_rng(0)
    tau = pd.DataFrame([[1.0, 0.5], [0.5, 1.0]], index=["a", "b"], columns=["a", "b"])
    return {
        "data": feature_distribution_figure(_ds("iris"), "petal length (cm)"),
        "compare": cv_summary_figure(summary, "classification", 5),
        "tree": tree_figure(tree),
        "treegrad": kendall_figure(tau),
        "cit": rankings_figure(
            rankings_table({"a": [2.0, 1.0], "b": [1, 3]}, ["f0", "f1"]), ["a", "b"]
        ),
        "partition": pit_figure({"model": pit_histogram(rng.uniform(size=200), 10)}),
        "splits": strategy_tradeoff_figure(summary, "classification"),
        "literati": gap_figure(trace, time_limit=10),
        "teaching": split_preview_figure(
            np.linspace(0.0, 1.0, 6),
            np.array([[3, 2, 1, 0, 0], [0, 1, 2, 3, 4]]),
            0.5,
            feature_name="x",
            class_names=["a", "b"],
            curve_thresholds=np.array([0.2, 0.4, 0.6]),
            curve_gains=np.array([0.1, 0.3, 0.2]),
        ),
    }


@pytest.mark.slow  # builds every page's figures
def test_projection_style_enlarges_every_figure_module():
    from engine.figures.style import (
        PROJECTION_INK,
        PROJECTION_LINE_WIDTH,
        PROJECTION_TICK_SIZE,
        projection_style,
    )

    grown = set()
    for module, before in _projection_figures().items():
        kept = json.loads(before.to_json())
        after = projection_style(before)
        assert json.loads(before.to_json()) == kept, f"{module}: the figure given was changed"
        assert after.layout.font.size == 20 > (before.layout.font.size or 12), module
        assert after.layout.title.font.size >= 17, module
        axes = []
        after.for_each_xaxis(axes.append)
        after.for_each_yaxis(axes.append)
        shown = [a for a in axes if a.visible is not False]
        for axis in shown:
            assert axis.tickfont.size == PROJECTION_TICK_SIZE and axis.tickfont.color == (
                PROJECTION_INK
            ), module
            assert axis.ticks == "outside" and axis.linewidth == 2, module
        widened = 0
        for old, new in zip(before.data, after.data, strict=True):
            width = _line_width(old)
            if width:
                assert _line_width(new) >= max(2 * width, PROJECTION_LINE_WIDTH), (module, old.name)
                widened += 1
            sizes = _marker_sizes(old)
            if sizes is not None:
                expected = np.minimum(1.5 * sizes, sizes + 10)
                assert (_marker_sizes(new) >= expected - 1e-9).all(), (module, old.name)
                assert (_marker_sizes(new) >= 10).all(), (module, old.name)
            if "textfont" in old and old.textfont.size is not None:
                assert new.textfont.size >= 1.4 * old.textfont.size - 1e-9, (module, old.name)
        for old, new in zip(before.layout.annotations, after.layout.annotations, strict=True):
            # in-plot text 1.4 times, subplot titles 1.2 times (panels side by side)
            assert new.font.size >= max(1.2 * (old.font.size or 14), 15) - 1e-9, module
        if widened or any(_marker_sizes(t) is not None for t in before.data):
            grown.add(module)
    # the figures with lines or markers (trees, gap chart, trade-off, preview, PIT reference)
    assert {"tree", "literati", "splits", "teaching", "partition"} <= grown


def test_projection_style_darkens_grey_text_and_keeps_chosen_colours():
    import plotly.graph_objects as go

    from engine.figures.style import PROJECTION_INK, projection_style

    fig = go.Figure(
        go.Scatter(x=[1], y=[1], mode="text", text=["a"], textfont=dict(size=10, color="#222222"))
    )
    fig.add_heatmap(z=[[0.0, 1.0]], text=[["0", "1"]], texttemplate="%{text}")
    fig.add_annotation(text="n = 5", font=dict(size=11, color="#555555"))
    styled = projection_style(fig)
    assert styled.data[0].textfont.color == "#222222" and styled.data[0].textfont.size == 15
    assert styled.layout.annotations[0].font.color == PROJECTION_INK  # light grey darkened
    assert styled.layout.annotations[0].font.size == pytest.approx(15.4)
    # heatmap text: plotly's contrasting colour (no colour set), bounded to fit its cell
    assert styled.data[1].textfont.color is None
    assert styled.data[1].textfont.size == pytest.approx(13.8)


def test_projection_style_keeps_a_raised_legend_below_the_title():
    """Compare's legend sits above the panel titles (y = 1.1 of the plot): in projection mode
    the top margin holds the title, then the legend rows, then that raised gap, so the
    legend no longer covers the title (seen at 1280 x 720)."""
    import pandas as pd

    from engine.figures.compare import cv_summary_figure
    from engine.figures.style import _legend_rows, projection_style

    summary = pd.DataFrame(
        {
            "model": ["Decision tree (scikit-learn CART)", "Random forest (scikit-learn)"]
            + ["Gradient boosting (scikit-learn)"],
            "accuracy": [0.9, 0.95, 0.93],
            "accuracy_std": [0.02, 0.01, 0.03],
            "log_loss": [2.0, 0.1, 0.3],
            "log_loss_std": [1.0, 0.05, 0.1],
            "fit_seconds": [0.01, 1.2, 1.7],
            "n_leaves": [9, 700, 1900],
            "folds": [5, 5, 5],
        }
    )
    fig = projection_style(cv_summary_figure(summary, "classification", 5))
    layout = fig.layout
    plot_height = layout.height - layout.margin.t - layout.margin.b
    legend_bottom = (layout.legend.y - 1.0) * plot_height  # px above the plot's top
    rows = _legend_rows(fig)
    assert rows >= 1
    legend_top = legend_bottom + 28 * rows
    title_bottom = layout.margin.t - 24 - 1.45 * layout.title.font.size  # px above the plot
    assert legend_top <= title_bottom + 1e-6


def _cielab(hex_colour: str) -> tuple[float, float, float]:
    """sRGB hex -> CIELAB (D65), the standard formulas."""
    r, g, b = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t):
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


@pytest.mark.parametrize("n", [2, 3, 8, 10, 12])
def test_class_colours_stay_apart(n):
    """Every pair of the palette's n colours differs by at least 25 CIELAB units (digits'
    ten classes had a pair 14 apart: two light blues)."""
    import itertools
    import math

    from engine.figures.style import palette

    colours = palette(n)
    assert len(set(colours)) == n
    lab = [_cielab(c) for c in colours]
    assert min(math.dist(a, b) for a, b in itertools.combinations(lab, 2)) >= 25


def test_a_leaf_with_tied_classes_is_labelled_tie():
    """iris's depth-1 tree: the right leaf holds 50 versicolor and 50 virginica, so its label
    says "tie" (not "versicolor", which the argmax would pick), the left leaf "setosa"."""
    from sklearn.tree import DecisionTreeClassifier

    from engine.data import load_bundled, make_dataset
    from engine.figures.tree import tree_figure
    from engine.treegrad.service import as_treelab

    df, _, entry = load_bundled("iris")
    ds = make_dataset(df, entry["target"])
    tree = as_treelab(DecisionTreeClassifier(max_depth=1).fit(ds.X, ds.y))
    names = ["setosa", "versicolor", "virginica"]
    fig = tree_figure(tree, feature_names=ds.feature_names, class_names=names, show_labels=True)
    labels = [a.text for a in fig.layout.annotations]
    assert labels[1:] == ["setosa", "tie"], labels
    hover = [h for trace in fig.data for h in (trace.hovertext or ()) if "majority" in str(h)]
    assert any("a tie of versicolor, virginica" in h for h in hover)
    # the tied leaf is its own trace (legend "tie"), not versicolor's
    traces = {t.name: list(t.customdata) for t in fig.data if t.name and t.customdata is not None}
    assert traces["tie (classes equal)"] == [2] and traces["setosa"] == [1]
    assert "versicolor" not in traces
