"""Compare registry and CV (engine/compare.py); oracle: scikit-learn's cross_validate."""

import time
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.tree import DecisionTreeClassifier

from engine.compare import (
    REGISTRY,
    available_models,
    cross_validate_steps,
    make_folds,
    plan_comparison,
)
from engine.jobs import Job


def _ds(X, y, task):
    n_classes = int(y.max()) + 1 if task == "classification" else 0
    return SimpleNamespace(
        X=np.ascontiguousarray(X, dtype=np.float64), y=y, task=task, n_classes=n_classes
    )


def _run(ds, models, **kw):
    job = Job(cross_validate_steps, plan_comparison(ds, models, **kw), budget=120).start()
    assert job.join(120)
    assert job.status == "done", job.error
    return job


def test_accuracy_equals_sklearn_cross_validate_on_same_folds():
    X, y = load_iris(return_X_y=True)
    ds = _ds(X, y.astype(np.int64), "classification")
    job = _run(ds, {"sklearn_tree": {"max_depth": 3}}, n_splits=5, random_state=7)
    res = job.result
    cv = StratifiedKFold(5, shuffle=True, random_state=7)
    ref = cross_validate(
        DecisionTreeClassifier(max_depth=3, random_state=7),
        X,
        y,
        cv=cv,
        scoring=["accuracy", "neg_log_loss"],
    )
    np.testing.assert_allclose(res.folds["accuracy"].to_numpy(), ref["test_accuracy"])
    np.testing.assert_allclose(
        res.folds["log_loss"].to_numpy(), -ref["test_neg_log_loss"], rtol=1e-6
    )
    assert res.summary.loc[0, "folds"] == 5
    assert res.summary.loc[0, "accuracy"] == pytest.approx(ref["test_accuracy"].mean())
    assert res.models["sklearn_tree"].get_depth() <= 3
    # progress: one snapshot per fold plus the refit
    assert job.snapshot().steps == 6


def test_regression_metrics_and_three_models():
    X, y = load_diabetes(return_X_y=True)
    ds = _ds(X, y, "regression")
    res = _run(
        ds,
        {
            "sklearn_tree": {"max_depth": 3},
            "sklearn_forest": {"n_estimators": 10},
            "sklearn_boosting": {"n_estimators": 20},
        },
        n_splits=3,
    ).result
    assert list(res.summary["model"]) == [
        REGISTRY[k].label for k in ("sklearn_tree", "sklearn_forest", "sklearn_boosting")
    ]
    assert {"r2", "rmse", "fit_seconds", "n_leaves", "depth"} <= set(res.summary.columns)
    # RMSE and R^2 agree: R^2 = 1 - MSE / Var(y_test) for each fold
    assert (res.folds["rmse"] > 0).all()
    assert res.summary.set_index("key" if "key" in res.summary else "model")["r2"].max() > 0.2
    tree_row = res.folds[res.folds["key"] == "sklearn_tree"]
    assert (tree_row["depth"] <= 3).all() and (tree_row["n_leaves"] <= 8).all()


def test_single_row_test_folds_are_reported():
    # 12 rows in 10 folds: 8 test folds hold one row, where r2_score is nan, and the summary
    # showed 'folds 10, r2 -45' averaged over the 2 folds with two rows, without a word.
    rng = np.random.default_rng(1)
    ds = _ds(rng.normal(size=(12, 2)), rng.normal(size=12), "regression")
    plan = plan_comparison(ds, {"sklearn_tree": {}}, n_splits=10)
    single = sum(len(te) == 1 for _, te in plan.folds)
    assert single == 8
    assert any(
        "8 of the 10 test folds have a single row" in n and "at most 6 folds" in n
        for n in plan.notes
    ), plan.notes
    res = _run(ds, {"sklearn_tree": {}}, n_splits=10).result
    assert res.folds["r2"].isna().sum() == 8 and res.warnings == plan.notes
    assert not any(
        "single row" in n for n in plan_comparison(ds, {"sklearn_tree": {}}, n_splits=6).notes
    )
    # leave-one-out: no fold has an R²; 3 rows: no fold count gives R² on every fold
    loo = plan_comparison(ds, {"sklearn_tree": {}}, n_splits=12).notes
    assert any("no fold has an R²" in n and "at most 6 folds" in n for n in loo), loo
    ds3 = _ds(rng.normal(size=(3, 2)), rng.normal(size=3), "regression")
    few = plan_comparison(ds3, {"sklearn_tree": {}}, n_splits=2).notes
    assert any("too few rows for R² on every fold" in n for n in few), few


