"""CART with missing values (issue 14 point 4): each split learns the side the NaN rows go
to, with scikit-learn's (>= 1.3) semantics.

Oracles: scikit-learn's ``DecisionTreeClassifier`` / ``DecisionTreeRegressor`` (same trees
and predictions on data without ties: float32-exact features, noisy labels, leaves of at
least 5 / 40 rows so that no two candidate splits score the same), a brute force over
every (feature, threshold, side) of tiny inputs, and, for every split strategy, the
identities a correct partition must satisfy (training rows reach the leaves the fitted
counts say, the side chosen at each node is the better one for its threshold).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from engine.cart import CARTClassifier, CARTRegressor
from engine.cart.builder import build_tree
from engine.cart.candidates import LABEL_AWARE, STRATEGIES


def _data(seed, n, task, missing, p=4):
    """float32-exact normal features (scikit-learn fits on float32) with NaN in column
    ``f`` at rate ``missing[f]``; noisy labels (no pure nodes, hence no tied splits)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)).astype(np.float32).astype(np.float64)
    if task == "classification":
        z = X[:, 0] + 0.5 * X[:, 1] - 0.7 * X[:, 2]
        y = (rng.random(n) < 1 / (1 + np.exp(-2 * z))).astype(int)
        y += rng.random(n) < 1 / (1 + np.exp(-X[:, 3]))
    else:
        y = X[:, 0] + np.sin(X[:, 1]) + rng.normal(scale=0.3, size=n)
    for f, rate in enumerate(missing):
        X[rng.random(n) < rate, f] = np.nan
    return X, y


def _assert_same_tree(sk_tree, ours, task):
    internal = sk_tree.children_left >= 0
    assert ours.node_count == sk_tree.node_count
    np.testing.assert_array_equal(ours.children_left, sk_tree.children_left)
    np.testing.assert_array_equal(ours.feature[internal], sk_tree.feature[internal])
    np.testing.assert_array_equal(ours.threshold[internal], sk_tree.threshold[internal])
    np.testing.assert_array_equal(
        ours.missing_go_to_left[internal], sk_tree.missing_go_to_left[internal]
    )
    np.testing.assert_array_equal(ours.n_node_samples, sk_tree.n_node_samples)
    value = sk_tree.value[:, 0, :]
    if task == "classification":
        value = value / value.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ours.value[:, 0, :], value, rtol=1e-12, atol=1e-12)


