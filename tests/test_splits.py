"""engine/splits.py and engine/figures/splits.py: node rows, per-strategy profile, figures.

Oracles: scikit-learn's decision_path (rows at a node) and a direct numpy computation of the
Gini / squared-error impurity decrease.
"""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from engine.cart.candidates import STRATEGIES
from engine.cart.profile import node_mask, split_profile
from engine.data import load_bundled, make_dataset
from engine.figures.splits import (
    candidates_figure,
    gain_curve_figure,
    label_positions,
    strategy_tradeoff_figure,
    threshold_scan_figure,
)
from engine.tree import from_sklearn


def _ds(name):
    df, _, entry = load_bundled(name)
    return make_dataset(df, entry["target"], missing="drop")


def _gini_decrease(x, y, t, k):
    def gini(v):
        if v.size == 0:
            return 0.0
        p = np.bincount(v, minlength=k) / v.size
        return 1.0 - np.sum(p**2)

    left, right = y[x <= t], y[x > t]
    n = y.size
    return gini(y) - left.size / n * gini(left) - right.size / n * gini(right)


def test_node_mask_matches_sklearn_decision_path():
    ds = _ds("wine")
    clf = DecisionTreeClassifier(max_depth=4, random_state=0).fit(ds.X, ds.y)
    tree = from_sklearn(clf)
    paths = clf.decision_path(ds.X).toarray().astype(bool)
    for node in range(tree.node_count):
        np.testing.assert_array_equal(node_mask(tree, ds.X, node), paths[:, node])
    with pytest.raises(IndexError):
        node_mask(tree, ds.X, tree.node_count)


@pytest.mark.slow
def test_profile_gains_equal_direct_gini_and_root_optimum_is_reached():
    ds = _ds("iris")
    strategies = [s for s in STRATEGIES]
    for j in range(ds.n_features):
        prof = split_profile(
            ds.X, ds.y, j, strategies, task="classification", n_classes=3, random_state=0
        )
        # the curve is the exhaustive scan, computed directly
        direct = [_gini_decrease(prof.x, prof.y, t, 3) for t in prof.curve_thresholds]
        np.testing.assert_allclose(prof.curve_gains, direct, atol=1e-12)
        n_unique = np.unique(prof.x).size
        for s, r in prof.results.items():
            assert r.n_candidates <= n_unique - 1, s
            assert np.all(np.diff(r.thresholds) > 0), s
            np.testing.assert_allclose(
                r.gains, [_gini_decrease(prof.x, prof.y, t, 3) for t in r.thresholds], atol=1e-12
            )
        assert prof.results["exhaustive"].best_gain == pytest.approx(prof.best_gain)
    # docs/spec.md section 5: on iris every strategy reaches the exhaustive best root gain; the
    # profile must agree with the CART builder, including quantile's k=16 miss (see
    # tests/test_cart.py::test_quantile16_misses_the_iris_root_split_by_definition)
    best = max(
        split_profile(ds.X, ds.y, j, ["exhaustive"], task="classification", n_classes=3).best_gain
        for j in range(4)
    )
    assert best == pytest.approx(1 / 3)
    for s in strategies:
        k = 17 if s == "quantile" else None
        got = max(
            split_profile(
                ds.X, ds.y, j, [s], task="classification", n_classes=3, k=k, random_state=0
            )
            .results[s]
            .best_gain
            for j in range(4)
        )
        if s == "random":  # hits with probability 0.853 (tests/test_cart.py checks the rate)
            assert got <= best + 1e-12
            continue
        assert got == pytest.approx(best, abs=1e-12), s
    q16 = max(
        split_profile(ds.X, ds.y, j, ["quantile"], task="classification", n_classes=3)
        .results["quantile"]
        .best_gain
        for j in range(4)
    )
    assert q16 < best - 0.01


def test_regression_profile_uses_squared_error():
    ds = _ds("diabetes")
    prof = split_profile(ds.X, ds.y, 2, ["exhaustive", "quantile", "kde_valley"], task="regression")
    assert prof.criterion == "squared_error"
    x, y = prof.x, prof.y
    t = prof.results["quantile"].thresholds[3]
    left, right = y[x <= t], y[x > t]
    direct = y.var() - left.size / y.size * left.var() - right.size / y.size * right.var()
    assert prof.results["quantile"].gains[3] == pytest.approx(direct, rel=1e-9)
    with pytest.raises(ValueError):
        split_profile(ds.X, ds.y, 2, ["class_centroid"], task="regression")