@pytest.mark.slow
def test_stop_keeps_finished_folds():
    X, y = load_iris(return_X_y=True)
    ds = _ds(X, y.astype(np.int64), "classification")

    plan = plan_comparison(ds, {"sklearn_forest": {"n_estimators": 200}}, n_splits=10)
    job = Job(cross_validate_steps, plan, budget=None).start()
    # (a forest's steps are chunks of its trees: wait for two finished folds)
    deadline = time.monotonic() + 300
    while ((job.snapshot().latest or {}).get("completed") or 0) < 2:
        assert not job.finished and time.monotonic() < deadline, job.snapshot().error
        job.join(0.01)
    job.cancel()
    assert job.join(10)
    assert job.status == "cancelled"
    assert 2 <= job.result["completed"] < 11
    assert len(job.result["rows"]) == job.result["completed"]


@pytest.mark.parametrize(
    "models, n_splits, match",
    [
        ({"nope": {}}, 5, "Unknown model"),
        ({"sklearn_tree": {"max_depth": -3}}, 5, "max_depth"),
        ({"sklearn_tree": {"bogus": 1}}, 5, "unknown parameter"),
        ({}, 5, "at least one model"),
        ({"sklearn_tree": {}}, 1, "number of folds"),
    ],
)
def test_bad_requests_fail_before_fitting(models, n_splits, match):
    X, y = load_iris(return_X_y=True)
    ds = _ds(X, y.astype(np.int64), "classification")
    with pytest.raises(ValueError, match=match):
        plan_comparison(ds, models, n_splits=n_splits)


def test_registry_lists_models_per_task():
    keys = [s.key for s in available_models("classification")]
    assert keys[:3] == ["sklearn_tree", "sklearn_forest", "sklearn_boosting"]
    with pytest.raises(ValueError):
        available_models("clustering")


def test_folds_are_stratified_and_partition_rows():
    y = np.repeat(np.arange(3), 20)
    folds = make_folds("classification", y, 4, 0)
    test_idx = np.concatenate([te for _, te in folds])
    assert np.array_equal(np.sort(test_idx), np.arange(60))
    for _, te in folds:
        assert np.array_equal(np.bincount(y[te]), [5, 5, 5])


def test_same_model_twice_with_labels_and_candidates_column():
    X, y = load_iris(return_X_y=True)
    ds = _ds(X, y.astype(np.int64), "classification")
    plan = plan_comparison(
        ds,
        [
            ("sklearn_tree", {"max_depth": 1}, "stump"),
            ("sklearn_tree", {"max_depth": 4}, "depth 4"),
            ("treelab_cart", {"splitter": "quantile", "max_depth": 4}),
        ],
        n_splits=3,
    )
    assert list(plan.estimators) == ["sklearn_tree", "sklearn_tree#2", "treelab_cart"]
    job = Job(cross_validate_steps, plan, budget=120).start()
    assert job.join(120) and job.status == "done", job.error
    res = job.result
    assert list(res.summary["model"]) == ["stump", "depth 4", REGISTRY["treelab_cart"].label]
    assert (res.folds.loc[res.folds["model"] == "stump", "n_leaves"] == 2).all()
    # TreeLab CART reports thresholds evaluated; scikit-learn's trees do not
    cart = res.folds[res.folds["key"] == "treelab_cart"]
    assert (cart["candidates"] > 0).all()
    assert res.folds.loc[res.folds["key"] != "treelab_cart", "candidates"].isna().all()
    with pytest.raises(ValueError, match="registry key"):
        plan_comparison(ds, [42])


