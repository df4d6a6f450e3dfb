"""Partition Tree / Forest with missing values (issue 14 point 4): each X split learns the
side of the NaN rows as CART does (the NaN rows scored on both sides, 'observed | NaN'
allowed, "missing" one more category of a categorical split); a split without NaN at its
node sends NaN met later to the child with more X rows.

Oracles: a brute force of the X-split gain over every (threshold, side) on tiny inputs,
and the identity that the fitted trees route the training rows to the counts they
recorded.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.data import DataError
from engine.partition import (
    PartitionForestRegressor,
    PartitionTreeClassifier,
    PartitionTreeRegressor,
)
from engine.partition.growth import LEAF, X_CAT, X_CONT, Y_CAT, Y_CONT, _go_left_x
from engine.partition.scans import _scan_sorted_x, xlogy_ratio


def _gain(lxy, lx, rxy, rx, nxy, nx, n_total):
    return (
        xlogy_ratio(lxy, lx, 1.0) + xlogy_ratio(rxy, rx, 1.0) - xlogy_ratio(nxy, nx, 1.0)
    ) / n_total


@pytest.mark.parametrize("seed", range(40))
def test_x_split_scan_is_the_brute_force_optimum_with_nan(seed):
    """The scan's (gain, threshold, side) is the best over every threshold between
    distinct observed values, 'observed | NaN' (+inf) and both sides of the NaN rows."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(4, 12))
    x = np.round(rng.normal(size=m), 1)
    x[rng.random(m) < 0.35] = np.nan
    in_xy = (rng.random(m) < 0.6).astype(np.float64)
    X = x.reshape(-1, 1)
    srt = np.argsort(x, kind="stable").astype(np.int64)
    nxy, nx, n_total = in_xy.sum(), float(m), float(m + 3)
    parent = xlogy_ratio(nxy, nx, 1.0)
    g, t, side = _scan_sorted_x(
        X, srt, 0, in_xy, nxy, parent, n_total, 1.0, 1.0, np.empty(m), np.empty(m)
    )
    nan = np.isnan(x)
    u = np.unique(x[~nan])
    best = -1.0
    for thr in [*((u[:-1] + u[1:]) / 2), *([np.inf] if nan.any() else [])]:
        for left_nan in (0, 1) if nan.any() and thr != np.inf else (0,):
            left = np.where(nan, bool(left_nan), x <= thr)
            lx, lxy = left.sum(), in_xy[left].sum()
            if lx < 1 or m - lx < 1 or lxy < 1 or nxy - lxy < 1:
                continue
            best = max(best, max(_gain(lxy, lx, nxy - lxy, m - lx, nxy, nx, n_total), 0.0))
    if best < 0:
        assert g == -1.0
        return
    assert g == pytest.approx(best, abs=1e-12)
    left = np.where(nan, bool(side), x <= t)
    lx, lxy = left.sum(), in_xy[left].sum()
    assert max(_gain(lxy, lx, nxy - lxy, m - lx, nxy, nx, n_total), 0.0) == pytest.approx(
        g, abs=1e-12
    )
    if not nan.any():
        assert side == int(lx > m - lx)  # the larger child


