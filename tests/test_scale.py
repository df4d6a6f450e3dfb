"""The seeded stratified subsample (engine.data.subsample) and the cost-curve estimates
(engine.scale) a page uses on a large upload (issue 20 point 4)."""

import math

import numpy as np
import pytest

from engine.data import make_dataset, stratified_subsample, subsample_dataset
from engine.scale import (
    BENCH_FEATURES,
    CURVES,
    MEASURED,
    estimate_seconds,
    format_seconds,
    rows_within,
)

# -- subsample ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 7, 100, 999, 1_234])
def test_class_shares_within_one_row_of_exact(size):
    rng = np.random.default_rng(5)
    y = rng.choice(4, size=5_003, p=[0.6, 0.25, 0.1, 0.05])
    sample = stratified_subsample(y, size, task="classification", seed=3)
    assert sample.kept == size == len(sample.rows) and sample.total == len(y)
    assert len(np.unique(sample.rows)) == size  # without replacement
    assert np.all(np.diff(sample.rows) > 0)
    counts, kept = np.bincount(y, minlength=4), np.bincount(y[sample.rows], minlength=4)
    exact = counts * size / len(y)
    assert np.all(np.abs(kept - exact) < 1.0), (kept, exact)


def test_same_seed_same_rows_other_seed_other_rows():
    y = np.repeat([0, 1, 2], [500, 300, 200])
    first = stratified_subsample(y, 100, task="classification", seed=11)
    again = stratified_subsample(y, 100, task="classification", seed=11)
    other = stratified_subsample(y, 100, task="classification", seed=12)
    assert np.array_equal(first.rows, again.rows)
    assert not np.array_equal(first.rows, other.rows)
    # exact shares here: 50 / 30 / 20
    assert np.bincount(y[first.rows]).tolist() == [50, 30, 20]


def test_string_labels_are_strata_too():
    y = np.array(["a"] * 90 + ["b"] * 10, dtype=object)
    sample = stratified_subsample(y, 20, task="classification", seed=0)
    assert (y[sample.rows] == "b").sum() == 2


def test_regression_keeps_every_quantile_bin():
    rng = np.random.default_rng(0)
    y = rng.lognormal(size=10_000)  # skewed: a plain random draw could miss the tail
    sample = stratified_subsample(y, 1_000, task="regression", seed=4, n_bins=10)
    edges = np.quantile(y, np.linspace(0, 1, 11))
    kept_bins = np.searchsorted(edges[1:-1], y[sample.rows], side="right")
    assert np.bincount(kept_bins, minlength=10).tolist() == [100] * 10
    assert sample.strata == "target quantile bins"


def test_whole_data_when_size_covers_it_and_bad_input():
    y = np.arange(50.0)
    sample = stratified_subsample(y, 80, task="regression")
    assert sample.kept == sample.total == 50
    with pytest.raises(ValueError, match="at least one row"):
        stratified_subsample(y, 0, task="regression")
    with pytest.raises(ValueError, match="task"):
        stratified_subsample(y, 5, task="ranking")
    with pytest.raises(ValueError, match="missing"):
        stratified_subsample(np.array([1.0, np.nan]), 1, task="regression")


def test_subsample_dataset_keeps_matching_rows_and_says_so():
    import pandas as pd

    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(3_000, 3)), columns=["a", "b", "c"])
    df["label"] = np.where(df["a"] + rng.normal(size=3_000) > 1.0, "yes", "no")
    ds = make_dataset(df, "label")
    small = subsample_dataset(ds, 500, seed=9)
    assert small.n_samples == 500 and small.subsample.total == 3_000
    rows = small.subsample.rows
    assert np.array_equal(small.X, ds.X[rows]) and np.array_equal(small.y, ds.y[rows])
    assert small.X.flags.c_contiguous
    assert small.subsample.note() == (
        "on a seeded stratified subsample of 500 of 3,000 rows (seed 9)"
    )
    assert subsample_dataset(ds, 3_000) is ds and ds.subsample is None


# -- cost curves -------------------------------------------------------------------------