@pytest.mark.slow
def test_constant_feature_and_tiny_node_give_no_candidates():
    X = np.column_stack([np.ones(6), np.arange(6.0)])
    y = np.array([0, 1, 0, 1, 0, 1])
    prof = split_profile(
        X, y, 0, ["exhaustive", "quantile", "kmeans1d"], task="classification", n_classes=2
    )
    assert all(r.n_candidates == 0 and np.isnan(r.best_gain) for r in prof.results.values())
    one = split_profile(
        X[:1], y[:1], 1, ["exhaustive", "random"], task="classification", n_classes=2
    )
    assert one.curve_thresholds.size == 0
    for fig in (candidates_figure(prof), gain_curve_figure(prof), threshold_scan_figure(prof)):
        assert fig.layout.title.text


@pytest.mark.slow
def test_figures_draw_the_profile():
    ds = _ds("iris")
    prof = split_profile(
        ds.X,
        ds.y,
        2,
        ["exhaustive", "quantile", "class_centroid"],
        task="classification",
        n_classes=3,
        feature_name="petal length (cm)",
    )
    names = [str(c) for c in ds.classes_]
    fig = candidates_figure(prof, class_names=names)
    assert [t.name for t in fig.data[:3]] == names
    q = next(t for t in fig.data if t.name and t.name.startswith("quantile"))
    np.testing.assert_array_equal(q.x, prof.results["quantile"].thresholds)
    assert fig.layout.xaxis2.title.text == "petal length (cm)"
    curve = gain_curve_figure(prof)
    np.testing.assert_array_equal(curve.data[0].x, prof.curve_thresholds)
    scan = threshold_scan_figure(prof, class_names=names, max_frames=20)
    assert 1 <= len(scan.frames) <= 20
    last = scan.frames[-1]
    assert last.data[0].x[0] == prof.curve_thresholds[-1]
    assert scan.layout.updatemenus[0].buttons[0].label.endswith("Play")


def test_tradeoff_figure_points():
    import pandas as pd

    summary = pd.DataFrame(
        {
            "model": ["CART / exhaustive", "CART / quantile"],
            "fit_seconds": [0.02, 0.005],
            "accuracy": [0.93, 0.92],
            "accuracy_std": [0.01, 0.02],
            "candidates": [5000, 300],
        }
    )
    fig = strategy_tradeoff_figure(summary, "classification")
    assert [t.x[0] for t in fig.data] == [0.02, 0.005]
    assert fig.data[0].marker.size > fig.data[1].marker.size
    assert fig.layout.xaxis.title.text.startswith("fit time")


@pytest.mark.slow
def test_histograms_draw_every_row_including_the_maximum():
    """The stacked bars count every row of the node: plotly's own binning (xbins ending at
    the maximum) dropped the rows equal to it (iris: the one 6.9 cm virginica)."""
    ds = _ds("iris")
    prof = split_profile(ds.X, ds.y, 2, ["exhaustive"], task="classification", n_classes=3)
    names = [str(c) for c in ds.classes_]
    for fig in (
        candidates_figure(prof, class_names=names),
        threshold_scan_figure(prof, class_names=names),
    ):
        bars = [t for t in fig.data if t.type == "bar"]
        assert [t.name for t in bars] == names
        assert [int(np.sum(t.y)) for t in bars] == [50, 50, 50]
        assert bars[2].y[-1] >= 1  # the last bin holds the maximum
    reg = split_profile(*_xy_regression(), 0, ["exhaustive"], task="regression")
    bars = [t for t in candidates_figure(reg).data if t.type == "bar"]
    assert len(bars) == 1 and int(np.sum(bars[0].y)) == reg.x.size
    const = split_profile(
        np.ones((5, 1)), np.arange(5) % 2, 0, ["exhaustive"], task="classification", n_classes=2
    )
    bars = [t for t in candidates_figure(const).data if t.type == "bar"]
    assert sum(int(np.sum(t.y)) for t in bars) == 5


def _xy_regression():
    ds = _ds("diabetes")
    return ds.X, ds.y


def test_fallback_is_reported_and_equals_sixteen_quantiles():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(500, 1))  # unimodal: no KDE valley
    y = (X[:, 0] > 0.3).astype(int)
    prof = split_profile(
        X, y, 0, ["kde_valley", "class_centroid", "quantile"], task="classification", n_classes=2
    )
    kde, cc, q = (prof.results[s] for s in ("kde_valley", "class_centroid", "quantile"))
    assert kde.fallback and not cc.fallback and not q.fallback
    np.testing.assert_array_equal(kde.thresholds, q.thresholds)  # quantile's k = 16
    assert list(prof.to_frame()["quantile fallback"]) == [True, False, False]
    fig = candidates_figure(prof)
    names = [t.name for t in fig.data if t.name and "candidate" in t.name]
    assert names[0] == f"kde_valley → quantile ({kde.n_candidates} candidates)"
    assert names[1] == "class_centroid (1 candidate)"  # singular
    # nothing allowed by min_samples_leaf: no candidate and no fallback either
    none = split_profile(
        X, y, 0, ["kde_valley"], task="classification", n_classes=2, min_samples_leaf=300
    )
    r = none.results["kde_valley"]
    assert r.n_candidates == 0 and not r.fallback


