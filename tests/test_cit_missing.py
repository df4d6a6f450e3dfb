"""Missing values in conditional inference trees and forests (issue 14 point 4).

The oracle is R partykit's ``ctree`` (Debian ``r-cran-partykit`` through Rscript, as in
tests/test_cit_partykit.py) on bundled tables with about 15% of the values of every
feature removed: with ``majority = TRUE`` the whole tree (split variables, partitions,
every node's per-variable p-values and statistics) and ctree's predicted node of every row,
the rows with NaN included, must be ours.  With ctree's default (``majority = FALSE``,
random routing: R's random stream is not ours) the root's tests and split must be ctree's,
and the rows routed at random must follow the observed proportion.  Identities without R:
a feature's test at a node equals the test on the node's rows where it is observed, and
prediction sends NaN to the child with more observed training rows.
"""

import os

import numpy as np
import pytest

from engine.cit import (
    ConditionalInferenceForestClassifier,
    ConditionalInferenceForestRegressor,
    ConditionalInferenceTreeClassifier,
    ConditionalInferenceTreeRegressor,
)
from engine.cit.partykit import compare_with_ctree, have_partykit, node_rows, run_ctree
from engine.cit.tree import MISSING_VALUES_CAPTION, PAPER_SETTINGS
from engine.data import load_bundled, make_dataset

REQUIRED = bool(os.environ.get("TREELAB_REQUIRE_PARTYKIT"))
needs_r = pytest.mark.skipif(
    not have_partykit() and not REQUIRED,
    reason="R partykit oracle tests need Rscript with library(partykit) "
    "(apt-get install r-cran-partykit); CI sets TREELAB_REQUIRE_PARTYKIT=1 and runs them",
)


def with_holes(X, fraction=0.15, seed=0):
    """``X`` with about ``fraction`` of every column's values set to NaN."""
    X = np.array(X, dtype=np.float64)
    rng = np.random.RandomState(seed)
    X[rng.rand(*X.shape) < fraction] = np.nan
    return X


def bundled_with_holes(name):
    df, _, entry = load_bundled(name)
    ds = make_dataset(df, entry["target"], missing="drop")
    return ds, with_holes(ds.X)


def estimator(ds, **params):
    cls = (
        ConditionalInferenceTreeClassifier
        if ds.task == "classification"
        else ConditionalInferenceTreeRegressor
    )
    return cls(categorical_features=ds.is_categorical, random_state=0, **params)


@pytest.mark.slow  # one Rscript run each, 2-6 s
@needs_r
@pytest.mark.parametrize("name", ["iris", "penguins", "diabetes", "breast_cancer"])
def test_majority_rule_is_ctrees_on_a_table_with_missing_values(name):
    ds, X = bundled_with_holes(name)
    assert np.isnan(X).any(axis=0).all()  # several columns (all) have NaN
    est = estimator(ds, missing_rule="majority").fit(X, ds.y)
    r = run_ctree(X, ds.y, ds.task, categorical=ds.is_categorical, majority=True)
    out = compare_with_ctree(est, X, r["nodes"])
    assert out["mismatches"] == []
    assert out["n_nodes"][0] >= 5
    assert out["max_rel_p"] <= 1e-6
    assert out["max_rel_statistic"] <= 1e-7
    # ctree's node of every row (1-based preorder ids = ours + 1), rows with NaN included
    assert np.array_equal(est.apply(X) + 1, r["predict"])
    routed = [rec.get("n_missing_routed", 0) for rec in est.node_records_]
    assert sum(routed) > 0
    # the node sizes are the rows each split sent there, routed rows included
    rows = node_rows(est.tree_, X)
    assert all(rows[v].size == est.tree_.n_node_samples[v] for v in rows)


