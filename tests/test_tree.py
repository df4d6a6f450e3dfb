"""engine.tree: TreeArrays / TreeEnsemble against the oracle, scikit-learn 1.9's own
``apply``/``predict``/``predict_proba``/``decision_function``/``decision_path``."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn import datasets
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor, ExtraTreeClassifier

from engine import _numba
from engine.tree import TreeArrays, TreeEnsemble, from_sklearn

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "assets" / "datasets" / "catalog.json"


# ---------------------------------------------------------------------------------------
# datasets: the bundled catalog, or scikit-learn's loaders when it is absent
# ---------------------------------------------------------------------------------------


def _encode_features(df: pd.DataFrame) -> np.ndarray:
    """Numeric columns as they are; non-numeric ones one-hot encoded (simple, for tests)."""
    numeric = df.select_dtypes(include=["number", "bool"]).astype(np.float64)
    other = df.drop(columns=numeric.columns)
    parts = [numeric]
    if other.shape[1]:
        parts.append(pd.get_dummies(other.astype(str), dtype=np.float64))
    return np.ascontiguousarray(pd.concat(parts, axis=1).to_numpy(dtype=np.float64))


def _load_catalog() -> dict[str, tuple[np.ndarray, np.ndarray, str]]:
    if not CATALOG.exists():
        return {}
    catalog = json.loads(CATALOG.read_text())
    out = {}
    for name, entry in catalog.items():
        path = CATALOG.parent / entry["file"]
        if not path.exists():
            continue
        df = pd.read_csv(path).dropna()
        y = df[entry["target"]].to_numpy()
        X = _encode_features(df.drop(columns=[entry["target"]]))
        if entry["task"] == "regression":
            y = y.astype(np.float64)
        out[name] = (X, y, entry["task"])
    return out


def _load_fallback() -> dict[str, tuple[np.ndarray, np.ndarray, str]]:
    out = {}
    for name, loader, task in (
        ("iris", datasets.load_iris, "classification"),
        ("wine", datasets.load_wine, "classification"),
        ("breast_cancer", datasets.load_breast_cancer, "classification"),
        ("digits", datasets.load_digits, "classification"),
        ("diabetes", datasets.load_diabetes, "regression"),
    ):
        X, y = loader(return_X_y=True)
        out[name] = (np.ascontiguousarray(X, dtype=np.float64), y, task)
    return out


DATA = _load_catalog() or _load_fallback()


def _threshold_probes(tree: TreeArrays, X: np.ndarray) -> np.ndarray:
    """Rows whose split feature sits exactly on, just below and just above each threshold:
    the cases where float64 vs float32 comparison could route differently."""
    rows = []
    internal = np.flatnonzero(~tree.is_leaf)[:200]
    for i, node in enumerate(internal):
        t = tree.threshold[node]
        for v in (
            t,
            np.nextafter(t, -np.inf),
            np.nextafter(t, np.inf),
            float(np.float32(t)),
            t + 1e-9,
            t - 1e-9,
        ):
            r = X[i % X.shape[0]].copy()
            r[tree.feature[node]] = v
            rows.append(r)
    return np.asarray(rows) if rows else X[:1]


# ---------------------------------------------------------------------------------------
# single trees
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DATA))
@pytest.mark.parametrize("max_depth", [1, 3, None])
def test_single_tree_matches_sklearn(name, max_depth):
    X, y, task = DATA[name]
    cls = DecisionTreeClassifier if task == "classification" else DecisionTreeRegressor
    est = cls(max_depth=max_depth, random_state=0).fit(X, y)
    tree = from_sklearn(est)
    assert isinstance(tree, TreeArrays)
    assert tree.node_count == est.tree_.node_count
    assert tree.n_leaves == est.get_n_leaves()
    assert tree.max_depth == est.get_depth()
    rng = np.random.default_rng(0)
    X_all = np.vstack([X, X + rng.normal(scale=0.05, size=X.shape), _threshold_probes(tree, X)])
    assert np.array_equal(tree.apply(X_all), est.apply(X_all))
    if task == "classification":
        assert np.array_equal(tree.predict(X_all), est.predict(X_all))
        np.testing.assert_allclose(
            tree.predict_proba(X_all), est.predict_proba(X_all), rtol=0, atol=1e-12
        )
        np.testing.assert_array_equal(tree.classes_, est.classes_)
    else:
        np.testing.assert_allclose(tree.predict(X_all), est.predict(X_all), rtol=0, atol=1e-12)
        assert tree.predict_value(X_all).shape == (X_all.shape[0], 1)


def test_decision_path_equals_sklearn():
    X, y, _ = DATA["wine"] if "wine" in DATA else next(iter(DATA.values()))
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    tree = from_sklearn(est)
    indicator = est.decision_path(X)
    for i in range(0, X.shape[0], 7):
        path = tree.decision_path(X[i])
        assert path[0] == 0 and path[-1] == est.apply(X[i : i + 1])[0]
        assert np.array_equal(np.sort(path), np.flatnonzero(indicator[i].toarray().ravel()))
        assert np.array_equal(tree.decision_path(X[i : i + 1]), path)


def test_feature_names_from_dataframe_and_rule():
    d = datasets.load_iris(as_frame=True)
    est = DecisionTreeClassifier(max_depth=2, random_state=0).fit(d.data, d.target)
    tree = from_sklearn(est)
    assert tree.feature_names == list(d.data.columns)
    assert tree.rule(0) == "petal width (cm) <= 0.8"
    assert tree.rule(0, branch="right") == "petal width (cm) > 0.8"
    assert tree.rule(0, ["a", "b", "c", "d"], decimals=2) == "d <= 0.80"
    with pytest.raises(ValueError, match="leaf"):
        tree.rule(1)
    # DataFrame rows are accepted for prediction too
    assert np.array_equal(tree.predict(d.data), est.predict(d.data))


def test_depth_equals_bruteforce_bfs():
    X, y, task = DATA["digits"] if "digits" in DATA else next(iter(DATA.values()))
    est = DecisionTreeClassifier(random_state=1).fit(X, y)
    tree = from_sklearn(est)
    depth = np.full(tree.node_count, -1)
    queue = deque([(0, 0)])
    while queue:
        node, d = queue.popleft()
        depth[node] = d
        if tree.children_left[node] != -1:
            queue.append((tree.children_left[node], d + 1))
            queue.append((tree.children_right[node], d + 1))
    assert np.array_equal(tree.depth, depth)
    assert tree.max_depth == depth.max() == est.get_depth()
    assert tree.parent[0] == -1
    assert np.all(tree.depth[1:] == tree.depth[tree.parent[1:]] + 1)


def test_to_frame():
    d = datasets.load_iris()
    est = DecisionTreeClassifier(max_depth=2, random_state=0).fit(d.data, d.target)
    tree = from_sklearn(est, feature_names=d.feature_names)
    df = tree.to_frame(class_names=list(d.target_names))
    assert len(df) == tree.node_count
    for col in (
        "node",
        "depth",
        "parent",
        "feature",
        "threshold",
        "rule",
        "n_samples",
        "impurity",
        "is_leaf",
        "p(setosa)",
        "majority_class",
    ):
        assert col in df.columns
    assert df.loc[0, "rule"] == "petal width (cm) <= 0.8"
    assert df.loc[1, "majority_class"] == "setosa"
    assert df["is_leaf"].sum() == tree.n_leaves


# ---------------------------------------------------------------------------------------
# ensembles
# ---------------------------------------------------------------------------------------


def _clf_data():
    return DATA["wine"][:2] if "wine" in DATA else datasets.load_wine(return_X_y=True)


def _binary_data():
    if "breast_cancer" in DATA:
        return DATA["breast_cancer"][:2]
    return datasets.load_breast_cancer(return_X_y=True)


def _reg_data():
    return DATA["diabetes"][:2] if "diabetes" in DATA else datasets.load_diabetes(return_X_y=True)


@pytest.mark.parametrize("cls", [RandomForestClassifier, ExtraTreesClassifier])
def test_forest_classifier_matches_sklearn(cls):
    X, y = _clf_data()
    est = cls(n_estimators=15, max_depth=6, random_state=0).fit(X, y)
    ens = from_sklearn(est)
    assert isinstance(ens, TreeEnsemble) and ens.kind == "forest" and ens.n_trees == 15
    assert ens.scale == pytest.approx(1 / 15)
    np.testing.assert_allclose(ens.predict_proba(X), est.predict_proba(X), rtol=0, atol=1e-12)
    np.testing.assert_allclose(ens.predict_raw(X), est.predict_proba(X), rtol=0, atol=1e-12)
    assert np.array_equal(ens.predict(X), est.predict(X))
    assert np.array_equal(ens.apply(X), est.apply(X))


def test_forest_regressor_matches_sklearn():
    X, y = _reg_data()
    est = RandomForestRegressor(n_estimators=12, random_state=0).fit(X, y)
    ens = from_sklearn(est)
    np.testing.assert_allclose(ens.predict(X), est.predict(X), rtol=0, atol=1e-12)
    assert ens.predict(X).shape == (X.shape[0],)
    assert np.array_equal(ens.apply(X), est.apply(X))
    with pytest.raises(ValueError, match="regression"):
        ens.predict_proba(X)


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["log_loss", "exponential"])
def test_gradient_boosting_binary_matches_sklearn(loss):
    X, y = _binary_data()
    est = GradientBoostingClassifier(n_estimators=30, max_depth=3, loss=loss, random_state=0).fit(
        X, y
    )
    ens = from_sklearn(est)
    assert ens.kind == "boosting" and ens.scale == est.learning_rate
    raw = ens.predict_raw(X)
    assert raw.shape == (X.shape[0],)
    np.testing.assert_allclose(raw, est.decision_function(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ens.predict_proba(X), est.predict_proba(X), rtol=0, atol=1e-10)
    assert np.array_equal(ens.predict(X), est.predict(X))
    assert np.array_equal(ens.apply(X), est.apply(X).reshape(X.shape[0], -1))


def test_gradient_boosting_multiclass_matches_sklearn():
    X, y = _clf_data()
    est = GradientBoostingClassifier(
        n_estimators=20, max_depth=2, learning_rate=0.3, random_state=0
    ).fit(X, y)
    ens = from_sklearn(est)
    K = len(est.classes_)
    assert ens.n_trees == 20 * K
    assert np.array_equal(ens.tree_output, np.tile(np.arange(K), 20))
    np.testing.assert_allclose(ens.predict_raw(X), est.decision_function(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ens.predict_proba(X), est.predict_proba(X), rtol=0, atol=1e-10)
    assert np.array_equal(ens.predict(X), est.predict(X))
    assert np.array_equal(ens.apply(X), est.apply(X).reshape(X.shape[0], -1))


@pytest.mark.slow
@pytest.mark.parametrize(
    "kw", [{}, {"init": "zero"}, {"loss": "huber"}, {"n_iter_no_change": 3, "n_estimators": 500}]
)
def test_gradient_boosting_regressor_matches_sklearn(kw):
    X, y = _reg_data()
    est = GradientBoostingRegressor(**{"n_estimators": 40, "random_state": 0, **kw}).fit(X, y)
    ens = from_sklearn(est)
    np.testing.assert_allclose(ens.predict(X), est.predict(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ens.base, est._raw_predict_init(X[:1])[0], rtol=0, atol=0)


def test_ensemble_json_round_trip():
    X, y = _clf_data()
    est = GradientBoostingClassifier(n_estimators=5, random_state=0).fit(X, y)
    ens = from_sklearn(est)
    back = TreeEnsemble.from_json(ens.to_json())
    assert back.kind == ens.kind and back.link == ens.link and back.scale == ens.scale
    assert np.array_equal(back.base, ens.base)
    assert np.array_equal(back.predict_raw(X), ens.predict_raw(X))
    assert np.array_equal(back.classes_, ens.classes_)


# ---------------------------------------------------------------------------------------
# serialisation, extras, categorical splits
# ---------------------------------------------------------------------------------------


def _tree_with_extras(rng) -> TreeArrays:
    d = datasets.load_iris()
    base = from_sklearn(
        DecisionTreeClassifier(max_depth=3, random_state=0).fit(d.data, d.target),
        feature_names=d.feature_names,
    )
    n = base.node_count
    counts = rng.integers(0, 4, size=n)
    bp_offsets = np.concatenate([[0], np.cumsum(counts)])
    p_value = rng.random(n)
    p_value[base.is_leaf] = np.nan
    lower = rng.normal(size=n)
    upper = lower + rng.random(n)
    upper[0] = np.inf
    return TreeArrays(
        base.children_left,
        base.children_right,
        base.feature,
        base.threshold,
        base.impurity,
        base.n_node_samples,
        base.weighted_n_node_samples,
        base.value,
        task="classification",
        n_features=4,
        classes_=np.array(["setosa", "versicolor", "virginica"]),
        feature_names=base.feature_names,
        float32_inputs=True,
        p_value=p_value,
        bp_offsets=bp_offsets,
        bp_values=rng.normal(size=bp_offsets[-1]),
        lower_bound=lower,
        upper_bound=upper,
    )


ARRAYS = (
    "children_left",
    "children_right",
    "feature",
    "threshold",
    "impurity",
    "n_node_samples",
    "weighted_n_node_samples",
    "value",
    "p_value",
    "bp_offsets",
    "bp_values",
    "lower_bound",
    "upper_bound",
    "cat_offsets",
    "cat_values",
    "missing_go_to_left",
    "classes_",
)


def _assert_same_tree(a: TreeArrays, b: TreeArrays):
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        if x is None:
            assert y is None, name
            continue
        assert y is not None, name
        assert x.dtype.kind == y.dtype.kind, name
        assert x.shape == y.shape, name
        if x.dtype.kind == "f":
            assert np.array_equal(x, y, equal_nan=True), name
        else:
            assert np.array_equal(x, y), name
    for name in ("task", "n_features", "feature_names", "categories", "float32_inputs"):
        assert getattr(a, name) == getattr(b, name), name


def test_json_round_trip_is_lossless_with_extras():
    tree = _tree_with_extras(np.random.default_rng(3))
    s = tree.to_json()
    json.loads(s)  # strict JSON (no NaN / Infinity tokens)
    assert "NaN" not in s and "Infinity" not in s
    back = TreeArrays.from_json(s)
    _assert_same_tree(tree, back)
    assert TreeArrays.from_dict(tree.to_dict()).to_dict() == tree.to_dict()
    assert tree.to_dict()["format"] == "treelab.tree/1"


def test_json_round_trip_plain_regression_tree():
    X, y = _reg_data()
    tree = from_sklearn(DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y))
    back = TreeArrays.from_json(tree.to_json())
    _assert_same_tree(tree, back)
    assert back.to_dict()["p_value"] is None
    assert np.array_equal(back.predict(X), tree.predict(X))


def test_from_dict_rejects_unknown_format():
    with pytest.raises(ValueError, match="format"):
        TreeArrays.from_dict({"format": "something/2"})
    with pytest.raises(ValueError, match="invalid tree JSON"):
        TreeArrays.from_json("{not json")


def _categorical_tree() -> TreeArrays:
    # root: colour in {red, blue} -> left leaf; else size <= 2.5 -> leaves
    return TreeArrays(
        [1, -1, 3, -1, -1],
        [2, -1, 4, -1, -1],
        [0, -2, 1, -2, -2],
        [np.nan, -2.0, 2.5, -2.0, -2.0],
        [0.6, 0.0, 0.5, 0.0, 0.0],
        [9, 4, 5, 2, 3],
        [9.0, 4.0, 5.0, 2.0, 3.0],
        [[1 / 3, 1 / 3, 1 / 3], [1, 0, 0], [0, 0.4, 0.6], [0, 1, 0], [0, 0, 1]],
        task="classification",
        n_features=2,
        classes_=np.array(["a", "b", "c"]),
        feature_names=["colour", "size"],
        categories=[["red", "green", "blue"], None],
        cat_offsets=[0, 2, 2, 2, 2, 2],
        cat_values=[0, 2],
    )


def test_categorical_set_routing():
    tree = _categorical_tree()
    X = np.array([[0, 9.0], [2, 0.0], [1, 1.0], [1, 2.5], [1, 3.0]])
    assert np.array_equal(tree.apply(X), [1, 1, 3, 3, 4])
    assert np.array_equal(tree.predict(X), ["a", "a", "b", "b", "c"])
    assert np.array_equal(tree.decision_path(X[4]), [0, 2, 4])
    assert tree.rule(0) == "colour in {red, blue}"
    assert tree.rule(0, branch="right") == "colour not in {red, blue}"
    _assert_same_tree(tree, TreeArrays.from_json(tree.to_json()))


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def iris_tree():
    X, y = datasets.load_iris(return_X_y=True)
    return from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y)), X


def test_nan_in_X_raises_for_a_tree_without_a_missing_value_rule(iris_tree):
    sk_tree, X = iris_tree
    tree = TreeArrays.from_dict({**sk_tree.to_dict(), "missing_go_to_left": None})
    assert not tree.routes_missing
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN.*row 3.*no rule for missing values"):
        tree.predict(Xn)
    with pytest.raises(ValueError, match="missing values"):
        tree.decision_path(Xn[3])


def _nan_rows(rng, shape, fraction):
    X = rng.normal(size=shape)
    X[rng.random(shape) < fraction] = np.nan
    return X


@pytest.mark.parametrize("nan_in_training", [True, False])
@pytest.mark.parametrize(
    "model",
    [
        DecisionTreeClassifier(max_depth=7, random_state=0),
        DecisionTreeRegressor(max_depth=7, random_state=0),
        ExtraTreeClassifier(max_depth=7, random_state=0),
    ],
    ids=["cart-classifier", "cart-regressor", "extra-tree"],
)
def test_missing_values_route_as_scikit_learn(model, nan_in_training):
    """scikit-learn >= 1.3 learns a side for NaN per split (the child with more rows when
    training saw none); the imported tree sends NaN rows to the same leaves."""
    rng = np.random.default_rng(3)
    X = _nan_rows(rng, (600, 5), 0.2 if nan_in_training else 0.0)
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) > 0).astype(int)
    if isinstance(model, DecisionTreeRegressor):
        y = y + np.nan_to_num(X[:, 2])
    model.fit(X, y)
    tree = from_sklearn(model)
    assert tree.routes_missing
    X_test = _nan_rows(rng, (3000, 5), 0.3)
    np.testing.assert_array_equal(tree.apply(X_test), model.apply(X_test))
    np.testing.assert_array_equal(tree.predict(X_test), model.predict(X_test))
    for i in range(20):
        expected = model.decision_path(X_test[i : i + 1]).indices
        np.testing.assert_array_equal(tree.decision_path(X_test[i]), expected)
    # both sides are used, so the test would fail with NaN always sent one way
    internal = ~tree.is_leaf
    assert 0 < tree.missing_go_to_left[internal].sum() < internal.sum()


def _stump_with(**extras):
    return TreeArrays(
        [1, -1, -1],
        [2, -1, -1],
        [0, -2, -2],
        [0.5, -2.0, -2.0],
        [0.5, 0.0, 0.0],
        [4, 2, 2],
        [4.0, 2.0, 2.0],
        [[[0.5, 0.5]], [[1.0, 0.0]], [[0.0, 1.0]]],
        task="classification",
        n_features=1,
        classes_=np.array([0, 1]),
        **extras,
    )


@pytest.mark.parametrize(
    "extras",
    [
        {},
        {"cat_offsets": [0, 2, 2, 2], "cat_values": [0, 2]},
        {"bp_offsets": [0, 2, 2, 2], "bp_values": [0.25, 0.75]},
    ],
    ids=["threshold", "category-set", "shape-function"],
)
@pytest.mark.parametrize("side", [0, 1])
def test_missing_side_applies_to_every_split_kind(extras, side):
    plain = _stump_with(**extras)
    tree = _stump_with(**extras, missing_go_to_left=[side, 0, 0])
    X = np.array([[0.0], [1.0], [2.0], [0.5], [np.nan]])
    # rows with a value go where the NaN-free kernel sends them
    np.testing.assert_array_equal(tree.apply(X[:4]), plain.apply(X[:4]))
    np.testing.assert_array_equal(tree.apply(X)[:4], plain.apply(X[:4]))
    assert tree.apply(X)[4] == (1 if side else 2)
    assert tree.decision_path(X[4]).tolist() == [0, 1 if side else 2]


def test_missing_side_is_validated_and_round_trips():
    with pytest.raises(ValueError, match="missing_go_to_left must hold 0 or 1"):
        _stump_with(missing_go_to_left=[2, 0, 0])
    with pytest.raises(ValueError, match="missing_go_to_left"):
        _stump_with(missing_go_to_left=[1, 0])
    tree = _stump_with(missing_go_to_left=[1, 1, 1])
    assert tree.missing_go_to_left.tolist() == [1, 0, 0]  # 0 at leaves
    back = TreeArrays.from_json(tree.to_json())
    assert back.missing_go_to_left.dtype == np.uint8
    assert back.missing_go_to_left.tolist() == [1, 0, 0]
    assert TreeArrays.from_json(_stump_with().to_json()).missing_go_to_left is None


def test_wrong_shape_raises(iris_tree):
    tree, X = iris_tree
    with pytest.raises(ValueError, match="3 columns.*n_features = 4"):
        tree.apply(X[:, :3])
    with pytest.raises(ValueError, match="2-D"):
        tree.apply(X[0])
    with pytest.raises(ValueError, match="numeric"):
        tree.apply(np.array([["a", "b", "c", "d"]]))


def test_readonly_and_non_contiguous_rows(iris_tree):
    tree, X = iris_tree
    Xr = np.asfortranarray(X)
    Xr.setflags(write=False)
    assert np.array_equal(tree.apply(Xr), tree.apply(X))
    assert np.array_equal(tree.apply(X.astype(np.float32)), tree.apply(X))


def test_unfitted_and_unsupported_estimators():
    with pytest.raises(ValueError, match="DecisionTreeClassifier is not fitted"):
        from_sklearn(DecisionTreeClassifier())
    with pytest.raises(ValueError, match="RandomForestRegressor is not fitted"):
        from_sklearn(RandomForestRegressor())
    with pytest.raises(TypeError, match="LogisticRegression.*supported: DecisionTreeClassifier"):
        from_sklearn(LogisticRegression())
    X, y = datasets.load_iris(return_X_y=True)
    with pytest.raises(TypeError, match="HistGradientBoostingClassifier"):
        from_sklearn(HistGradientBoostingClassifier(max_iter=2).fit(X, y))


def test_multi_output_raises():
    X, y = datasets.load_iris(return_X_y=True)
    Y = np.column_stack([y, y[::-1]])
    with pytest.raises(ValueError, match="multi-output"):
        from_sklearn(DecisionTreeClassifier().fit(X, Y))
    with pytest.raises(ValueError, match="multi-output"):
        from_sklearn(RandomForestRegressor(n_estimators=2).fit(X, Y.astype(float)))


def test_invalid_arrays_name_the_array():
    ok = dict(
        children_left=[1, -1, -1],
        children_right=[2, -1, -1],
        feature=[0, -2, -2],
        threshold=[0.5, -2, -2],
        impurity=[0.5, 0, 0],
        n_node_samples=[2, 1, 1],
        weighted_n_node_samples=[2.0, 1, 1],
        value=[[[1.0]], [[0.0]], [[2.0]]],
    )
    TreeArrays(**ok, task="regression", n_features=1)
    cases = [
        ({"children_right": [2, -1]}, "children_right has length 2"),
        ({"feature": [3, -2, -2]}, "feature holds an index outside"),
        ({"feature": [0, 0, -2]}, "feature must be -2"),
        ({"children_left": [1, -1, 2]}, "disagree at node 2"),
        ({"children_right": [1, -1, -1]}, "more than one parent"),
        ({"value": [[[1.0, 2.0]]] * 3}, "regression tree must have 1 column"),
        ({"threshold": [np.nan, -2, -2]}, "threshold is NaN"),
        ({"n_node_samples": [2.5, 1, 1]}, "n_node_samples must hold integers"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=message):
            TreeArrays(**{**ok, **change}, task="regression", n_features=1)
    with pytest.raises(ValueError, match="task must be one of"):
        TreeArrays(**ok, task="ranking", n_features=1)
    with pytest.raises(ValueError, match="classes_ is required"):
        TreeArrays(**ok, task="classification", n_features=1)
    with pytest.raises(ValueError, match="bp_offsets"):
        TreeArrays(
            **ok, task="regression", n_features=1, bp_offsets=[0, 1, 1, 3], bp_values=[1.0, 2.0]
        )
    with pytest.raises(ValueError, match="multi-output"):
        TreeArrays(**{**ok, "value": np.zeros((3, 2, 1))}, task="regression", n_features=1)


def test_warmup_registered_and_runs():
    names = [name for name, _ in _numba._WARMUPS]
    assert "tree.apply" in names
    dict(_numba._WARMUPS)["tree.apply"]()


def test_float32_routing_threshold_is_exact():
    """x <= t' must equal float32(x) <= t (scikit-learn's test) for every float64 x."""
    from engine.tree import float32_routing_threshold

    rng = np.random.default_rng(7)
    f32 = rng.normal(scale=10, size=2000).astype(np.float32).astype(np.float64)
    t = np.concatenate(
        [
            rng.normal(scale=10, size=2000),  # arbitrary float64
            0.5 * (f32 + np.nextafter(f32.astype(np.float32), np.float32(np.inf))),  # midpoints
            f32,  # exactly float32
            [0.0, -0.0, 1e-45, -1e-45, 3.5e38, -3.5e38, np.inf, -np.inf, 3.4028235e38],
        ]
    )
    tp = float32_routing_threshold(t)
    xs, ts, tps = [], [], []
    for k in (0, 1, 2, 3, 50, 2**28, 2**29, 2**30):  # steps of float64 ulps around t
        for sign in (-1, 1):
            with np.errstate(over="ignore", invalid="ignore"):
                x = (t.view(np.int64) + sign * k).view(np.float64)
            keep = np.isfinite(x) & (np.sign(x) == np.sign(t)) | (k == 0)
            xs.append(x[keep])
            ts.append(t[keep])
            tps.append(tp[keep])
    x, tt, tq = np.concatenate(xs), np.concatenate(ts), np.concatenate(tps)
    with np.errstate(over="ignore"):
        expected = x.astype(np.float32).astype(np.float64) <= tt
    assert np.array_equal(x <= tq, expected)
    assert np.isinf(float32_routing_threshold(np.array([np.inf]))[0])


def test_single_leaf_tree_and_object_classes():
    X = np.arange(12, dtype=float).reshape(6, 2)
    y = np.array(["only"] * 6, dtype=object)
    est = DecisionTreeClassifier().fit(X, y)
    tree = from_sklearn(est)
    assert tree.node_count == 1 and tree.max_depth == 0 and tree.n_leaves == 1
    assert np.array_equal(tree.predict(X), est.predict(X))
    assert np.array_equal(tree.decision_path(X[0]), [0])
    assert tree.apply(X[:0]).shape == (0,)
    back = TreeArrays.from_json(tree.to_json())
    assert back.classes_.tolist() == ["only"]
    forest = from_sklearn(RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y))
    assert TreeEnsemble.from_json(forest.to_json()).predict(X).tolist() == ["only"] * 6


def test_ensemble_of_categorical_trees_falls_back_to_per_tree_routing():
    tree = _categorical_tree()
    forest = TreeEnsemble(
        trees=[tree, tree],
        tree_output=[-1, -1],
        scale=0.5,
        base=np.zeros(3),
        kind="forest",
        task="classification",
        classes_=tree.classes_,
    )
    X = np.array([[0, 9.0], [1, 1.0], [1, 3.0]])
    np.testing.assert_allclose(forest.predict_proba(X), tree.predict_proba(X), rtol=0, atol=1e-15)
    assert np.array_equal(forest.apply(X), np.column_stack([tree.apply(X)] * 2))
    assert np.array_equal(forest.predict(X), tree.predict(X))


def test_regression_to_frame_has_value_column():
    X, y = _reg_data()
    tree = from_sklearn(DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y))
    df = tree.to_frame()
    assert "value" in df.columns and "majority_class" not in df.columns
    np.testing.assert_array_equal(df["value"].to_numpy(), tree.value[:, 0, 0])


def test_public_names_views_read():
    """feature_labels and category_set: what tree views read of a TreeArrays."""
    from engine.tree.arrays import _tiny_tree

    tree = _tiny_tree()
    assert tree.feature_labels() == ["feature_0", "feature_1"]
    assert tree.feature_labels(["a", "b"]) == ["a", "b"]
    with pytest.raises(ValueError, match="feature_names has 1 names, expected 2"):
        tree.feature_labels(["a"])
    assert tree.category_set(0) is None
    cat_tree = TreeArrays(
        [1, -1, -1],
        [2, -1, -1],
        [0, -2, -2],
        [np.nan, -2.0, -2.0],
        [0.5, 0.0, 0.0],
        [4, 2, 2],
        [4.0, 2.0, 2.0],
        [[[0.5, 0.5]], [[1.0, 0.0]], [[0.0, 1.0]]],
        task="classification",
        n_features=2,
        classes_=np.array([0, 1]),
        feature_names=["colour", "size"],
        cat_offsets=[0, 2, 2, 2],
        cat_values=[0, 2],
    )
    np.testing.assert_array_equal(cat_tree.category_set(0), [0, 2])
    assert cat_tree.category_set(1) is None
    assert cat_tree.feature_labels() == ["colour", "size"]
    np.testing.assert_array_equal(cat_tree.apply(np.array([[2.0, 0.0], [1.0, 0.0]])), [1, 2])


# ---------------------------------------------------------------------------------------
# missing values in ensembles (every tree's missing_go_to_left)
# ---------------------------------------------------------------------------------------


def test_ensembles_route_nan_by_each_tree():
    """A forest / gradient boosting model fitted on NaN routes NaN rows as scikit-learn
    does (tree by tree); rows without NaN keep the packed kernels; an ensemble with a tree
    that has no rule for missing values refuses NaN."""
    rng = np.random.default_rng(1)
    X = _nan_rows(rng, (600, 4), 0.15)
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) > 0).astype(np.int64)
    y = y + (np.nan_to_num(X[:, 2]) > 0.7)
    X_test = _nan_rows(rng, (1000, 4), 0.3)
    rf = RandomForestClassifier(n_estimators=5, max_depth=5, random_state=0).fit(X, y)
    forest = from_sklearn(rf)
    np.testing.assert_array_equal(forest.apply(X_test), rf.apply(X_test))
    np.testing.assert_allclose(forest.predict_raw(X_test), rf.predict_proba(X_test), atol=1e-12)
    clean = np.nan_to_num(X_test)
    np.testing.assert_array_equal(forest.apply(clean), rf.apply(clean))
    back = TreeEnsemble.from_json(forest.to_json())
    np.testing.assert_array_equal(back.apply(X_test), rf.apply(X_test))
    mixed = TreeEnsemble(
        trees=[
            forest.trees[0],
            TreeArrays.from_dict({**forest.trees[1].to_dict(), "missing_go_to_left": None}),
        ],
        tree_output=np.full(2, -1),
        scale=0.5,
        base=np.zeros(3),
        kind="forest",
        task="classification",
        classes_=rf.classes_,
    )
    with pytest.raises(ValueError, match="no rule for missing values"):
        mixed.apply(X_test)
    assert mixed.apply(clean).shape == (1000, 2)