MISSING_PATTERNS = {
    "two_features": (0.2, 0.0, 0.1, 0.0),
    "every_feature": (0.5, 0.5, 0.5, 0.5),
    "train_without_nan": (0.0, 0.0, 0.0, 0.0),
}
CONFIGS = {
    "classification_depth_first": (
        "classification",
        2000,
        {"max_depth": 4, "min_samples_leaf": 40},
    ),
    "regression_depth_first": ("regression", 300, {"max_depth": 6, "min_samples_leaf": 5}),
    "regression_best_first": ("regression", 300, {"max_leaf_nodes": 12, "min_samples_leaf": 5}),
}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pattern", list(MISSING_PATTERNS))
@pytest.mark.parametrize("config", list(CONFIGS))
def test_same_trees_and_predictions_as_scikit_learn(config, pattern, seed):
    """Feature, threshold (+inf for 'observed left, NaN right'), missing_go_to_left, node
    sizes and values equal scikit-learn's; predictions equal on test rows with NaN in every
    column (also for trees fitted without NaN: NaN then goes to the larger child)."""
    task, n, params = CONFIGS[config]
    X, y = _data(seed, n, task, MISSING_PATTERNS[pattern])
    if task == "classification":
        sk = DecisionTreeClassifier(random_state=0, **params).fit(X, y)
        ours = CARTClassifier(**params).fit(X, y)
    else:
        sk = DecisionTreeRegressor(random_state=0, **params).fit(X, y)
        ours = CARTRegressor(**params).fit(X, y)
    _assert_same_tree(sk.tree_, ours.tree_, task)
    X_test, _ = _data(seed + 100, 500, task, (0.3, 0.3, 0.3, 0.3))
    np.testing.assert_allclose(ours.predict(X_test), sk.predict(X_test), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(ours.apply(X_test), sk.apply(X_test))
    if task == "classification":
        np.testing.assert_allclose(ours.predict_proba(X_test), sk.predict_proba(X_test))


def test_observed_values_against_the_missing_ones_as_scikit_learn():
    """A feature whose observed values are constant still splits its NaN rows off
    (threshold +inf, NaN right), as scikit-learn does; the NaN rows carry the signal."""
    rng = np.random.default_rng(3)
    n = 200
    X = np.column_stack([np.ones(n), rng.normal(size=n).astype(np.float32)])
    missing = rng.random(n) < 0.3
    X[missing, 0] = np.nan
    y = np.where(missing, 5.0, 0.0) + rng.normal(scale=0.1, size=n)
    sk = DecisionTreeRegressor(max_depth=1).fit(X, y)
    ours = CARTRegressor(max_depth=1).fit(X, y)
    _assert_same_tree(sk.tree_, ours.tree_, "regression")
    assert ours.tree_.feature[0] == 0 and ours.tree_.threshold[0] == np.inf
    assert ours.tree_.missing_go_to_left[0] == 0
    assert ours.tree_.n_missing[0] == missing.sum()
    # JSON keeps the infinite threshold
    back = type(ours.tree_).from_json(ours.tree_.to_json())
    assert back.threshold[0] == np.inf and back.n_missing[0] == missing.sum()


def _sse(y):
    return float(((y - y.mean()) ** 2).sum()) if y.size else 0.0


@pytest.mark.parametrize("seed", range(30))
def test_root_split_is_the_brute_force_optimum_on_tiny_inputs(seed):
    """Tiny regression inputs (6-9 rows, 2-3 features, NaN anywhere, continuous y: no
    ties): the root's split is the one with the least squared error over every feature,
    every threshold between distinct observed values plus 'all observed | NaN', and both
    sides for the NaN rows."""
    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(6, 10)), int(rng.integers(2, 4))
    X = rng.normal(size=(n, p))
    X[rng.random((n, p)) < 0.3] = np.nan
    y = rng.normal(size=n)
    best = (np.inf, None)
    for f in range(p):
        x = X[:, f]
        nan = np.isnan(x)
        u = np.unique(x[~nan])
        thresholds = list((u[:-1] + u[1:]) / 2) + ([np.inf] if nan.any() else [])
        for t in thresholds:
            for nan_left in (False, True) if (nan.any() and t != np.inf) else (False,):
                left = np.where(nan, nan_left, x <= t)
                if left.all() or not left.any():
                    continue
                cost = _sse(y[left]) + _sse(y[~left])
                if cost < best[0] - 1e-12:
                    best = (cost, left)
    grown = build_tree(X, y, n_classes=0, max_depth=1)
    if best[1] is None:
        assert grown.children_left[0] == -1
        return
    tree = grown.tree_arrays()
    leaf = tree.apply(X)
    left = leaf == tree.children_left[0]
    # the same partition (a split and its mirror are one partition)
    assert np.array_equal(left, best[1]) or np.array_equal(left, ~best[1])
    assert _sse(y[left]) + _sse(y[~left]) == pytest.approx(best[0], abs=1e-12)


def _node_rows(tree, X):
    """bool ``(n_rows, n_nodes)``: the nodes each row passes through."""
    out = np.zeros((X.shape[0], tree.node_count), dtype=bool)
    for i in range(X.shape[0]):
        out[i, tree.decision_path(X[i])] = True
    return out