@pytest.mark.slow  # one Rscript run, about 3 s
@needs_r
def test_default_random_rule_root_is_ctrees():
    """ctree's default routes at random (R's stream is not ours): the root's tests and
    split do not depend on it and must be ctree's; the routed rows follow the observed
    proportion of the split."""
    ds, X = bundled_with_holes("breast_cancer")
    est = estimator(ds).fit(X, ds.y)
    r = run_ctree(X, ds.y, ds.task, categorical=ds.is_categorical, majority=False)
    root = r["nodes"][0]
    rec = est.node_records_[0]
    ours = dict(zip(rec["features"], rec["p_values_adjusted"], strict=True))
    assert set(root.tests) == {f for f, p in ours.items() if not np.isnan(p)}
    for j, (_, r_p) in root.tests.items():
        if r_p > 1e-300:
            assert abs(ours[j] - r_p) <= 1e-6 * r_p
    j, kind, value = root.split
    f = int(est.tree_.feature[0])
    assert f == j and kind == "num"
    x = X[:, f]
    assert x[x <= est.tree_.threshold[0]].max() == value
    observed = ~np.isnan(x)
    p_left = np.mean(x[observed] <= est.tree_.threshold[0])
    n_missing = rec["n_missing_routed"]
    assert n_missing == np.count_nonzero(~observed)
    # binomial(n_missing, p_left): within 4 standard deviations
    sd = np.sqrt(n_missing * p_left * (1 - p_left))
    assert abs(rec["n_missing_left"] - n_missing * p_left) <= 4 * sd
    assert 0 < rec["n_missing_left"] < n_missing


def _separable(n=400, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 3))
    y = ((X[:, 0] > 0.3) ^ (rng.rand(n) < 0.1)).astype(np.int64)
    X = with_holes(X, 0.25, seed)
    return X, y


@pytest.mark.parametrize("p_value", ["asymptotic", "permutation"])
def test_a_test_uses_the_rows_where_the_feature_is_observed(p_value):
    """The root's test of a feature with NaN equals the test of the same feature on the
    rows where it is observed (same statistic and unadjusted p-value)."""
    X, y = _separable()
    params = dict(p_value=p_value, random_state=0)
    if p_value == "permutation":
        params.update(
            feature_scanning=False, n_resamples_selector=200, early_stopping_selector=None
        )
    est = ConditionalInferenceTreeClassifier(**params).fit(X, y)
    rec = est.node_records_[0]
    for f in range(3):
        observed = ~np.isnan(X[:, f])
        alone = ConditionalInferenceTreeClassifier(**params).fit(X[observed][:, [f]], y[observed])
        i = rec["features"].index(f)
        assert rec["statistics"][i] == pytest.approx(alone.node_records_[0]["statistics"][0])
        if p_value == "asymptotic":
            assert rec["p_values"][i] == pytest.approx(
                alone.node_records_[0]["p_values"][0], rel=1e-10
            )


@pytest.mark.parametrize("rule", ["random", "majority"])
def test_prediction_sends_missing_values_to_the_larger_child(rule):
    X, y = _separable()
    est = ConditionalInferenceTreeClassifier(missing_rule=rule, random_state=0).fit(X, y)
    tree = est.tree_
    assert tree.routes_missing and tree.node_count >= 3
    # the majority side of every split, recounted from the training rows as routed
    rows = {0: np.arange(X.shape[0])}
    for v in range(tree.node_count):
        left = tree.children_left[v]
        if left < 0:
            continue
        x = X[rows[v], tree.feature[v]]
        observed = ~np.isnan(x)
        n_left = np.count_nonzero(x[observed] <= tree.threshold[v])
        n_right = np.count_nonzero(observed) - n_left
        assert tree.missing_go_to_left[v] == int(n_left > n_right)
        rec = est.node_records_[v]
        assert rec["n_missing_routed"] == np.count_nonzero(~observed)
        sizes = tree.n_node_samples
        if rule == "majority":
            big = n_left + rec["n_missing_routed"] if n_left > n_right else n_left
            assert sizes[left] == big
        rows[left] = rows[v][np.flatnonzero(observed & (x <= tree.threshold[v]))]
        rows[tree.children_right[v]] = rows[v][np.flatnonzero(observed & (x > tree.threshold[v]))]
        if rule == "majority":  # add the routed rows as the fit did
            side = left if tree.missing_go_to_left[v] else tree.children_right[v]
            rows[side] = np.sort(np.r_[rows[side], rows[v][~observed]])
        else:
            break  # random routing: the children's rows are not recomputable here
    # a row missing everything follows the majority sides to a leaf
    v = 0
    while tree.children_left[v] >= 0:
        v = tree.children_left[v] if tree.missing_go_to_left[v] else tree.children_right[v]
    assert est.apply(np.full((1, 3), np.nan))[0] == v
    # deterministic: the same seed gives the same tree, and predictions do not vary
    again = ConditionalInferenceTreeClassifier(missing_rule=rule, random_state=0).fit(X, y)
    assert np.array_equal(again.predict_proba(X), est.predict_proba(X))