def test_curves_are_the_least_squares_fit_of_the_bench_points():
    # the slopes docs/benchmarks.md prints for the same points (2 decimals; Literati's
    # from its counting section's points, fitted the same way)
    documented = {
        "cart": 1.02,
        "sklearn_tree": 1.18,
        "literati": 1.2,
        "literati_root": 0.86,
        "partition": 1.07,
        "treegrad": 0.72,
        "cit": 0.94,
    }
    for method, (_, points) in MEASURED.items():
        curve = CURVES[method]
        assert round(curve.slope, 2) == documented[method]
        # least squares by numpy's polyfit gives the same line
        slope, intercept = np.polyfit(
            np.log([n for n, _ in points]), np.log([t for _, t in points]), 1
        )
        assert curve.slope == pytest.approx(slope, rel=1e-12)
        assert curve.coefficient == pytest.approx(math.exp(intercept), rel=1e-12)


def test_estimate_uses_the_fitted_constants_and_scales_with_features():
    for method, curve in CURVES.items():
        for n in (1_000, 20_000, 200_000):
            expected = curve.coefficient * n**curve.slope
            assert estimate_seconds(method, n) == pytest.approx(expected, rel=1e-12)
            assert estimate_seconds(method, n, 2 * BENCH_FEATURES) == pytest.approx(
                2 * expected, rel=1e-12
            )
    # the fitted line passes near the measured points (within a factor 2 on this bench)
    for method, (_, points) in MEASURED.items():
        for n, seconds in points:
            assert 0.5 < estimate_seconds(method, n) / seconds < 2.0, (method, n)


def test_estimate_grows_with_rows_and_bad_input():
    sizes = np.geomspace(1_000, 200_000, 25).astype(int)
    for method in CURVES:
        times = [estimate_seconds(method, int(n)) for n in sizes]
        assert all(b > a for a, b in zip(times, times[1:], strict=False))
    with pytest.raises(ValueError, match="No cost curve"):
        estimate_seconds("boosting", 100)
    with pytest.raises(ValueError, match="at least 1"):
        estimate_seconds("cart", 0)


def test_rows_within_is_the_largest_thousand_under_the_budget():
    for method in CURVES:
        for budget in (5.0, 60.0, 600.0):
            rows = rows_within(method, budget)
            if rows > 1_000:
                assert estimate_seconds(method, rows) <= budget
            assert estimate_seconds(method, rows + 1_000) > budget or rows == 1_000


def test_format_seconds():
    assert format_seconds(0.3) == "under 1 s"
    assert format_seconds(42.4) == "about 42 s"
    assert format_seconds(600) == "about 10 min"
    assert format_seconds(7200) == "about 2.0 h"


def test_snippet_rebuilds_the_same_subsample():
    """Reproduce in Python: a run on a subsample writes the subsample_dataset call, and the
    code run as written makes the same rows."""
    from engine.data import load_bundled
    from engine.snippets import dataset_code

    df, _, entry = load_bundled("digits")
    ds = make_dataset(df, entry["target"])
    small = subsample_dataset(ds, 300, seed=5)
    recipe = {"source": "bundled", "name": "digits", "target": entry["target"]}
    recipe["subsample"] = small.subsample.as_dict()
    code = dataset_code(recipe)
    assert "subsample_dataset(ds, 300, seed=5)" in code
    scope: dict = {}
    exec(compile(code, "<snippet>", "exec"), scope)
    assert np.array_equal(scope["ds"].X, small.X) and np.array_equal(scope["ds"].y, small.y)
    assert "subsample" not in dataset_code({k: v for k, v in recipe.items() if k != "subsample"})


def test_binned_counts_match_numpy_per_group_and_skip_missing():
    from engine.data import binned_counts

    rng = np.random.default_rng(2)
    values = rng.normal(size=1_000)
    values[::7] = np.nan
    groups = rng.integers(0, 3, size=1_000)
    edges, counts = binned_counts(values, groups, 3, nbins=12)
    present = ~np.isnan(values)
    assert np.allclose(edges, np.linspace(values[present].min(), values[present].max(), 13))
    for k in range(3):
        expected, _ = np.histogram(values[present & (groups == k)], bins=edges)
        assert counts[k].tolist() == expected.tolist()
    assert counts.sum() == present.sum()
    edges, counts = binned_counts(np.full(5, 2.0), nbins=4)
    assert counts.sum() == 5 and edges[0] < 2.0 < edges[-1]


