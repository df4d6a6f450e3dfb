"""TreeGrad on rows with missing values (issue 14 point 4): a NaN feature value follows the
path the tree takes (``missing_go_to_left`` at every split of the multilinear extension),
as shap's ``TreeExplainer`` does for scikit-learn trees fitted with missing values.

Oracles: ``shap.TreeExplainer`` (path-dependent Shapley values) on scikit-learn trees
fitted with NaN, to 1e-10; the brute-force game over all subsets on a small tree.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import engine.treegrad as tg
from engine.cart import CARTClassifier, CARTRegressor
from engine.tree import from_sklearn

shap = pytest.importorskip("shap")


def _data(seed, n=300, p=5, rate=0.25):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.1, size=n)
    X[rng.random((n, p)) < rate] = np.nan
    return X, y


@pytest.mark.parametrize("seed", range(3))
def test_shapley_on_nan_rows_equals_shap_regression(seed):
    X, y = _data(seed)
    model = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, y)
    rows = X[:40]
    assert np.isnan(rows).any(axis=1).sum() >= 20
    expected = shap.TreeExplainer(model).shap_values(rows)
    np.testing.assert_allclose(tg.shapley(model, rows), expected, atol=1e-10, rtol=0)
    # one row at a time (the serial walk kernel) and the converted tree give the same
    tree = from_sklearn(model)
    np.testing.assert_allclose(tg.shapley(tree, rows[3]), expected[3], atol=1e-10, rtol=0)


@pytest.mark.parametrize("seed", range(2))
def test_shapley_on_nan_rows_equals_shap_classification(seed):
    X, y = _data(seed)
    labels = (y > np.median(y)).astype(int) + (y > np.quantile(y, 0.8))
    model = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, labels)
    rows = X[:30]
    expected = shap.TreeExplainer(model).shap_values(rows)  # (rows, features, classes)
    for c in range(3):
        np.testing.assert_allclose(
            tg.shapley(model, rows, class_index=c), expected[:, :, c], atol=1e-10, rtol=0
        )


def test_our_cart_trees_explain_nan_rows_like_shap_on_the_same_tree():
    """A CART tree of ours fitted with NaN, converted to scikit-learn's arrays by
    fitting scikit-learn on the same tie-free data (identical trees, see
    tests/test_cart_missing.py): the same Shapley values."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 4)).astype(np.float32).astype(np.float64)
    y = X[:, 0] + np.sin(X[:, 1]) + rng.normal(scale=0.3, size=400)
    X[rng.random((400, 4)) < 0.2] = np.nan
    ours = CARTRegressor(max_depth=5, min_samples_leaf=5).fit(X, y)
    sk = DecisionTreeRegressor(max_depth=5, min_samples_leaf=5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(ours.tree_.feature, sk.tree_.feature)
    rows = X[:25]
    np.testing.assert_allclose(
        tg.shapley(ours, rows), shap.TreeExplainer(sk).shap_values(rows), atol=1e-10, rtol=0
    )


@pytest.mark.slow
def test_banzhaf_and_the_game_follow_the_missing_side_brute_force():
    """Small categorical + numeric CART with NaN: the game f_x(S) (the expectation over the
    features outside S, the features in S - including NaN ones - routed by the tree)
    matches a brute-force recursion, and Banzhaf / Shapley equal their subset sums."""
    rng = np.random.default_rng(2)
    n = 200
    X = rng.normal(size=(n, 3))
    X[:, 2] = rng.integers(0, 3, size=n)
    labels = ((X[:, 0] > 0) ^ (X[:, 2] == 1)).astype(int)
    X[rng.random((n, 3)) < 0.3] = np.nan
    model = CARTClassifier(max_depth=4, categorical_features=[2]).fit(X, labels)
    tree = model.tree_
    assert tree.n_missing[~tree.is_leaf].sum() > 0
    x = X[np.isnan(X).any(axis=1)][0]
    frac = tree.value[:, 0, 1] / tree.value[:, 0, :].sum(axis=1)

    def game(S):
        def rec(node):
            if tree.children_left[node] < 0:
                return frac[node]
            f = tree.feature[node]
            left, right = tree.children_left[node], tree.children_right[node]
            if f in S:
                return rec(left) if tree._goes_left(node, x[f]) else rec(right)
            w = tree.weighted_n_node_samples
            return (w[left] * rec(left) + w[right] * rec(right)) / w[node]

        return rec(0)

    p = 3
    for S in itertools.chain.from_iterable(itertools.combinations(range(p), k) for k in range(4)):
        mask = np.zeros(p, dtype=bool)
        mask[list(S)] = True
        assert tg.game_value(model, x, mask) == pytest.approx(game(set(S)), abs=1e-12)
    shapley = np.zeros(p)
    banzhaf = np.zeros(p)
    for i in range(p):
        others = [j for j in range(p) if j != i]
        for k in range(p):
            for S in itertools.combinations(others, k):
                gain = game(set(S) | {i}) - game(set(S))
                shapley[i] += (
                    gain * math.factorial(k) * math.factorial(p - k - 1) / math.factorial(p)
                )
                banzhaf[i] += gain / 2 ** (p - 1)
    np.testing.assert_allclose(tg.shapley(model, x), shapley, atol=1e-12)
    np.testing.assert_allclose(tg.banzhaf(model, x), banzhaf, atol=1e-12)
    # the full coalition is the prediction of the row with its NaN
    assert tg.multilinear(model, x, 1.0) == pytest.approx(model.predict_proba(x[None])[0, 1])


# -- ensembles: forests and boosting route NaN tree by tree --------------------------------
@pytest.mark.parametrize("seed", range(2))
def test_random_forest_shapley_on_nan_rows_equals_shap(seed):
    """A random forest fitted with NaN (every tree its own missing_go_to_left): TreeGrad's
    Shapley values on NaN rows equal shap's TreeExplainer to 1e-10, for regression and
    each of 3 classes."""
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    X, y = _data(seed)
    rows = X[:30]
    assert np.isnan(rows).any(axis=1).sum() >= 15
    forest = RandomForestRegressor(n_estimators=12, max_depth=6, random_state=seed).fit(X, y)
    expected = shap.TreeExplainer(forest).shap_values(rows)
    assert np.abs(expected).max() > 0.05  # a real explanation
    np.testing.assert_allclose(tg.shapley(forest, rows), expected, atol=1e-10, rtol=0)
    labels = (y > np.median(y)).astype(int) + (y > np.quantile(y, 0.8))
    forest = RandomForestClassifier(n_estimators=8, max_depth=5, random_state=seed)
    forest.fit(X, labels)
    expected = shap.TreeExplainer(forest).shap_values(rows)  # (rows, features, classes)
    for c in range(3):
        np.testing.assert_allclose(
            tg.shapley(forest, rows, class_index=c), expected[:, :, c], atol=1e-10, rtol=0
        )


@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_xgboost_shapley_on_nan_rows_equals_shap(task):
    """XGBoost fitted with NaN, explained on NaN rows: TreeGrad equals shap's float64
    TreeSHAP on shap's own reading of the trees (one output at a time) to 1e-10, and
    XGBoost's float32 TreeSHAP (pred_contribs) to float32 rounding."""
    xgb = pytest.importorskip("xgboost")
    from engine.tree import from_xgboost

    X, y = _data(3, n=500)
    X = X.astype(np.float32).astype(np.float64)  # float32 values: both readers agree
    if task == "regression":
        model = xgb.XGBRegressor(n_estimators=20, max_depth=4, n_jobs=1).fit(X, y)
    else:
        labels = (y > np.median(y)).astype(int) + (y > np.quantile(y, 0.8))
        model = xgb.XGBClassifier(n_estimators=10, max_depth=3, n_jobs=1).fit(X, labels)
    rows = X[:40]
    assert np.isnan(rows).any(axis=1).sum() >= 20
    ens = from_xgboost(model)
    explainer = shap.TreeExplainer(model)
    own = np.asarray(explainer.shap_values(rows))
    k_out = ens.base.shape[0]
    for k in range(k_out):
        ours = tg.shapley(ens, rows, class_index=k if k_out > 1 else None)
        shap_trees = explainer.model.trees[k::k_out]
        ref = shap.TreeExplainer(shap_trees).shap_values(rows, check_additivity=False)
        np.testing.assert_allclose(ours, ref, atol=1e-10, rtol=0)
        assert np.abs(ref).max() > 0.05
        np.testing.assert_allclose(ours, own if own.ndim == 2 else own[:, :, k], atol=1e-5)