def test_missing_values_without_missing_in_training():
    """A tree fitted without NaN still routes NaN at prediction (to the larger child)."""
    rng = np.random.RandomState(1)
    X = rng.normal(size=(200, 2))
    y = X[:, 0] * 3 + rng.normal(size=200)
    est = ConditionalInferenceTreeRegressor(random_state=0).fit(X, y)
    left, right = est.tree_.children_left[0], est.tree_.children_right[0]
    side = left if est.tree_.n_node_samples[left] > est.tree_.n_node_samples[right] else right
    assert est.tree_.missing_go_to_left[0] == int(side == left)
    Xq = X[:3].copy()
    Xq[:, est.tree_.feature[0]] = np.nan
    assert np.isfinite(est.predict(Xq)).all()


@pytest.mark.slow  # the paper's permutation settings
def test_paper_settings_and_categorical_features_with_missing_values():
    rng = np.random.RandomState(2)
    n = 300
    cat = rng.randint(0, 4, n).astype(np.float64)
    x = rng.normal(size=n)
    y = ((cat >= 2) ^ (rng.rand(n) < 0.05)).astype(np.int64)
    X = np.column_stack([x, cat])
    X[rng.rand(n) < 0.2, 1] = np.nan
    for params in ({}, PAPER_SETTINGS["classification"]):
        est = ConditionalInferenceTreeClassifier(
            categorical_features=[1], random_state=0, **params
        ).fit(X, y)
        assert est.tree_.feature[0] == 1
        assert est.node_records_[0]["n_missing_routed"] == np.count_nonzero(np.isnan(X[:, 1]))
        observed = ~np.isnan(X[:, 1])
        assert est.score(X[observed], y[observed]) > 0.9


def test_forests_fit_and_predict_with_missing_values():
    X, y = _separable(n=200)
    forest = ConditionalInferenceForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    assert forest.__sklearn_tags__().input_tags.allow_nan
    assert forest.score(X, y) > 0.8
    reg = ConditionalInferenceForestRegressor(
        n_estimators=3, missing_rule="majority", random_state=0
    ).fit(X, y.astype(np.float64))
    assert np.isfinite(reg.predict(X)).all()


def test_caption_names_the_rule():
    assert "observed" in MISSING_VALUES_CAPTION and "random" in MISSING_VALUES_CAPTION


def test_top_k_learners_take_missing_values_as_the_training_fold_mean():
    """The rankers see the NaN; the downstream learner gets the training fold's mean (0
    after standardising), so a ranking on a table with missing values still scores."""
    from engine.cit.topk import top_k_curve

    X, y = _separable(n=150)
    out = top_k_curve(ConditionalInferenceTreeClassifier(random_state=0), X, y, [1, 3], cv=3)
    assert np.isfinite(out["scores"]).all()
    assert all(r[0] == 0 for r in out["rankings"])  # x0 carries the class
    assert out["mean"][0] > 0.7