def test_every_class_keeps_a_row_even_when_rarer_than_one_in_size():
    # ten classes of one row among 29,990: the largest remainders alone keep only seven of
    # them (two-thirds of a row each, seven rows short), dropping classes the data names
    y = np.array([0] * 29_990 + list(range(1, 11)))
    sample = stratified_subsample(y, 20_000, task="classification", seed=3)
    assert sample.kept == 20_000
    kept = np.bincount(y[sample.rows], minlength=11)
    assert kept[1:].tolist() == [1] * 10
    assert kept[0] == 20_000 - 10
    # a class of 2 rows in 30,000 at 1,000 rows: exact share 0.07 of a row, still kept
    y = np.array([0] * 29_995 + [1] * 3 + [2] * 2)
    kept = np.bincount(y[stratified_subsample(y, 1_000, task="classification").rows])
    assert kept.tolist() == [998, 1, 1]
    # common classes are untouched: the same quotas as the largest-remainder rule
    y = np.repeat(np.arange(3), [15_000, 10_000, 5_000])
    kept = np.bincount(y[stratified_subsample(y, 1_000, task="classification").rows])
    assert kept.tolist() == [500, 333, 167]


class _Recorder:
    """A stand-in for a Streamlit container: records what scale_notice draws."""

    def __init__(self):
        self.texts, self.buttons = [], []

    def caption(self, text):
        self.texts.append(text)

    info = caption

    def button(self, label, **kwargs):
        self.buttons.append((label, kwargs["args"]))


def test_scale_notice_times_the_training_rows_and_sizes_the_offer_for_them():
    """A search on the training share of a split is timed at those rows (the Literati page
    said '30,000 rows' for a search on 22,500), and the subsample it offers is the most
    rows (in thousands) whose training share fits the budget."""
    from types import SimpleNamespace

    from pages._scale import scale_notice

    ds = SimpleNamespace(n_samples=30_000, n_features=41, subsample=None)
    where = _Recorder()
    seconds = scale_notice(
        ds, "literati", budget=15.0, what="proving", key="k", container=where, fit_share=0.75
    )
    assert seconds == pytest.approx(estimate_seconds("literati", 22_500, 41))
    assert seconds > 15.0  # (at all 30,000 rows: over 20 s)
    assert "22,500 training rows (of 30,000) x 41 features" in where.texts[0]
    (label, (rows,)) = where.buttons[0]
    assert rows % 1_000 == 0
    assert estimate_seconds("literati", round(rows * 0.75), 41) <= 15.0
    assert estimate_seconds("literati", round((rows + 1_000) * 0.75), 41) > 15.0
    assert f"subsample of {rows:,} rows takes" in where.texts[0]
    # a lower bound says so; the whole table when the share is 1
    where = _Recorder()
    scale_notice(
        ds, "literati", budget=5.0, what="proving", key="k", container=where, lower_bound=True
    )
    assert "would take at least" in where.texts[0] and "30,000 rows x 41" in where.texts[0]


# -- the whole comparison job, from the curves (Compare, Split strategies) -----------------


def _curve_seconds(method, rows, features):
    """seconds = a * rows ** slope * features / 30, written out from the curve's constants."""
    curve = CURVES[method]
    return curve.coefficient * rows**curve.slope * features / BENCH_FEATURES


def test_comparison_estimate_is_folds_times_models_plus_refits():
    """Every model on every fold's training rows (n (k-1) / k) plus one refit per model
    on all rows; a forest is its trees on sqrt(p) features, a depth scales the curve by
    depth / 8 (grown out: 16); a model without a curve is named and not counted."""
    from engine.compare_estimate import estimate_comparison

    n, p, k = 10_000, 30, 5
    models = [
        ("sklearn_tree", {"max_depth": 4}),
        ("sklearn_forest", {"n_estimators": 20, "max_depth": 0}),
        ("treelab_cart", {"max_depth": 8}),
        ("xgboost", {}),
    ]
    est = estimate_comparison(models, n, p, n_splits=k, task="classification", n_classes=2)
    fold = 8_000

    def each(rows):
        return (
            4 / 8 * _curve_seconds("sklearn_tree", rows, p)
            + 20 * 16 / 8 * _curve_seconds("sklearn_tree", rows, round(math.sqrt(p)))
            + _curve_seconds("cart", rows, p)
        )

    assert est.fold_rows == fold
    assert est.fold_seconds == pytest.approx(k * each(fold))
    assert est.refit_seconds == pytest.approx(each(n))
    assert est.seconds == pytest.approx(k * each(fold) + each(n))
    assert [label for label, _, _ in est.models] == [
        "Decision tree (scikit-learn CART)",
        "Random forest (scikit-learn)",
        "CART (TreeLab, split strategies)",
    ]
    assert est.without_curve == ("XGBoost",)
    text = est.includes()
    assert "5 folds x 3 models on 8,000 training rows each" in text
    assert "plus 3 refits on all 10,000 rows" in text
    assert "not counted: XGBoost" in text and "lower bound" in text
    # refit="trees" (the Compare page): the forest's refit is not counted, and it says so
    trees = estimate_comparison(
        models, n, p, n_splits=k, task="classification", n_classes=2, refit="trees"
    )
    forest_refit = 20 * 16 / 8 * _curve_seconds("sklearn_tree", n, round(math.sqrt(p)))
    assert trees.fold_seconds == pytest.approx(est.fold_seconds)
    assert trees.refit_seconds == pytest.approx(each(n) - forest_refit)
    assert trees.n_refits == 2
    assert "plus 2 refits on all 10,000 rows (only the trees the page draws; the other" in (
        trees.includes()
    )