def _missing_signal(seed, n=600):
    """y carries a signal only through *whether* x0 is missing; x2 categorical with NaN."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[:, 2] = rng.integers(0, 3, size=n)
    missing = rng.random(n) < 0.3
    y = np.where(missing, 3.0, X[:, 1]) + rng.normal(scale=0.2, size=n)
    X[missing, 0] = np.nan
    X[rng.random(n) < 0.2, 2] = np.nan
    return X, y, missing


def _check_routing_identity(tree, X, y_codes):
    """Route every training (x, y) row down the tree as prediction does: the X rows and XY
    rows reaching each node are the counts the fit recorded."""
    nx = np.zeros(tree.kind.shape[0])
    nxy = np.zeros(tree.kind.shape[0])
    stack = [(0, np.arange(X.shape[0]), np.ones(X.shape[0], dtype=bool))]
    while stack:
        node, rows, in_y = stack.pop()
        nx[node] += rows.size
        nxy[node] += in_y.sum()
        k = tree.kind[node]
        if k == LEAF:
            continue
        if k in (X_CONT, X_CAT):
            go = _go_left_x(tree, node, X[rows, tree.feature[node]])
            assert tree.n_missing[node] == np.isnan(X[rows, tree.feature[node]]).sum()
            stack.append((tree.left[node], rows[go], in_y[go]))
            stack.append((tree.right[node], rows[~go], in_y[~go]))
        else:
            if k == Y_CONT:
                go = y_codes[rows] <= tree.threshold[node]
            else:
                assert k == Y_CAT
                go = tree.cat_left[node][y_codes[rows].astype(np.int64)]
            stack.append((tree.left[node], rows, in_y & go))
            stack.append((tree.right[node], rows, in_y & ~go))
    np.testing.assert_array_equal(nx, tree.nx)
    np.testing.assert_array_equal(nxy, tree.nxy)


def test_tree_learns_the_missing_signal_and_routes_training_rows_as_fitted():
    X, y, missing = _missing_signal(0)
    model = PartitionTreeRegressor(categorical_features=[2], max_leaves=24).fit(X, y)
    tree = model.trees_[0]
    x_splits = np.isin(tree.kind, (X_CONT, X_CAT))
    assert tree.n_missing[x_splits].sum() > 0
    assert np.any(x_splits & (tree.feature == 0) & (tree.n_missing > 0))
    _check_routing_identity(tree, X, y)
    pred = model.predict(X)
    assert np.all(np.isfinite(pred))
    # the rows whose x0 is missing are told apart (their y is about 3)
    assert abs(pred[missing].mean() - 3.0) < 0.3
    assert abs(pred[~missing].mean() - y[~missing].mean()) < 0.3
    density, _ = model.nll(X, y)
    assert np.isfinite(density)


def test_classifier_categorical_missing_is_one_more_category():
    """A class decided by 'x2 is missing or x2 == 1': the categorical split puts the
    missing rows with code 1, and training rows route to the fitted counts."""
    rng = np.random.default_rng(4)
    n = 500
    X = rng.normal(size=(n, 2))
    X[:, 1] = rng.integers(0, 4, size=n)
    X[rng.random(n) < 0.25, 1] = np.nan
    labels = np.where(np.isnan(X[:, 1]) | (X[:, 1] == 1), "a", "b")
    flip = rng.random(n) < 0.05
    labels = np.where(flip, np.where(labels == "a", "b", "a"), labels)
    model = PartitionTreeClassifier(categorical_features=[1]).fit(X, labels)
    tree = model.trees_[0]
    _check_routing_identity(tree, X, np.searchsorted(model.classes_, labels).astype(float))
    cat = np.flatnonzero((tree.kind == X_CAT) & (tree.n_missing > 0))
    assert cat.size
    node = cat[0]
    assert bool(tree.missing_left[node]) == bool(tree.cat_left[node][1])
    accuracy = (model.predict(X) == labels).mean()
    assert accuracy > 0.9


@pytest.mark.slow
def test_trees_fitted_without_nan_send_it_to_the_larger_child():
    X, y, _ = _missing_signal(1)
    X = np.nan_to_num(X, nan=0.0)
    model = PartitionTreeRegressor(categorical_features=[2]).fit(X, y)
    tree = model.trees_[0]
    for node in np.flatnonzero(np.isin(tree.kind, (X_CONT, X_CAT))):
        bigger_left = tree.nx[tree.left[node]] > tree.nx[tree.right[node]]
        assert tree.missing_left[node] == bigger_left
    rows = np.full((5, 3), np.nan)
    assert np.all(np.isfinite(model.predict(rows)))
    forest = PartitionForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    assert np.all(np.isfinite(forest.predict(rows)))


def test_one_dimensional_x_names_x():
    """Issue 14 point 5: a 1-D X is blamed on X, with the fix."""
    for est in (PartitionTreeRegressor(), PartitionTreeClassifier()):
        with pytest.raises(DataError, match=r"X must be 2-D.*reshape\(-1, 1\)"):
            est.fit(np.arange(10.0), np.arange(10) % 2)