def test_categorical_features_reach_treelab_cart():
    """On penguins, TreeLab's CART gets the categorical mask and splits island by sets."""
    from engine.data import load_bundled, make_dataset

    df, _, entry = load_bundled("penguins")
    ds = make_dataset(df, entry["target"], missing="drop")
    plan = plan_comparison(ds, {"treelab_cart": {"max_depth": 3}, "sklearn_tree": {}})
    cart = plan.estimators["treelab_cart"][1]
    np.testing.assert_array_equal(cart.categorical_features, ds.is_categorical)
    assert "categorical_features" not in plan.estimators["sklearn_tree"][1].get_params()


@pytest.mark.slow
def test_on_dask_the_fits_fan_out_over_the_workers_with_the_same_rows(dask_client):
    """A comparison run on the Dask runner submits every fold fit and refit as its own
    task: on the embedded cluster (one worker per core) they run on more than one worker,
    and the result equals the thread runner's fit for fit."""
    from distributed import get_task_stream

    X, y = load_iris(return_X_y=True)
    ds = _ds(X, y.astype(np.int64), "classification")
    models = [("sklearn_tree", {"max_depth": 3}), ("sklearn_forest", {"n_estimators": 40})]
    plan = plan_comparison(ds, models, n_splits=4, random_state=3)
    with get_task_stream(dask_client) as stream:
        remote = Job(cross_validate_steps, plan, budget=120, runner="dask").start()
        assert remote.join(120)
    assert remote.status == "done", remote.error
    local = Job(cross_validate_steps, plan, budget=120, runner="threads").start()
    assert local.join(120) and local.status == "done", local.error
    a = remote.result.folds.drop(columns=["fit_seconds"])
    b = local.result.folds.drop(columns=["fit_seconds"])
    assert list(a["model"]) == list(b["model"]) and list(a["fold"]) == [1, 2, 3, 4] * 2
    assert a.round(12).equals(b.round(12))
    both = {"sklearn_tree", "sklearn_forest"}
    assert set(remote.result.models) == set(local.result.models) == both
    fits = [t for t in stream.data if str(t["key"]).startswith(("_fit_fold", "_refit"))]
    assert len(fits) == 2 * 4 + 2
    workers = {t["worker"] for t in fits}
    if len(dask_client.scheduler_info()["workers"]) > 1:
        assert len(workers) > 1, workers
    # refit="trees" (the Compare page): the forest's refit is not submitted at all
    trees_only = plan_comparison(ds, models, n_splits=4, random_state=3, refit="trees")
    with get_task_stream(dask_client) as stream:
        job = Job(cross_validate_steps, trees_only, budget=120, runner="dask").start()
        assert job.join(120)
    assert job.status == "done", job.error
    assert set(job.result.models) == {"sklearn_tree"}
    refits = [t for t in stream.data if str(t["key"]).startswith("_refit")]
    assert len(refits) == 1
    assert job.result.folds.drop(columns=["fit_seconds"]).round(12).equals(a.round(12))
    assert job.snapshot().latest["total"] == trees_only.n_fits == 2 * 4 + 1


def test_refit_trees_refits_only_the_single_trees_with_the_same_folds():
    """``refit="trees"`` (the Compare page, which draws single trees only): the folds are
    the same as with every refit, only the trees are refitted (one step each), and the
    refitted tree equals one fitted on every row."""
    X, y = load_iris(return_X_y=True)
    ds = _ds(X, y.astype(np.int64), "classification")
    models = {
        "sklearn_tree": {"max_depth": 3},
        "sklearn_forest": {"n_estimators": 5},
        "treelab_cart": {"max_depth": 2},
    }
    every = _run(ds, models, n_splits=3, random_state=2)
    trees = _run(ds, models, n_splits=3, random_state=2, refit="trees")
    plan = plan_comparison(ds, models, n_splits=3, random_state=2, refit="trees")
    assert plan.refit_ids == ("sklearn_tree", "treelab_cart")
    assert plan.n_fits == 3 * 3 + 2
    last = trees.snapshot().latest  # one counted step per fold fit and per refit
    assert last["completed"] == last["total"] == plan.n_fits
    assert every.snapshot().latest["total"] == 3 * 3 + 3
    assert set(every.result.models) == set(models)
    assert list(trees.result.models) == ["sklearn_tree", "treelab_cart"]
    a = every.result.folds.drop(columns=["fit_seconds"])
    b = trees.result.folds.drop(columns=["fit_seconds"])
    assert a.round(12).equals(b.round(12))
    direct = DecisionTreeClassifier(max_depth=3, random_state=2).fit(ds.X, ds.y)
    refitted = trees.result.models["sklearn_tree"]
    np.testing.assert_array_equal(refitted.tree_.threshold, direct.tree_.threshold)
    none = plan_comparison(ds, models, n_splits=3, random_state=2, refit=False)
    assert none.refit_ids == () and none.n_fits == 9