def test_regression_dics_paper_uses_the_global_dictionary():
    """As the CART builder: k-means with 8 clusters on every continuous feature, not a
    1-D k-means on the profiled feature."""
    from engine.cart.candidates import candidate_thresholds
    from engine.cart.dics import dics_dictionary

    X, y = _xy_regression()
    prof = split_profile(X, y, 2, ["dics_paper"], task="regression", random_state=0)
    d = dics_dictionary(X, 8, random_state=0)
    expect = candidate_thresholds(
        X[:, 2], y, "dics_paper", task="regression", dictionary=d.feature(2), fallback=False
    )
    assert expect.size > 0
    np.testing.assert_array_equal(prof.results["dics_paper"].thresholds, expect)


def test_strategy_markers_do_not_depend_on_the_selection():
    ds = _ds("iris")
    styles = []
    for chosen in (["kmeans1d"], ["exhaustive", "quantile", "kmeans1d"]):
        prof = split_profile(ds.X, ds.y, 1, chosen, task="classification", n_classes=3)
        t = next(
            t for t in candidates_figure(prof).data if t.name and t.name.startswith("kmeans1d (")
        )
        styles.append((t.marker.symbol, t.marker.color))
    assert styles[0] == styles[1]
    assert styles[0][0] != "line-ns-open"  # the thin tick is exhaustive's only


@pytest.mark.slow
def test_top_margin_grows_with_the_legend():
    """Ten digit classes and eight strategies wrap the legend over several rows: the top
    margin makes room so that it does not cover the title."""
    ds = _ds("digits")
    few = split_profile(
        ds.X[:, :1], (ds.y > 4).astype(int), 0, ["exhaustive"], task="classification", n_classes=2
    )
    many = split_profile(ds.X, ds.y, 36, list(STRATEGIES), task="classification", n_classes=10)
    names = [str(c) for c in ds.classes_]
    # the title's second line (what the stars and dashed lines mean) takes 18 px more
    assert candidates_figure(few).layout.margin.t == 100 + 18
    assert candidates_figure(many, class_names=names).layout.margin.t >= 62 + 22 * 5 + 18


def test_node_histogram_and_rows_left_count_the_node_rows():
    """What the Split strategies figures draw is computed by the profile: per-class counts
    in equal-width bins (every row once) and the rows left of each threshold."""
    ds = _ds("wine")
    prof = split_profile(ds.X, ds.y, 0, ["exhaustive"], task="classification", n_classes=3)
    hist = prof.histogram(12, n_classes=3)
    assert hist.counts.shape == (3, 12) and hist.edges.shape == (13,)
    np.testing.assert_array_equal(hist.counts.sum(axis=1), np.bincount(ds.y, minlength=3))
    assert hist.edges[0] == ds.X[:, 0].min() and hist.edges[-1] == ds.X[:, 0].max()
    assert hist.width == pytest.approx((hist.edges[-1] - hist.edges[0]) / 12)
    assert hist.max_count == hist.counts.sum(axis=0).max()
    t = prof.curve_thresholds
    np.testing.assert_array_equal(prof.rows_left(t), [(ds.X[:, 0] <= v).sum() for v in t])
    const = split_profile(
        np.ones((5, 1)), np.arange(5) % 2, 0, ["exhaustive"], task="classification", n_classes=2
    )
    one = const.histogram(30)
    assert one.counts.shape == (2, 1) and one.counts.sum() == 5 and one.width == 1.0


def test_tradeoff_labels_of_close_points_go_to_different_places():
    # random / kmeans1d / kde_valley / quantile sat at about the same time and accuracy and
    # their "top center" labels overlapped
    import pandas as pd

    summary = pd.DataFrame(
        {
            "model": [
                "CART / exhaustive",
                "CART / random",
                "CART / kmeans1d",
                "CART / kde_valley",
                "CART / quantile",
            ],
            "fit_seconds": [0.020, 0.0050, 0.0052, 0.0051, 0.0049],
            "accuracy": [0.95, 0.930, 0.931, 0.929, 0.930],
            "candidates": [5000, 300, 290, 280, 310],
        }
    )
    fig = strategy_tradeoff_figure(summary, "classification")
    places = [t.textposition for t in fig.data]
    # the point alone at the right edge: its label goes left rather than out of the plot
    assert places[0] == "middle left"
    # two points closer than a label (in fractions of the plot) never share a place
    x = (summary["fit_seconds"] - 0.0049) / (0.020 - 0.0049)
    y = (summary["accuracy"] - 0.929) / (0.95 - 0.929)
    close = [
        (i, j)
        for i in range(5)
        for j in range(i + 1, 5)
        if abs(x[i] - x[j]) < 0.1 and abs(y[i] - y[j]) < 0.07
    ]
    assert len(close) >= 4
    assert all(places[i] != places[j] for i, j in close), places
    # label boxes of a plain grid of points never overlap and a lone label stays on top
    assert label_positions([0, 1], [0, 1], ["a", "b"]) == ["top center", "top center"]
    assert label_positions([0, 0.001, 1], [0, 0, 1], ["aaaa", "bbbb", "c"])[:2] == [
        "top center",
        "bottom center",
    ]


