"""Figure builders for the Data and Compare pages: the numbers drawn are the data's."""

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
    for k, trace in enumerate(fig.data):
        np.testing.assert_array_equal(trace.x, ds.X[ds.y == k, j])
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
    np.testing.assert_array_equal(hist.data[0].x, ds.y)
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
