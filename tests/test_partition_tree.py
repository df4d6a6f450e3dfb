"""Partition Tree / Forest estimators: normalisation, gains, growth, NLL (docs/spec.md section 2)."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from engine.data import DataError, load_bundled, make_dataset
from engine.partition import (
    PartitionForestClassifier,
    PartitionForestRegressor,
    PartitionTreeClassifier,
    PartitionTreeRegressor,
)
from engine.partition.growth import LEAF, Y_CAT, Y_CONT


def _hetero(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-2, 2, n)
    y = np.sin(x) + (0.1 + 0.5 * np.abs(x)) * rng.randn(n)
    return np.column_stack([x, rng.rand(n)]), y


def _check_slices(model, X):
    for row in X[:20]:
        s = model.slice(row)
        assert abs(np.sum(s["heights"] * np.diff(s["edges"])) - 1.0) < 1e-9
        assert np.all(s["heights"] >= 0)


@pytest.mark.parametrize(
    "cls,kw",
    [
        (PartitionTreeRegressor, {"max_leaves": 24}),
        (PartitionForestRegressor, {"n_estimators": 8, "random_state": 0}),
        (
            PartitionForestRegressor,
            {"n_estimators": 5, "aggregation": "normalised", "random_state": 1},
        ),
    ],
)
def test_regression_slices_integrate_to_one(cls, kw):
    X, y = _hetero(400, 0)
    m = cls(**kw).fit(X, y)
    _check_slices(m, X)
    # the density read through density(X, y) agrees with the slice
    s = m.slice(X[3])
    i = np.searchsorted(s["edges"], y[3]) - 1
    assert abs(m.density(X[3:4], y[3:4])[0] - s["heights"][i]) < 1e-9
    mean = np.sum(s["heights"] * np.diff(s["edges"]) * 0.5 * (s["edges"][1:] + s["edges"][:-1]))
    assert abs(m.predict(X[3:4])[0] - mean) < 1e-9


@pytest.mark.parametrize(
    "cls,kw",
    [
        (PartitionTreeClassifier, {}),
        (PartitionForestClassifier, {"n_estimators": 8, "random_state": 0}),
    ],
)
def test_classification_probabilities_sum_to_one(cls, kw):
    X, y = load_iris(return_X_y=True)
    m = cls(**kw).fit(X, y)
    p = m.predict_proba(X)
    assert np.allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert abs(m.slice(X[0])["proba"].sum() - 1.0) < 1e-9
    assert (m.predict(X) == y).mean() > 0.9
    assert np.allclose(m.density(X, y), p[np.arange(len(y)), y])


def test_first_split_is_on_y_and_gains_nonnegative():
    X, y = _hetero(300, 1)
    m = PartitionTreeRegressor(max_leaves=32).fit(X, y)
    t = m.partition_tree_
    assert t.kind[0] == Y_CONT
    inner = t.kind != LEAF
    assert np.all(t.gain[inner] >= 0)
    Xi, yi = load_iris(return_X_y=True)  # balanced classes: root Y gain is 0, still splits
    c = PartitionTreeClassifier().fit(Xi, yi)
    assert c.partition_tree_.kind[0] == Y_CAT


def test_training_nll_non_increasing_in_max_leaves():
    X, y = _hetero(300, 2)
    prev = np.inf
    for k in (1, 2, 4, 8, 16, 32, 64):
        m = PartitionTreeRegressor(max_leaves=k).fit(X, y)
        nll = m.trace_[-1][1]
        assert nll <= prev + 1e-12
        prev = nll
    train = [tr for _, tr, _ in m.trace_]
    assert np.all(np.diff(train) <= 1e-12)
    assert m.trace_[-1][0] == m.partition_tree_.n_leaves


def test_trace_validation_and_callback():
    X, y = _hetero(300, 3)
    seen = []
    m = PartitionTreeRegressor(max_leaves=8).fit(
        X[:200], y[:200], X_val=X[200:], y_val=y[200:], callback=lambda *a: seen.append(a)
    )
    assert len(seen) == 7 and len(m.trace_) == 8
    assert all(np.isfinite(v) for _, _, v in m.trace_)
    # the fitted tree is the size of the lowest validation NLL (select_size's default)
    assert abs(min(v for _, _, v in m.trace_) - m.nll(X[200:], y[200:])[0]) < 1e-12
    last = PartitionTreeRegressor(max_leaves=8, select_size="last")
    last.fit(X[:200], y[:200], X_val=X[200:], y_val=y[200:])
    assert abs(last.trace_[-1][2] - last.nll(X[200:], y[200:])[0]) < 1e-12


def test_out_of_support_and_nan():
    X, y = _hetero(200, 4)
    m = PartitionTreeRegressor(max_leaves=8).fit(X, y)
    lo, hi = m.y_box_
    d = m.density(X[:2], np.array([hi + 1.0, lo - 1.0]))
    assert np.all(d == 0)
    nll, n_out = m.nll(X[:3], np.array([hi + 1.0, y[2], lo - 5.0]), floor=1e-6)
    assert n_out == 2 and np.isfinite(nll)
    with pytest.raises(DataError):
        PartitionTreeRegressor().fit(X, np.where(np.arange(200) == 5, np.nan, y))
    with pytest.raises(DataError):
        m.density(X[:1], np.array([np.nan]))


@pytest.mark.slow
def test_heteroscedastic_beats_homoscedastic_gaussian():
    from scipy.stats import norm

    df, _, entry = load_bundled("heteroscedastic")
    ds = make_dataset(df, entry["target"])
    rng = np.random.RandomState(0)
    perm = rng.permutation(len(ds.y))
    tr, te = perm[:750], perm[750:]
    base = -norm.logpdf(ds.y[te], ds.y[tr].mean(), ds.y[tr].std()).mean()
    for k in (16, 32, 64):
        m = PartitionTreeRegressor(max_leaves=k).fit(ds.X[tr], ds.y[tr])
        nll, _ = m.nll(ds.X[te], ds.y[te])
        assert nll < base, (k, nll, base)
    # a homoscedastic Gaussian around a linear mean is a harder baseline: the single tree
    # does not beat it reliably (measured 0.80-0.94 vs 0.83-0.93), the forest does
    from sklearn.linear_model import LinearRegression

    lr = LinearRegression().fit(ds.X[tr], ds.y[tr])
    scale = np.std(ds.y[tr] - lr.predict(ds.X[tr]))
    linear = -norm.logpdf(ds.y[te], lr.predict(ds.X[te]), scale).mean()
    forest = PartitionForestRegressor(n_estimators=30, random_state=0).fit(ds.X[tr], ds.y[tr])
    assert forest.nll(ds.X[te], ds.y[te])[0] < linear


def test_categorical_feature_split_and_cells():
    rng = np.random.RandomState(5)
    n = 400
    c = rng.randint(0, 5, n).astype(np.float64)
    y = np.where(np.isin(c, [1, 3]), 3.0, 0.0) + 0.3 * rng.randn(n)
    X = np.column_stack([c, rng.rand(n)])
    # min_samples_xy=0: the best subset split leaves an empty XY cell (density 0 there)
    m = PartitionTreeRegressor(max_leaves=8, min_samples_xy=0, categorical_features=[0]).fit(X, y)
    assert m.feature_importances_[0] > 0.5 and m.y_importance_ > 0
    _check_slices(m, X)
    pred = m.predict(X)
    hi_group = np.isin(c, [1, 3])
    assert pred[hi_group].min() > pred[~hi_group].max() + 0.5
    cells = m.cells()
    assert len(cells) == m.partition_tree_.n_leaves
    assert any(0 in c["x_categories"] for c in cells)
    # the cells' masses reproduce the slice of a row
    row = X[0]
    hits = [
        c
        for c in cells
        if all(row[f] in v for f, v in c["x_categories"].items())
        and np.all(row >= c["x_low"])
        and np.all(row <= c["x_high"])
    ]
    z = sum(c["n_xy"] / c["n_x"] for c in hits)
    s = m.slice(row)
    i = np.searchsorted(s["edges"], y[0]) - 1
    h = [c["density"] for c in hits if c["y_low"] < y[0] <= c["y_high"]]
    assert abs(h[0] / z - s["heights"][i]) < 1e-9


REFERENCE = {  # docs/spec.md section 2: reference package, 5-fold stratified CV, seed 0
    "iris": (0.343, 0.274),
    "wine": (0.328, 0.190),
    "breast_cancer": (0.245, 0.126),
    "digits": (0.763, 0.431),
}


@pytest.mark.parametrize(
    "name,which",
    [
        # the forests (which=1) and digits' tree take seconds each
        *[(n, 0) for n in ("iris", "wine", "breast_cancer")],
        *[pytest.param(n, 1, marks=pytest.mark.slow) for n in ("iris", "wine", "breast_cancer")],
        pytest.param("digits", 0, marks=pytest.mark.slow),
        pytest.param("digits", 1, marks=pytest.mark.slow),  # ~10-20 s here (measured 0.438)
    ],
)
def test_cv_log_loss_within_reference(name, which):
    """5-fold stratified CV log-loss (seed 0) of the default tree (which=0) and a forest of
    50 (which=1) within 0.02 of, or below, the reference package's figures."""
    from sklearn.metrics import log_loss
    from sklearn.model_selection import StratifiedKFold

    df, _, entry = load_bundled(name)
    ds = make_dataset(df, entry["target"])
    losses = []
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(ds.X, ds.y):
        m = (
            PartitionTreeClassifier()
            if which == 0
            else PartitionForestClassifier(n_estimators=50, random_state=0)
        )
        m.fit(ds.X[tr], ds.y[tr])
        p = np.clip(m.predict_proba(ds.X[te]), 1e-15, 1.0)
        losses.append(log_loss(ds.y[te], p, labels=m.classes_))
    assert np.mean(losses) <= REFERENCE[name][which] + 0.02, np.mean(losses)