def test_threshold_scan_row_counts_stay_inside_the_plot():
    """The "n rows | m rows" label of the threshold line stands right of it in the left
    third of the range and left of it in the right third, in every frame (a centred label
    at the first threshold was cut at the plot's left edge); the slider's value sits at
    its right end, away from the Play / Pause buttons."""
    from sklearn.datasets import load_iris

    from engine.cart.profile import split_profile

    X, y = load_iris(return_X_y=True)
    profile = split_profile(X, y, 2, ["exhaustive"], task="classification", n_classes=3)
    fig = threshold_scan_figure(profile)
    t = profile.curve_thresholds
    low, high = t[0], t[-1]
    for frame in fig.frames:
        x = frame.data[0].x[0]
        where = (x - low) / (high - low)
        side = frame.data[0].textposition
        if where < 1 / 3:
            assert side == "top right", (x, side)
        elif where > 2 / 3:
            assert side == "top left", (x, side)
        else:
            assert side == "top center", (x, side)
    line = next(tr for tr in fig.data if tr.name == "threshold")
    assert line.textposition == fig.frames[0].data[0].textposition == "top right"
    assert fig.layout.sliders[0].currentvalue.xanchor == "right"


def test_threshold_scan_line_names_the_threshold_it_stands_at():
    """The slider's steps are evenly spaced among the candidate thresholds (petal length:
    1.65 and 2.45 are neighbours, across the gap between setosa and the others), not in
    value: every frame's line says the threshold it stands at and the rows on each side,
    counted here by brute force."""
    from sklearn.datasets import load_iris

    from engine.cart.profile import split_profile

    X, y = load_iris(return_X_y=True)
    profile = split_profile(X, y, 2, ["exhaustive"], task="classification", n_classes=3)
    fig = threshold_scan_figure(profile)
    values = [float(frame.data[0].x[0]) for frame in fig.frames]
    gaps = np.diff(values)
    assert gaps.max() > 5 * np.median(gaps)  # unevenly spaced values, one step apart
    for frame, value in zip(fig.frames, values, strict=True):
        left = int(np.sum(X[:, 2] <= value))
        rows = lambda n: f"{n} row" + ("s" if n != 1 else "")  # noqa: E731
        want = f"threshold {value:.4g}: ← {rows(left)} | {rows(150 - left)} →"
        assert frame.data[0].text[1] == want
        step = next(s for s in fig.layout.sliders[0].steps if list(s.args[0]) == [frame.name])
        assert step.label == f"{value:.4g}"


def test_projection_stars_stay_within_their_strategy_rows():
    """In projection mode the chosen-threshold stars were scaled 1.5x (16 -> 24 px, 30 px
    tall) while the candidate rug's rows stayed about 21.6 px apart: dics_paper's,
    class_centroid's and kde_valley's stars at 2.45 on iris's petal length ran into each
    other.  They fit within the rows' distance (worked out from the styled layout); the
    other markers still grow."""
    from sklearn.datasets import load_iris

    from engine.figures.style import projection_style

    X, y = load_iris(return_X_y=True)
    strategies = ["exhaustive", "quantile", "random", "dics_paper", "class_centroid", "kde_valley"]
    profile = split_profile(X, y, 2, strategies, task="classification", n_classes=3)
    fig = projection_style(candidates_figure(profile))
    layout = fig.layout
    plot = layout.height - layout.margin.t - layout.margin.b
    low, high = layout.yaxis2.domain
    row_distance = plot * (high - low) / len(strategies)
    stars = [t for t in fig.data if t.type == "scatter" and t.marker.symbol == "star"]
    assert len(stars) == len(strategies)
    # plotly draws a star 1.27x its size tall, plus its outline; the axes' automargin
    # takes some of the plot (rows measured 21.6 px apart in the browser, 25 here)
    tall = [1.27 * s.marker.size + 2 * s.marker.line.width for s in stars]
    assert max(tall) < 0.86 * row_distance, (tall, row_distance)
    rug = [t for t in fig.data if t.type == "scatter" and t.marker.symbol == "diamond"]
    assert rug and rug[0].marker.size > 9  # the candidates' markers grew as before
