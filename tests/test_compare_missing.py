"""Compare on a dataset with missing values kept (issue 14): the models that route NaN
(scikit-learn's tree and forest, XGBoost, LightGBM, TreeLab's CART) are fitted and scored
on every row; scikit-learn's gradient boosting, which cannot take NaN, on the complete rows
of the same folds, and the plan's note names it with the rows left out.

Oracle for the fallback: scikit-learn's GradientBoostingClassifier fitted by hand on the
complete rows of each fold."""

import re
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.metrics import accuracy_score

from engine.compare import (
    REGISTRY,
    available_models,
    cross_validate_steps,
    handles_missing,
    plan_comparison,
)
from engine.jobs import Job

N_ROWS = 160


def _dataset(task="classification", rate=0.08, seed=0):
    """Three features, NaN planted in two of them (about 15 % of the rows have one)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_ROWS, 3))
    z = X[:, 0] + 0.5 * X[:, 1]
    X[:, 1][rng.random(N_ROWS) < rate] = np.nan
    X[:, 2][rng.random(N_ROWS) < rate] = np.nan
    if task == "classification":
        return SimpleNamespace(X=X, y=(z > 0).astype(np.int64), task=task, n_classes=2)
    return SimpleNamespace(X=X, y=z + rng.normal(scale=0.1, size=N_ROWS), task=task, n_classes=0)


def _run(plan):
    job = Job(cross_validate_steps, plan, budget=300).start()
    assert job.join(300)
    assert job.status == "done", job.error
    return job.result


NAN_MODELS = ["sklearn_tree", "sklearn_forest", "xgboost", "lightgbm", "treelab_cart"]


@pytest.mark.slow  # five models' cross-validations
def test_models_that_route_nan_get_every_row_and_gradient_boosting_the_complete_rows():
    ds = _dataset()
    complete = ~np.isnan(ds.X).any(axis=1)
    n_complete = int(complete.sum())
    assert 100 < n_complete < N_ROWS  # NaN planted, most rows complete
    models = {k: {} for k in NAN_MODELS if k in REGISTRY}
    models["sklearn_forest"] = {"n_estimators": 10}
    models["sklearn_boosting"] = {"n_estimators": 20}
    plan = plan_comparison(ds, models, n_splits=4, random_state=3)
    assert set(plan.row_subsets) == {"sklearn_boosting"}
    np.testing.assert_array_equal(plan.row_subsets["sklearn_boosting"], np.flatnonzero(complete))
    # the note names the model and the rows on both sides
    label = REGISTRY["sklearn_boosting"].label
    (note,) = [n for n in plan.notes if "missing values" in n]
    assert note.startswith(f"{label} cannot take missing values")
    assert f"{n_complete} rows without a missing value" in note
    assert f"{N_ROWS - n_complete} rows with missing values left out" in note
    assert f"use all {N_ROWS} rows" in note

    res = _run(plan)
    assert res.warnings == plan.notes
    sizes = [(len(train), len(test)) for train, test in plan.folds]
    for key in models:
        rows = res.folds[res.folds["key"] == key]
        got = list(zip(rows["n_train"], rows["n_test"], strict=True))
        if key == "sklearn_boosting":
            want = [(int(complete[tr].sum()), int(complete[te].sum())) for tr, te in plan.folds]
        else:
            want = sizes
        assert got == want, key
    by_label = res.summary.set_index("model")["rows"]
    assert by_label[label] == n_complete
    for key in models:
        if key != "sklearn_boosting":
            assert by_label[REGISTRY[key].label] == N_ROWS, key
    # the fallback's scores are those of the model fitted by hand on the complete rows
    gb = res.folds[res.folds["key"] == "sklearn_boosting"]["accuracy"].to_numpy()
    expected = []
    for train, test in plan.folds:
        train, test = train[complete[train]], test[complete[test]]
        est = GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=3)
        expected.append(
            accuracy_score(ds.y[test], est.fit(ds.X[train], ds.y[train]).predict(ds.X[test]))
        )
    np.testing.assert_allclose(gb, expected)
    # the refit (the model drawn) used the complete rows only; the others every row
    refit = GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=3)
    refit.fit(ds.X[complete], ds.y[complete])
    np.testing.assert_allclose(
        res.models["sklearn_boosting"].train_score_, refit.train_score_, rtol=1e-12
    )
    assert res.models["sklearn_tree"].tree_.n_node_samples[0] == N_ROWS
    assert res.models["sklearn_forest"].estimators_[0].tree_.weighted_n_node_samples[0] == N_ROWS


def test_regression_fallback_and_a_plan_of_the_fallback_alone():
    ds = _dataset("regression", seed=4)
    n_complete = int((~np.isnan(ds.X).any(axis=1)).sum())
    plan = plan_comparison(ds, {"sklearn_boosting": {"n_estimators": 10}}, n_splits=3)
    (note,) = plan.notes
    assert note.startswith(f"{REGISTRY['sklearn_boosting'].label} cannot take missing values")
    assert "The other models" not in note  # there are none
    res = _run(plan)
    assert int(res.folds["n_train"].sum() + res.folds["n_test"].sum()) == 3 * n_complete
    assert list(res.summary["rows"]) == [n_complete]
    assert np.isfinite(res.folds["r2"]).all()


def test_without_missing_values_every_model_uses_every_row_and_nothing_is_noted():
    ds = _dataset(rate=0.0)
    plan = plan_comparison(ds, {"sklearn_tree": {}, "sklearn_boosting": {}}, n_splits=3)
    assert plan.row_subsets == {} and plan.notes == []
    assert plan.model_folds("sklearn_boosting") is plan.folds


def test_a_fallback_model_without_enough_complete_rows_is_left_out_with_a_note():
    ds = _dataset()
    ds.X[::2, 2] = np.nan  # every other row has NaN: keep some complete rows
    ds.X[1::2, 1] = np.nan  # and now every row has one
    label = REGISTRY["sklearn_boosting"].label
    plan = plan_comparison(ds, {"sklearn_tree": {}, "sklearn_boosting": {}}, n_splits=3)
    assert list(plan.estimators) == ["sklearn_tree"]
    (note,) = plan.notes
    assert (
        note
        == f"{label} cannot take missing values, and every row has one: left out of this comparison."
    )
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{label} cannot take missing values, and every row has one. Choose a model that routes missing values"
        ),
    ):
        plan_comparison(ds, {"sklearn_boosting": {}}, n_splits=3)
    # a few complete rows, not enough for 10 folds: the count is named
    ds.X[:4] = 0.0
    plan = plan_comparison(ds, {"sklearn_tree": {}, "sklearn_boosting": {}}, n_splits=10)
    assert plan.notes == [
        f"{label} cannot take missing values, and the 4 rows without one (of {N_ROWS}) do "
        "not fill every fold with two classes to train on: left out of this comparison."
    ]


def test_the_nan_tag_matches_what_each_registered_model_can_fit():
    """handles_missing (scikit-learn's allow_nan tag) is False only for scikit-learn's
    gradient boosting, and each model it calls NaN-capable fits and predicts on NaN."""
    ds = _dataset()
    for task in ("classification", "regression"):
        y = ds.y if task == "classification" else ds.X[:, 0].copy()
        for spec in available_models(task):
            est = spec.make(task, 0)
            assert handles_missing(est) == (spec.key != "sklearn_boosting"), spec.key
            if spec.key in ("sklearn_boosting", *NAN_MODELS):
                if handles_missing(est):
                    assert np.isfinite(est.fit(ds.X, y).predict(ds.X)).all(), spec.key
                else:
                    with pytest.raises(ValueError, match="NaN"):
                        est.fit(ds.X, y)
    assert not handles_missing(object())


def test_on_dask_the_fallback_uses_the_same_rows(dask_client):
    """The Dask runner fans the fits out: the fallback's folds and refit use the complete
    rows there too (the same rows and scores as the thread runner)."""
    ds = _dataset(seed=2)
    n_complete = int((~np.isnan(ds.X).any(axis=1)).sum())
    models = {"sklearn_tree": {}, "sklearn_boosting": {"n_estimators": 10}}
    plan = plan_comparison(ds, models, n_splits=3, random_state=1)
    remote = Job(cross_validate_steps, plan, budget=120, runner="dask").start()
    assert remote.join(120) and remote.status == "done", remote.error
    local = Job(cross_validate_steps, plan, budget=120, runner="threads").start()
    assert local.join(120) and local.status == "done", local.error
    a = remote.result.folds.drop(columns=["fit_seconds"])
    b = local.result.folds.drop(columns=["fit_seconds"])
    assert a.round(12).equals(b.round(12))
    assert list(remote.result.summary["rows"]) == [N_ROWS, n_complete]
    refit = remote.result.models["sklearn_boosting"]
    np.testing.assert_allclose(
        refit.train_score_, local.result.models["sklearn_boosting"].train_score_, rtol=1e-12
    )