def test_root_gain_matches_brute_force_and_parallel_forest_is_deterministic():
    X, y = _hetero(60, 6)
    m = PartitionTreeRegressor(max_leaves=2, min_volume_fraction=0.0).fit(X, y)
    lo, hi = m.y_box_
    n = len(y)
    ys = np.sort(y)
    best = 0.0
    for t in 0.5 * (ys[1:] + ys[:-1]):
        nl = np.sum(y <= t)
        g = (
            -np.log(n / (n * (hi - lo)))
            + (nl / n) * np.log(nl / (n * (t - lo)))
            + ((n - nl) / n) * np.log((n - nl) / (n * (hi - t)))
        )
        best = max(best, g)
    assert abs(m.partition_tree_.gain[0] - best) < 1e-12
    Xi, yi = load_iris(return_X_y=True)
    a = PartitionForestClassifier(n_estimators=4, random_state=0, n_jobs=2).fit(Xi, yi)
    b = PartitionForestClassifier(n_estimators=4, random_state=0).fit(Xi, yi)
    assert np.array_equal(a.predict_proba(Xi), b.predict_proba(Xi))


def test_forest_options_and_classifier_errors():
    rng = np.random.RandomState(7)
    n = 300
    c = rng.randint(0, 4, n).astype(np.float64)
    X = np.column_stack([c, rng.rand(n)])
    y = (np.isin(c, [0, 2]) ^ (X[:, 1] > 0.7)).astype(np.int64)
    for agg in ("unnormalised", "normalised"):
        m = PartitionForestClassifier(
            n_estimators=6, aggregation=agg, categorical_features=[0], random_state=0
        ).fit(X, y)
        assert np.allclose(m.predict_proba(X).sum(axis=1), 1.0, atol=1e-9)
        assert (m.predict(X) == y).mean() > 0.9
        assert m.feature_importances_.sum() == pytest.approx(1.0)
    with pytest.raises(DataError):
        PartitionTreeClassifier().fit(X, np.where(np.arange(n) == 3, np.nan, 1.0))
    with pytest.raises(ValueError):
        PartitionForestClassifier(aggregation="median").fit(X, y)


def test_min_samples_y_applies_to_categorical_targets():
    Xi, yi = load_iris(return_X_y=True)  # 50 rows per class: no Y side can reach 60 rows
    assert PartitionTreeClassifier(min_samples_y=60).fit(Xi, yi).partition_tree_.n_leaves == 1
    assert PartitionTreeClassifier(min_samples_y=50).fit(Xi, yi).partition_tree_.n_leaves > 1