@pytest.mark.parametrize("splitter", STRATEGIES)
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_every_strategy_routes_the_training_rows_it_counted(splitter, task):
    """Every split strategy, with NaN in three columns and a categorical column with NaN:
    the training rows routed by the fitted tree (NaN by missing_go_to_left) reach exactly
    the node sizes and values the fit recorded, ``n_missing`` is the number of NaN rows at
    each split, and the side chosen for them is never worse than the other side at the
    same threshold / category set."""
    if task == "regression" and splitter in LABEL_AWARE:
        pytest.skip("a classification-only strategy")
    X, y = _data(7, 400, task, (0.25, 0.1, 0.0, 0.4))
    rng = np.random.default_rng(0)
    X[:, 2] = rng.integers(0, 4, size=X.shape[0])  # categorical codes
    X[rng.random(X.shape[0]) < 0.2, 2] = np.nan
    y = y + (X[:, 2] == 1) if task == "regression" else y
    cls = CARTClassifier if task == "classification" else CARTRegressor
    est = cls(splitter=splitter, max_depth=5, categorical_features=[2], random_state=0)
    tree = est.fit(X, y).tree_
    paths = _node_rows(tree, X)
    np.testing.assert_array_equal(paths.sum(axis=0), tree.n_node_samples)
    internal = np.flatnonzero(~tree.is_leaf)
    assert tree.n_missing[internal].sum() > 0
    codes = np.searchsorted(est.classes_, y) if task == "classification" else None
    for node in internal:
        rows = paths[:, node]
        f = tree.feature[node]
        nan = np.isnan(X[rows, f])
        assert tree.n_missing[node] == nan.sum()
        went_left = paths[rows, tree.children_left[node]]
        yy = codes[rows] if codes is not None else y[rows]
        if task == "classification":
            mean = np.bincount(yy[went_left], minlength=len(est.classes_)) / went_left.sum()
            np.testing.assert_allclose(tree.value[tree.children_left[node], 0], mean)
        else:
            assert tree.value[tree.children_left[node], 0, 0] == pytest.approx(yy[went_left].mean())
        if not nan.any():
            assert tree.missing_go_to_left[node] == (went_left.sum() > (~went_left).sum())
            continue
        # the other side for the NaN rows is not better
        other = np.where(nan, ~went_left, went_left)
        if other.all() or not other.any():
            continue

        def cost(left, yy=yy):
            if task == "regression":
                return _sse(yy[left]) + _sse(yy[~left])
            total = 0.0
            for part in (yy[left], yy[~left]):
                share = np.bincount(part, minlength=len(est.classes_)) / part.size
                total += part.size * (1 - (share**2).sum())
            return total

        assert cost(went_left) <= cost(other) + 1e-9


def test_nan_free_trees_are_unchanged_and_route_nan_to_the_larger_child():
    """Without NaN in training the tree is the one fitted before missing values were
    supported (same splits as scikit-learn on tie-free data), and NaN met later goes to
    the child with more training rows at every split."""
    X, y = _data(11, 500, "regression", (0, 0, 0, 0))
    tree = CARTRegressor(max_depth=5, min_samples_leaf=5).fit(X, y).tree_
    internal = ~tree.is_leaf
    larger_left = (
        tree.n_node_samples[tree.children_left[internal]]
        > tree.n_node_samples[tree.children_right[internal]]
    )
    np.testing.assert_array_equal(tree.missing_go_to_left[internal], larger_left)
    assert not tree.n_missing.any()


def test_tree_figure_hover_shows_the_missing_rows_routed():
    """Each split's hover says where missing values go and how many training rows with a
    missing value it routed that way (the fitted ``n_missing``)."""
    from engine.figures.tree import tree_figure

    X, y = _data(2, 300, "regression", (0.3, 0.0, 0.0, 0.0))
    tree = CARTRegressor(max_depth=2, min_samples_leaf=5).fit(X, y).tree_
    fig = tree_figure(tree)
    hovers = [h for trace in fig.data for h in (trace.hovertext or ())]
    root = next(h for h in hovers if h.startswith("<b>node 0</b>"))
    side = "left" if tree.missing_go_to_left[0] else "right"
    assert f"missing values \u2192 {side} ({tree.n_missing[0]} training rows routed so)" in root
    assert tree.n_missing[0] == np.isnan(X[:, tree.feature[0]]).sum()


def test_missing_counts_rebuild_the_recorded_n_missing():
    """TreeArrays.missing_counts on the training rows equals the n_missing our CART
    recorded while growing, and a per-row walk of decision_path on a scikit-learn tree
    (which records none)."""
    import dataclasses

    from sklearn.tree import DecisionTreeClassifier

    from engine.cart import CARTClassifier
    from engine.tree import from_sklearn

    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 4))
    y = (np.nan_to_num(X[:, 0]) + X[:, 1] > 0).astype(int)
    X[rng.random(X.shape) < 0.2] = np.nan
    ours = CARTClassifier(max_depth=5).fit(X, y).tree_
    assert ours.n_missing is not None and ours.n_missing.sum() > 50
    np.testing.assert_array_equal(ours.missing_counts(X), ours.n_missing)
    tree = from_sklearn(DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y))
    expected = np.zeros(tree.node_count, dtype=np.int64)
    for x in X:
        for node in tree.decision_path(x)[:-1]:
            expected[node] += np.isnan(x[tree.feature[node]])
    counts = tree.missing_counts(X)
    np.testing.assert_array_equal(counts, expected)
    assert counts.sum() > 50
    dataclasses.replace(tree, n_missing=counts)  # valid: within n_node_samples