def test_comparison_estimate_scales_as_the_curve_says():
    """Doubling the rows multiplies a one-curve comparison by 2 ** slope exactly (folds and
    refit alike); Literati is capped at its time limit per fit."""
    from engine.compare_estimate import estimate_comparison

    options = dict(n_splits=4, task="classification", n_classes=3)
    one = [("treelab_cart", {"max_depth": 5})]
    small = estimate_comparison(one, 20_000, 12, **options).seconds
    large = estimate_comparison(one, 40_000, 12, **options).seconds
    assert large / small == pytest.approx(2 ** CURVES["cart"].slope)
    literati = [("treelab_literati", {"time_limit": 0.5})]
    capped = estimate_comparison(literati, 200_000, 30, **options)
    assert capped.seconds == pytest.approx(4 * 0.5 + 0.5)  # 4 folds and a refit, each capped
    # three classes: scikit-learn's gradient boosting grows one tree per class per stage
    boost = [("sklearn_boosting", {"n_estimators": 10, "max_depth": 3})]
    three = estimate_comparison(boost, 9_000, 30, **options)
    assert three.refit_seconds == pytest.approx(
        30 * 3 / 8 * _curve_seconds("sklearn_tree", 9_000, 30)
    )


def test_rows_within_seconds_is_the_largest_thousand_under_the_budget():
    from engine.scale import rows_within_seconds

    def seconds_at(rows):
        return rows / 1_000 * 2.0  # 2 s per thousand rows

    assert rows_within_seconds(seconds_at, 25.0, 200_000) == 12_000
    assert rows_within_seconds(seconds_at, 1.0, 200_000) == 1_000  # never below 1,000
    assert rows_within_seconds(seconds_at, 1e9, 30_500) == 30_500  # all rows fit
    assert rows_within_seconds(seconds_at, 1.0, 800) == 800  # never above the table


def test_scale_notice_of_a_comparison_says_what_it_counts_and_sizes_the_offer():
    """The Compare page's notice: the whole job's estimate at the table's rows, the words of
    what it includes, and a subsample whose whole job fits the budget."""
    from types import SimpleNamespace

    from engine.compare_estimate import estimate_comparison
    from pages._scale import comparison_notice, scale_notice

    ds = SimpleNamespace(
        n_samples=150_000, n_features=30, subsample=None, task="classification", n_classes=2
    )
    models = {"sklearn_forest": {}, "treelab_cart": {}}
    where = _Recorder()
    notice = comparison_notice(ds, models, 5, "cmp")
    notice.pop("settings")  # cv_job_panel's, to know a finished run of the same settings
    seconds = scale_notice(ds, budget=60.0, container=where, **notice)
    want = estimate_comparison(models, 150_000, 30, n_splits=5, task="classification")
    assert seconds == pytest.approx(want.seconds) and seconds > 60.0
    assert format_seconds(want.seconds) in where.texts[0]
    assert "5 folds x 2 models on 120,000 training rows each" in where.texts[0]
    (label, (rows,)) = where.buttons[0]
    at = estimate_comparison(models, rows, 30, n_splits=5, task="classification").seconds
    above = estimate_comparison(models, rows + 1_000, 30, n_splits=5, task="classification")
    assert at <= 60.0 < above.seconds