@pytest.mark.parametrize("refit", ["forests", 1.0, None, "all"])
def test_refit_other_than_the_three_choices_is_refused(refit):
    from engine.compare import run_comparison

    X, y = load_iris(return_X_y=True)
    ds = _ds(X, y.astype(np.int64), "classification")
    with pytest.raises(ValueError, match="refit must be True .* False .* or 'trees'"):
        plan_comparison(ds, ["sklearn_tree"], n_splits=3, refit=refit)
    # running a plan takes only the switch: its refits are the plan's
    plan = plan_comparison(ds, ["sklearn_tree"], n_splits=3)
    with pytest.raises(ValueError, match=r"chosen by plan_comparison\(\.\.\., refit="):
        run_comparison(plan, refit=refit)
    with pytest.raises(ValueError, match="refit here is True"):
        next(cross_validate_steps(None, plan, refit="trees"))


def test_float32_probabilities_are_rescaled_but_a_broken_sum_is_not():
    """Rows of class probabilities that sum to 1 up to float32 rounding are rescaled
    before the log loss (no warning, the value of exact probabilities); a row that is off
    by more is scored as it is, for scikit-learn's log_loss to warn about."""
    import warnings

    from sklearn.metrics import log_loss

    from engine.compare import _fold_metrics

    y_test = np.array([0, 1, 1, 0])
    exact = np.array([[0.7, 0.3], [0.2, 0.8], [0.4, 0.6], [0.9, 0.1]])

    class Model:
        classes_ = np.array([0, 1])

        def __init__(self, proba):
            self.proba = proba

        def predict(self, X):
            return self.proba.argmax(axis=1)

        def predict_proba(self, X):
            return self.proba

    rounded = exact.astype(np.float32)
    rounded[:, 0] += np.float32(1e-7)  # float32 rows whose sums are off by about 1e-7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _fold_metrics("classification", Model(rounded), None, y_test, 2)
    assert got["log_loss"] == pytest.approx(log_loss(y_test, exact), rel=1e-6)
    broken = exact * np.array([[1.0], [1.0], [0.5], [1.0]])  # a row summing to 0.5
    with pytest.warns(UserWarning, match="do not sum to one"):
        got = _fold_metrics("classification", Model(broken), None, y_test, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert got["log_loss"] == pytest.approx(log_loss(y_test, broken))


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_tree_figure_flag_is_true_exactly_for_models_fitted_as_one_drawable_tree(task):
    """``ModelSpec.tree_figure`` (what ``refit="trees"`` refits) says which fitted models
    have the ``tree_`` the Compare page draws: every registered model is fitted and
    checked, so a new model registered without the flag fails here."""
    if task == "classification":
        X, y = load_iris(return_X_y=True)
        ds = _ds(X, y.astype(np.int64), task)
    else:
        X, y = load_diabetes(return_X_y=True)
        ds = _ds(X[:150], y[:150], task)
    for spec in available_models(task):
        params = {"time_limit": 1.0} if spec.key == "treelab_literati" else {}
        model = spec.make(task, 0, **params).fit(ds.X, ds.y)
        assert spec.tree_figure == hasattr(model, "tree_"), spec.key
