"""engine.criteria: impurity kernels against brute force.

Oracle: the textbook formulas written directly in numpy on explicit row subsets (Gini
``1 - sum p^2``, entropy ``-sum p log2 p``, weighted variance), and scikit-learn's
``DecisionTreeClassifier``/``Regressor`` stump for the impurity decrease of a root split.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from engine import criteria


def _gini(y, w, K):
    c = np.bincount(y, weights=w, minlength=K)
    W = c.sum()
    return 0.0 if W <= 0 else 1.0 - np.sum((c / W) ** 2)


def _entropy(y, w, K):
    c = np.bincount(y, weights=w, minlength=K)
    W = c.sum()
    p = c[c > 0] / W
    return float(-np.sum(p * np.log2(p))) if W > 0 else 0.0


def _mse(y, w):
    W = w.sum()
    if W <= 0:
        return 0.0
    m = np.sum(w * y) / W
    return float(np.sum(w * (y - m) ** 2) / W)


def _decrease(imp, y, w, left, *args):
    W = w.sum()
    wl, wr = w[left].sum(), w[~left].sum()
    return (
        imp(y, w, *args)
        - wl / W * imp(y[left], w[left], *args)
        - wr / W * imp(y[~left], w[~left], *args)
    )


@pytest.fixture(params=range(5))
def data(request):
    rng = np.random.default_rng(request.param)
    n = int(rng.integers(2, 40))
    K = int(rng.integers(2, 5))
    x = np.round(rng.normal(size=n), 1)  # ties on purpose
    y = rng.integers(0, K, size=n).astype(np.int64)
    yr = rng.normal(size=n)
    w = rng.uniform(0.1, 3.0, size=n)
    return x, y, yr, w, K


def test_node_impurities_match_the_formulas(data):
    x, y, yr, w, K = data
    counts = criteria.weighted_class_counts(y, w, K)
    np.testing.assert_allclose(counts, np.bincount(y, weights=w, minlength=K))
    assert criteria.gini(counts, counts.sum()) == pytest.approx(_gini(y, w, K), abs=1e-12)
    assert criteria.entropy(counts, counts.sum()) == pytest.approx(_entropy(y, w, K), abs=1e-12)
    assert criteria.class_impurity(counts, counts.sum(), criteria.GINI) == pytest.approx(
        _gini(y, w, K)
    )
    assert criteria.class_impurity(counts, counts.sum(), criteria.ENTROPY) == pytest.approx(
        _entropy(y, w, K)
    )
    W, S, Q = w.sum(), np.sum(w * yr), np.sum(w * yr * yr)
    assert criteria.squared_error(W, S, Q) == pytest.approx(_mse(yr, w), abs=1e-10)


def test_empty_nodes_have_zero_impurity():
    z = np.zeros(3)
    assert criteria.gini(z, 0.0) == 0.0
    assert criteria.entropy(z, 0.0) == 0.0
    assert criteria.squared_error(0.0, 0.0, 0.0) == 0.0


def test_prefix_statistics_are_cumulative_sums(data):
    x, y, yr, w, K = data
    order = np.argsort(x, kind="stable")
    pc = criteria.prefix_class_counts(y[order], w[order], K)
    onehot = np.zeros((len(y), K))
    onehot[np.arange(len(y)), y[order]] = w[order]
    np.testing.assert_allclose(pc[1:], np.cumsum(onehot, axis=0))
    assert np.all(pc[0] == 0)
    ps = criteria.prefix_sums(yr[order], w[order])
    np.testing.assert_allclose(ps[1:, 0], np.cumsum(w[order]))
    np.testing.assert_allclose(ps[1:, 1], np.cumsum(w[order] * yr[order]))
    np.testing.assert_allclose(ps[1:, 2], np.cumsum(w[order] * yr[order] ** 2))


@pytest.mark.parametrize("criterion", ["gini", "entropy", "squared_error"])
def test_threshold_gains_match_brute_force(data, criterion):
    """Every threshold (midpoints, values themselves, outside the range) against the
    decrease computed on the explicit left/right subsets."""
    x, y, yr, w, K = data
    u = np.unique(x)
    thresholds = np.concatenate([(u[:-1] + u[1:]) / 2, u, [x.min() - 1, x.max() + 1]])
    target = yr if criterion == "squared_error" else y
    gains, n_left = criteria.threshold_gains(
        x, target, thresholds, criterion, sample_weight=w, n_classes=K
    )
    for t, g, nl in zip(thresholds, gains, n_left, strict=True):
        left = x <= t
        assert nl == left.sum()
        if left.all() or not left.any():
            assert g == 0.0
            continue
        if criterion == "squared_error":
            expect = _decrease(_mse, yr, w, left)
        else:
            imp = _gini if criterion == "gini" else _entropy
            expect = _decrease(imp, y, w, left, K)
        assert g == pytest.approx(expect, abs=1e-10)


def test_min_samples_leaf_marks_small_sides_nan():
    x = np.arange(10.0)
    y = (x > 4).astype(np.int64)
    t, g = criteria.exhaustive_gains(x, y, "gini", min_samples_leaf=3)
    np.testing.assert_allclose(t, np.arange(9) + 0.5)
    assert np.isnan(g[:2]).all() and np.isnan(g[-2:]).all()
    assert np.isfinite(g[2:-2]).all()
    assert t[np.nanargmax(g)] == 4.5 and np.nanmax(g) == pytest.approx(0.5)


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_proxy_orders_splits_like_the_impurity_decrease(data, criterion):
    """proxy = -W_L i(L) - W_R i(R) = W (decrease - i(parent)) for every position."""
    x, y, _yr, w, K = data
    code = criteria.CRITERIA[criterion]
    order = np.argsort(x, kind="stable")
    pc = criteria.prefix_class_counts(y[order], w[order], K)
    total = pc[-1]
    W = total.sum()
    parent = criteria.class_impurity(total, W, code)
    pos = np.arange(1, len(x), dtype=np.int64)
    gains = criteria.class_gains_at(pc, pos, code)
    for p, g in zip(pos, gains, strict=True):
        proxy = criteria.class_children_proxy(pc[p].copy(), pc[p].sum(), total, W, code)
        assert proxy == pytest.approx(W * (g - parent), abs=1e-9)


def test_squared_error_proxy_orders_splits_like_the_decrease(data):
    x, _y, yr, w, _K = data
    order = np.argsort(x, kind="stable")
    ps = criteria.prefix_sums(yr[order], w[order])
    W, S, Q = ps[-1]
    pos = np.arange(1, len(x), dtype=np.int64)
    gains = criteria.squared_error_gains_at(ps, pos)
    for p, g in zip(pos, gains, strict=True):
        proxy = criteria.squared_error_proxy(ps[p, 1], ps[p, 0], S, W)
        # decrease = (proxy - S^2/W) / W
        assert (proxy - S * S / W) / W == pytest.approx(g, abs=1e-9)


def test_integer_weights_equal_repeated_rows(data):
    x, y, _yr, _w, K = data
    wi = np.random.default_rng(1).integers(1, 4, size=len(x)).astype(float)
    t = np.unique(x)
    g_w, _ = criteria.threshold_gains(x, y, t, "gini", sample_weight=wi, n_classes=K)
    g_r, _ = criteria.threshold_gains(
        np.repeat(x, wi.astype(int)), np.repeat(y, wi.astype(int)), t, "gini", n_classes=K
    )
    np.testing.assert_allclose(g_w, g_r, atol=1e-12)


@pytest.mark.parametrize("criterion", ["gini", "entropy", "squared_error"])
def test_root_gain_equals_scikit_learn_stump(criterion):
    """Oracle: a scikit-learn depth-1 tree's impurity decrease at its root split."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=200)
    if criterion == "squared_error":
        y = np.sin(2 * x) + rng.normal(scale=0.3, size=200)
        sk = DecisionTreeRegressor(max_depth=1).fit(x[:, None], y)
    else:
        y = (x + rng.normal(scale=0.7, size=200) > 0).astype(np.int64)
        sk = DecisionTreeClassifier(max_depth=1, criterion=criterion).fit(x[:, None], y)
    t = sk.tree_
    expect = (
        t.impurity[0]
        - (
            t.weighted_n_node_samples[1] * t.impurity[1]
            + t.weighted_n_node_samples[2] * t.impurity[2]
        )
        / t.weighted_n_node_samples[0]
    )
    thresholds, gains = criteria.exhaustive_gains(x.astype(np.float32).astype(float), y, criterion)
    assert gains.max() == pytest.approx(expect, rel=1e-9)
    assert thresholds[np.argmax(gains)] == pytest.approx(t.threshold[0], rel=1e-6)


def test_criterion_code_names_the_allowed_values():
    assert criteria.criterion_code("log_loss", "classification") == criteria.ENTROPY
    with pytest.raises(ValueError, match=r"criterion must be one of \['squared_error'\]"):
        criteria.criterion_code("gini", "regression")
    with pytest.raises(ValueError, match="criterion must be one of"):
        criteria.criterion_code("mae", "classification")