def test_measured_speed_is_a_probe_fit_over_the_curve(monkeypatch):
    """The factor is the fastest of PROBE_FITS (three) depth-8 fits on at most 2,000 seeded
    rows, timed in the thread's CPU time (a busy server's waiting does not count: the wall
    clock below says 100x slower), over the sklearn_tree curve at that size, clipped to
    SPEED_BOUNDS; it scales only the scikit-learn models of a comparison."""
    import time

    import engine.compare_estimate as estimate
    from engine.scale import estimate_seconds

    assert estimate.PROBE_FITS == 3
    ticks = iter([0.0, 0.3, 1.0, 1.25, 5.0, 5.2])  # CPU: fits of 0.3, 0.25 and 0.2 s
    monkeypatch.setattr(time, "thread_time", lambda: next(ticks))
    wall = iter(range(0, 1_000, 20))  # the wall clock: 20 s a fit
    monkeypatch.setattr(time, "perf_counter", lambda: next(wall))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5_000, 7))
    y = (X[:, 0] > 0).astype(int)
    speed = estimate.measured_speed(X, y, "classification")
    low, high = estimate.SPEED_BOUNDS
    assert speed == pytest.approx(
        min(high, max(low, 0.2 / estimate_seconds("sklearn_tree", 2_000, 7)))
    )
    options = dict(n_splits=3, task="classification", n_classes=2)
    models = {"sklearn_forest": {}, "treelab_cart": {}}
    one = estimate.estimate_comparison(models, 4_000, 7, **options)
    scaled = estimate.estimate_comparison(models, 4_000, 7, **options, speed=0.25)
    (forest, cart) = one.models
    assert scaled.models[0][1:] == pytest.approx((forest[1] * 0.25, forest[2] * 0.25))
    assert scaled.models[1] == cart  # TreeLab's CART keeps its own curve
    assert scaled.scaled == (forest[0],) and "0.25x the curve's time" in scaled.includes()
    assert one.scaled == (forest[0],) and "the curve's time" not in one.includes()


def test_comparison_estimate_counts_forest_shares_permutation_tests_and_deep_literati():
    """A Partition Forest's trees each fit the forest's max_samples share of the rows on
    its max_features share of the features (the estimator's 0.8 and 0.8); a conditional inference
    model with permutation p-values has no curve (named, not counted); Literati deeper
    than 2 is counted at its time limit and said to be."""
    from engine.compare_estimate import estimate_comparison
    from engine.partition.base import MAX_LEAVES_REG

    n, p, k = 10_000, 20, 5
    options = dict(n_splits=k, task="regression", refit=False)
    forest = estimate_comparison(
        [("treelab_partition_forest", {"n_estimators": 10})], n, p, **options
    )
    leaves = max(1.0, math.log2(MAX_LEAVES_REG) / 5)
    per_tree = leaves * _curve_seconds("partition", 6_400, 16)  # 0.8 x 8,000 rows, 0.8 x 20
    assert forest.fold_seconds == pytest.approx(k * 10 * per_tree)
    tree = estimate_comparison([("treelab_partition_tree", {})], n, p, **options)
    assert tree.fold_seconds == pytest.approx(k * leaves * _curve_seconds("partition", 8_000, p))
    permutation = estimate_comparison(
        [("treelab_cit", {"p_value": "permutation"}), ("treelab_cit", {})], n, p, **options
    )
    assert permutation.without_curve == ("Conditional inference tree (TreeLab)",)
    assert permutation.fold_seconds == pytest.approx(k * 16 / 8 * _curve_seconds("cit", 8_000, p))
    clf = dict(n_splits=k, task="classification", n_classes=2)
    deep = estimate_comparison(
        [("treelab_literati", {"max_depth": 3, "time_limit": 7.0})], n, p, **clf
    )
    assert deep.seconds == pytest.approx((k + 1) * 7.0)
    assert deep.at_time_limit == ("Literati optimal shape tree (TreeLab)",)
    assert "counted at its time limit" in deep.includes()
    shallow = estimate_comparison(
        [("treelab_literati", {"max_depth": 2, "time_limit": 600.0})], n, p, **clf
    )
    assert shallow.at_time_limit == () and shallow.seconds < (k + 1) * 600.0
