"""Conditional inference page: figure builders and report tables (values checked against
brute force and the engine's records), the page in AppTest, and one browser test.

Oracles: hand-computed Gini impurities of every candidate threshold, brute-force counts of
the permutation tail, leaf class fractions recounted from the training rows, the engine's
``node_records_`` for the page's p-value table, and :func:`engine.cit.top_k_curve` run on
the same folds for the step generator.
"""

import re

import numpy as np
import pandas as pd
import pytest

from engine.cit import (
    PAPER_SETTINGS,
    ConditionalInferenceTreeClassifier,
    ConditionalInferenceTreeRegressor,
)
from engine.cit.report import node_feature_table, rankings_table, threshold_table
from engine.cit.steps import (
    CART,
    CIT,
    add_noise_features,
    fit_rankings_steps,
    selection_bias_steps,
    top_k_steps,
)
from engine.cit.topk import top_k_curve
from engine.figures.cit import (
    cit_tree_figure,
    leaf_distribution_figure,
    null_histogram_figure,
    rankings_figure,
    selection_bias_figure,
    threshold_statistic_figure,
    top_k_figure,
)
from engine.teaching.glossary import unlink_terms
from tests.conftest import drive


@pytest.fixture(scope="module")
def wine_tree():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    est = ConditionalInferenceTreeClassifier(
        keep_null=True,
        feature_scanning=False,
        threshold_scanning=False,
        random_state=0,
        **PAPER_SETTINGS["classification"],
    )
    return est.fit(X, y), X, y


def gini(y, k):
    if y.size == 0:
        return 0.0
    p = np.bincount(y, minlength=k) / y.size
    return 1.0 - np.sum(p * p)


# -- tables --------------------------------------------------------------------------------
@pytest.mark.slow
def test_node_feature_table_matches_records(wine_tree):
    est, X, y = wine_tree
    rec = est.node_records_[0]
    table = node_feature_table(est, 0)
    # no scanning: every feature tested at the root, one row each
    assert sorted(table["index"]) == list(range(13)) and (table["status"] == "tested").all()
    by = table.set_index("index")
    for f, s, p in zip(rec["features"], rec["statistics"], rec["p_values"], strict=True):
        assert by.loc[f, "statistic"] == s and by.loc[f, "p_value"] == p
        assert by.loc[f, "p_bonferroni"] == pytest.approx(min(1.0, 13 * p))
    assert by.loc[:, "level"].eq(0.05 / 13).all()
    # the nominal alpha, on the adjusted p-value's scale: the same decisions as p < alpha / m
    assert by.loc[:, "alpha"].eq(0.05).all()
    np.testing.assert_array_equal(by["significant"], by["p_bonferroni"] < by["alpha"])
    np.testing.assert_array_equal(by["significant"], by["p_value"] < 0.05 / 13)
    # the permutation floor 1/(B+1): p-values no permutation reached
    floor = 1 / (by["permutations"] + 1)
    np.testing.assert_array_equal(by["at_floor"], np.isclose(by["p_value"], floor, rtol=1e-12))
    assert by["at_floor"].any()  # every wine feature beats all B shuffles at the root
    assert table["chosen"].sum() == 1
    assert table.loc[table["chosen"], "index"].item() == est.tree_.feature[0]
    assert (table["p_value"].diff().dropna() >= 0).all()  # sorted by p-value
    # the correlation ratio recomputed by hand for the chosen feature
    f = est.tree_.feature[0]
    x = X[:, f]
    ssb = sum((y == c).sum() * (x[y == c].mean() - x.mean()) ** 2 for c in range(3))
    assert by.loc[f, "statistic"] == pytest.approx(np.sqrt(ssb / ((x - x.mean()) ** 2).sum()))
    with pytest.raises(IndexError):
        node_feature_table(est, est.tree_.node_count)


def test_node_feature_table_with_scanning_and_leaves():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    est = ConditionalInferenceTreeClassifier(random_state=0).fit(X, y)
    table = node_feature_table(est, 0)
    tested = table[table["status"] == "tested"]
    assert len(tested) == len(est.node_records_[0]["features"]) and len(table) == 4
    assert tested["significant"].iloc[-1]  # scanning stops at the first significant one
    assert not table["at_floor"].any()  # asymptotic p-values have no permutation floor
    np.testing.assert_array_equal(tested["significant"], tested["p_bonferroni"] < tested["alpha"])
    # a pure leaf (setosa) has no tests at all
    leaf = next(
        v
        for v in range(est.tree_.node_count)
        if est.tree_.children_left[v] < 0 and est.tree_.impurity[v] == 0
    )
    assert node_feature_table(est, leaf).empty and threshold_table(est, leaf).empty


def test_rankings_table_normalises_and_ranks():
    t = rankings_table(
        {"a": [2.0, 6.0, 0.0], "b": [0.0, 0.0, 0.0], "c": [1, 1, 2]}, ["f0", "f1", "f2"]
    )
    # mean importance: f0 (0.25 + 0.25) / 3, f1 (0.75 + 0.25) / 3, f2 (0 + 0.5) / 3
    assert list(t["feature"]) == ["f1", "f0", "f2"]  # the f0 / f2 tie by column order
    assert t["mean"].tolist() == pytest.approx([1 / 3, 1 / 6, 1 / 6])
    assert t["a"].tolist() == [0.75, 0.25, 0.0] and t["b"].sum() == 0
    # a feature with importance 0 has no rank (a tree without a split ranks nothing; it
    # used to say 'rank 1, 2, 3' in column order)
    assert t["b rank"].isna().all()
    assert t.set_index("feature").loc["f2", "a rank"] is pd.NA
    assert t.set_index("feature").loc["f1", "a rank"] == 1
    assert t.set_index("feature").loc["f2", "c rank"] == 1
    assert t.set_index("feature").loc["f0", "c rank"] == 2  # tie with f1, column order
    with pytest.raises(ValueError, match="importances"):
        rankings_table({"a": [1.0]}, ["f0", "f1"])
    fig = rankings_figure(t, ["a", "b", "c"], top=2)
    assert [tr.name for tr in fig.data] == ["a", "b", "c"]
    assert list(fig.data[1].customdata) == ["not used", "not used"]
    assert list(fig.data[0].x) == [0.25, 0.75]  # reversed: best on top


# -- figures --------------------------------------------------------------------------------
def test_null_histogram_counts_the_tail():
    rng = np.random.default_rng(1)
    null = rng.normal(size=199)
    obs = 1.3
    fig = null_histogram_figure(null, obs, tail="right")
    tail = next(tr for tr in fig.data if "at least as extreme" in tr.name)
    other = next(tr for tr in fig.data if "other tail" in tr.name)
    count = int((null >= obs).sum())
    assert len(tail.x) == count and len(other.x) == 199 - count
    assert f"p = {(1 + count) / 200:.2g}" in fig.layout.title.text
    left = null_histogram_figure(null, obs, tail="left")
    assert len(next(tr for tr in left.data if "extreme" in tr.name).x) == int((null <= obs).sum())
    with pytest.raises(ValueError):
        null_histogram_figure([], 0.0)


@pytest.mark.slow
def test_null_histogram_of_the_engine_reproduces_its_p_value(wine_tree):
    est, _, _ = wine_tree
    rec = est.node_records_[0]
    for f, s, p in zip(rec["features"], rec["statistics"], rec["p_values"], strict=True):
        fig = null_histogram_figure(rec["nulls"][f], s)
        tail = next(tr for tr in fig.data if "extreme" in tr.name)
        assert (1 + len(tail.x)) / (rec["nulls"][f].size + 1) == pytest.approx(p)


def test_threshold_figure_is_the_weighted_child_gini(wine_tree):
    est, X, y = wine_tree
    rec = est.node_records_[0]
    f = est.tree_.feature[0]
    fig = threshold_statistic_figure(rec, feature_name="f", parent_impurity=gini(y, 3))
    curve = fig.data[0]
    t = np.asarray(curve.x)
    assert np.array_equal(t, (np.unique(X[:, f])[1:] + np.unique(X[:, f])[:-1]) / 2)
    for ti, si in zip(t[::7], np.asarray(curve.y)[::7], strict=True):
        left, right = y[X[:, f] <= ti], y[X[:, f] > ti]
        w = (left.size * gini(left, 3) + right.size * gini(right, 3)) / y.size
        assert si == pytest.approx(w)
    # no threshold scanning: every candidate was tested; the chosen one has the smallest p
    tested = sum(len(tr.x) for tr in fig.data[1:] if tr.name and tr.name.startswith("tested"))
    assert tested == t.size
    tt = threshold_table(est, 0)
    assert tt["chosen"].sum() == 1
    assert tt.loc[tt["chosen"], "threshold"].item() == est.tree_.threshold[0]
    assert tt.loc[tt["chosen"], "p_value"].item() == tt["p_value"].min()


def test_cit_tree_figure_labels(wine_tree):
    est, _, _ = wine_tree
    tree = est.tree_
    fig = cit_tree_figure(est, highlight_node=2)
    ids = sorted(
        int(v) for tr in fig.data if (tr.meta or {}).get("role") == "nodes" for v in tr.customdata
    )
    assert ids == list(range(tree.node_count))
    texts = [a.text for a in fig.layout.annotations]
    splits = [v for v in range(tree.node_count) if tree.children_left[v] >= 0]
    p_labels = [t for t in texts if "<br>p = " in t]
    n_labels = [t for t in texts if "<br>leaf " in t]
    assert len(p_labels) == len(splits) and len(n_labels) == tree.n_leaves
    # each leaf named by its id (as the leaf charts name it) with its rows
    leaves = [v for v in range(tree.node_count) if tree.children_left[v] < 0]
    named = sorted(
        (int(t.rsplit("<br>leaf ", 1)[1].split(",")[0]), int(t.rsplit("n = ", 1)[1]))
        for t in n_labels
    )
    assert named == [(v, int(tree.n_node_samples[v])) for v in leaves]
    ps = sorted(float(t.rsplit("p = ", 1)[1]) for t in p_labels)
    assert ps == pytest.approx(sorted(float(f"{est.p_value_selector_[v]:.2g}") for v in splits))
    assert any((tr.meta or {}).get("role") == "selected" for tr in fig.data)


def test_cit_tree_figure_of_a_single_leaf_is_small_and_says_why():
    """A tree with no significant split was drawn 420 px high around one marker; it is
    SINGLE_LEAF_HEIGHT px and its title says it is a single leaf because no split was
    significant at alpha, with the root's smallest p-value (the engine's record); a
    single leaf stopped before stage A names that rule instead."""
    from engine.figures.cit import SINGLE_LEAF_HEIGHT

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = rng.integers(0, 2, size=120)  # no association: stage A rejects every feature
    est = ConditionalInferenceTreeClassifier(random_state=0).fit(X, y)
    assert est.tree_.node_count == 1
    rec = est.node_records_[0]
    smallest = min(rec.get("p_values_adjusted", rec["p_values"]))
    assert smallest >= rec["alpha_selector"]
    fig = cit_tree_figure(est)
    assert fig.layout.height == SINGLE_LEAF_HEIGHT < 300
    title = fig.layout.title.text
    assert "a single leaf (n = 120)" in title
    assert "no split was significant at alpha = 0.05" in title
    assert f"smallest adjusted p-value: {smallest:.2g})" in title
    big = ConditionalInferenceTreeClassifier(min_samples_split=1_000, random_state=0).fit(X, y)
    title = cit_tree_figure(big).layout.title.text
    assert "fewer than the min. rows to split (1000)" in title and "significant" not in title
    # a tree that splits keeps its size and its title
    X[:60, 0] += 3.0
    y[:60], y[60:] = 0, 1
    grown = ConditionalInferenceTreeClassifier(random_state=0).fit(X, y)
    assert grown.tree_.node_count > 1
    fig = cit_tree_figure(grown)
    assert fig.layout.height >= 420 and "single leaf" not in fig.layout.title.text


def test_leaf_distribution_fractions_and_boxes(wine_tree):
    est, X, y = wine_tree
    fig = leaf_distribution_figure(est.tree_, est.tree_.apply(X), y)
    leaves = np.flatnonzero(est.tree_.children_left < 0)
    frac = np.column_stack([np.asarray(tr.y) for tr in fig.data])
    assert frac == pytest.approx(est.tree_.value[leaves, 0, :])  # training rows = node values
    from sklearn.datasets import load_diabetes

    Xr, yr = load_diabetes(return_X_y=True)
    reg = ConditionalInferenceTreeRegressor(random_state=0).fit(Xr, yr)
    fig = leaf_distribution_figure(reg.tree_, reg.tree_.apply(Xr), yr, target="progression")
    assert fig.layout.yaxis.title.text == "progression"  # the target's name, not "target y"
    rl = np.flatnonzero(reg.tree_.children_left < 0)
    assert [len(tr.y) for tr in fig.data] == [int(reg.tree_.n_node_samples[v]) for v in rl]
    assert [np.mean(tr.y) for tr in fig.data] == pytest.approx(reg.tree_.value[rl, 0, 0])


def test_top_k_and_bias_figures():
    curves = {
        "A": {"k": [1, 2], "mean": [0.5, 0.7], "std": [0.1, 0.0]},
        "B": {"k": [1, 2], "mean": [0.6, 0.65], "std": [0.0, 0.05]},
    }
    fig = top_k_figure(curves)
    assert [tr.name for tr in fig.data] == ["A", "B"]
    assert list(fig.data[1].y) == [0.6, 0.65] and list(fig.data[0].error_y.array) == [0.1, 0.0]
    ticks = top_k_figure({"A": {"k": [1, 2, 3, 5, 10], "mean": [0.5] * 5, "std": [0] * 5}})
    assert list(ticks.layout.xaxis.tickvals) == [1, 2, 3, 5, 10]  # the k values, not even steps
    fig = selection_bias_figure(
        {"CART": [0.5, 0.25, 0.25], "CIT": [1.0, 0.0, 0.0]},
        ["x", "noise 1", "noise 2"],
        [False, True, True],
    )
    assert [tr.name for tr in fig.data] == ["CART (noise share 50%)", "CIT (noise share 0%)"]
    assert len(fig.layout.shapes) == 2


# -- job steps -----------------------------------------------------------------------------
def test_top_k_steps_equal_top_k_curve():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    ranking = np.arange(13)[::-1]
    snaps, res = drive(
        top_k_steps(
            None,
            X,
            y,
            "classification",
            {"fixed": ranking},
            [1, 3, 5],
            learner="knn",
            n_folds=3,
            random_state=4,
        )
    )
    ref = top_k_curve(
        ranking, X, y, [1, 3, 5], learner="knn", cv=3, task="classification", random_state=4
    )
    assert res["curves"]["fixed"]["mean"] == pytest.approx(ref["mean"])
    assert [s["done"] for s in snaps] == [0, 1, 2, 3]


@pytest.mark.slow  # cross-validated top-k fits
def test_top_k_steps_keep_a_class_smaller_than_the_folds():
    """A class of 1 row with 5 folds (the folds slider's default): the run goes on with
    Compare's folds (engine.compare.make_folds) and says that some test folds miss the
    class, instead of failing; the scores are top_k_curve's on those folds."""
    from sklearn.datasets import load_wine

    from engine.compare import make_folds

    X, y = load_wine(return_X_y=True)
    rows = np.r_[np.flatnonzero(y == 0)[:20], np.flatnonzero(y == 1)[:19], 130]
    X, y = X[rows], y[rows]  # classes of 20, 19 and 1 rows
    ranking = np.arange(13)
    _, res = drive(
        top_k_steps(
            None, X, y, "classification", {"fixed": ranking}, [1, 3], n_folds=5, random_state=2
        )
    )
    assert res["notes"] == [
        "The smallest class has 1 row, fewer than 5 folds: some test folds miss that class."
    ]
    folds = make_folds("classification", y, 5, 2)

    class Folds:
        def split(self, X, y=None, groups=None):
            yield from folds

    ref = top_k_curve(ranking, X, y, [1, 3], cv=Folds(), task="classification", random_state=2)
    assert res["curves"]["fixed"]["scores"] == pytest.approx(ref["scores"])
    assert sorted(np.concatenate([te for _, te in folds])) == list(range(40))
    # every class with at least as many rows as folds is in every test fold (stratified)
    assert all({0, 1} <= set(y[te]) for _, te in folds)
    # two classes of 20 rows: no note
    _, res = drive(
        top_k_steps(None, X[:39], y[:39], "classification", {"fixed": ranking}, [1], n_folds=5)
    )
    assert res["notes"] == []


def test_fit_rankings_and_bias_steps():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 1] > 0).astype(int)
    params = {**PAPER_SETTINGS["classification"], "n_resamples_selector": "minimum"}
    snaps, res = drive(
        fit_rankings_steps(None, X, y, "classification", params, n_estimators=5, random_state=0)
    )
    assert snaps[1]["tree"] is not None and len(snaps[1]["importances"]) == 1  # CIT first
    assert set(res["importances"]) == {"CIT", "CIF", "CART", "Random forest"}
    ref = ConditionalInferenceTreeClassifier(random_state=0, **params).fit(X, y)
    assert res["importances"][CIT] == pytest.approx(ref.feature_importances_)
    assert res["tree"].node_records_[0]["nulls"]  # kept for the page's histograms
    for v in res["importances"].values():
        assert v.sum() == pytest.approx(1.0) and np.argmax(v) == 1
    Xn = add_noise_features(X, 3, random_state=0)
    assert Xn.shape == (200, 7) and np.array_equal(Xn[:, :4], X)
    y_noisy = (X[:, 1] + rng.normal(size=200) > 0).astype(int)  # CART must grow deep
    _, bias = drive(selection_bias_steps(None, X, y_noisy, "classification", params, 3))
    assert bias["importances"][CIT][4:].sum() == 0.0  # the test never picks noise here
    assert bias["importances"][CART][4:].sum() > 0.0  # fully grown CART does
    with pytest.raises(ValueError, match="n_noise"):
        add_noise_features(X, 0)


@pytest.mark.slow
def test_forest_fits_tree_by_tree_so_stop_is_prompt():
    # The forest used to be one job step: Stop (and the budget) waited for all its trees,
    # minutes for 500 trees on a larger table.
    from engine.cit import ConditionalInferenceForestClassifier
    from engine.jobs import Job

    rng = np.random.default_rng(2)
    X = rng.normal(size=(150, 5))
    y = (X[:, 0] + 0.5 * rng.normal(size=150) > 0).astype(int)
    params = {"n_resamples_selector": "minimum"}
    ref = ConditionalInferenceForestClassifier(
        n_estimators=6, random_state=3, n_jobs=2, **params
    ).fit(X, y)
    f = ConditionalInferenceForestClassifier(n_estimators=6, random_state=3, **params)
    assert list(f.fit_steps(X, y)) == [1, 2, 3, 4, 5, 6]
    assert f.feature_importances_ == pytest.approx(ref.feature_importances_)
    assert np.array_equal(f.predict_proba(X), ref.predict_proba(X))
    snaps, res = drive(
        fit_rankings_steps(None, X, y, "classification", params, n_estimators=6, random_state=3)
    )
    partial = [s["done"] for s in snaps if s["done"] % 1 and s["done"] > 3]
    assert partial == pytest.approx([3 + k / 6 for k in range(1, 6)])  # CIF is fitted last
    # scikit-learn's random forest (third) grows in chunks of trees: at least one step
    # after its first tree, before it is done
    forest = [s["done"] for s in snaps if s["done"] % 1 and s["done"] < 3]
    assert forest and forest[0] == pytest.approx(2 + 1 / 6) and all(2 < d < 3 for d in forest)
    assert res["importances"]["CIF"] == pytest.approx(ref.feature_importances_)
    # the top-k job refits the forest on every training fold, also one tree per step,
    # with the same scores as top_k_curve refitting it in one go
    cif = ConditionalInferenceForestClassifier(n_estimators=4, random_state=3, **params)
    snaps, res = drive(
        top_k_steps(
            None,
            X,
            y,
            "classification",
            {"CIF": cif},
            [1, 2],
            learner="knn",
            n_folds=3,
            random_state=1,
        )
    )
    ref_curve = top_k_curve(
        cif, X, y, [1, 2], learner="knn", cv=3, task="classification", random_state=1
    )
    assert res["curves"]["CIF"]["mean"] == pytest.approx(ref_curve["mean"])
    assert sum(1 for s in snaps if s["done"] % 1) == 3 * 3  # 3 folds x trees 1..3 of 4
    # a Job cancelled while the forest grows stops after the current tree
    job = Job(
        fit_rankings_steps,
        X,
        y,
        "classification",
        params,
        n_estimators=20_000,
        random_state=3,
        methods=("CIT", "CIF"),
    ).start()
    while job.snapshot().latest is None or job.snapshot().latest["done"] < 1.0001:
        assert not job.finished
        job.join(0.05)
    job.cancel()
    assert job.join(30) and job.status == "cancelled"
    assert set(job.result["importances"]) == {"CIT"} and job.result["tree"] is not None


def test_check_params_reports_bad_values():
    with pytest.raises(ValueError, match="max_thresholds"):
        ConditionalInferenceTreeClassifier(max_thresholds=0).check_params()
    with pytest.raises(ValueError, match="alpha_selector"):
        ConditionalInferenceTreeClassifier(alpha_selector=1.5).check_params()
    with pytest.raises(ValueError, match="selector"):
        ConditionalInferenceTreeRegressor(selector="mc").check_params()
    with pytest.raises(ValueError, match="min_impurity_decrease"):
        ConditionalInferenceTreeRegressor(min_impurity_decrease=-1).check_params()


# -- the page in AppTest -------------------------------------------------------------------
TIMEOUT = 120


def frame(app, column):
    """The first table on the page with ``column`` (AppTest does not expose table keys)."""
    return next(d.value for d in app.dataframe if column in d.value.columns)


#: The widgets the page's procedure radio sets (its PROCEDURE_WIDGETS; the page is a script
#: and cannot be imported).
PROCEDURE_WIDGETS = {
    "ctree": {"ci_mss": 20, "ci_msl": 7, "ci_min_frac": 0.01, "ci_muting": False},
    "paper": {"ci_mss": 2, "ci_msl": 1, "ci_min_frac": 0.0, "ci_muting": True},
}


def use_procedure(app, procedure):
    """Choose a procedure as its radio does (the radio's callback also sets its widgets)."""
    app.session_state["ci_procedure"] = procedure
    for key, value in PROCEDURE_WIDGETS[procedure].items():
        app.session_state[key] = value


def open_page(app, dataset, procedure=None):
    app.session_state["ci_n_trees"] = 10  # small forests keep the test fast
    if procedure is not None:
        use_procedure(app, procedure)
    app.selectbox(key="ds").set_value(dataset).run()
    app.switch_page("pages/conditional_inference.py").run()
    assert not app.exception, app.exception
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    return app.session_state["ci_job"].result["tree"]


def check_node_table(app, est, node):
    app.selectbox(key="ci_node_view").set_value(node).run()
    assert not app.exception, app.exception
    shown = frame(app, "status")
    rec = est.node_records_[node]
    asymptotic = rec.get("p_value_method") == "asymptotic"
    adjusted = "adjusted p (1-(1-p)^m)" if asymptotic else "adjusted p (m x p, Bonferroni)"
    assert (adjusted in shown.columns) == est.adjust_alpha_selector
    # one scale: the p-value that decides stands beside the nominal level alpha, never
    # beside alpha / m (the table showed m x p = 0.0167 beside alpha' = 0.0125, "significant")
    decided = adjusted if est.adjust_alpha_selector else "p-value"
    columns = list(shown.columns)
    assert "level alpha'" not in columns
    assert columns.index("level alpha") == columns.index(decided) + 1
    assert shown["level alpha"].eq(est.alpha_selector).all()
    assert ("permutations" in shown.columns) == (not asymptotic)
    names = app.session_state["ci_job_meta"]["feature_names"]
    tested = shown[shown["status"] == "tested"].set_index("feature")
    assert sorted(tested.index) == sorted(names[f] for f in rec["features"])
    for f, p in zip(rec["features"], rec["p_values"], strict=True):
        assert tested.loc[names[f], "p-value"] == p
    m = rec["n_tested"]
    if asymptotic and est.adjust_alpha_selector:
        for f, p in zip(rec["features"], rec["p_values"], strict=True):
            assert tested.loc[names[f], adjusted] == pytest.approx(1 - (1 - p) ** m, rel=1e-9)
    elif est.adjust_alpha_selector:
        for f, p in zip(rec["features"], rec["p_values"], strict=True):
            assert tested.loc[names[f], adjusted] == pytest.approx(min(1.0, m * p), rel=1e-9)
    # "significant" is exactly the comparison the row shows
    np.testing.assert_array_equal(
        tested["significant"].to_numpy(bool),
        (tested[decided] < tested["level alpha"]).to_numpy(bool),
    )
    floor_notes = [
        unlink_terms(c.value) for c in app.caption if "permutation floor" in unlink_terms(c.value)
    ]
    floored = [
        names[f]
        for f, p, b in zip(rec["features"], rec["p_values"], rec["n_permutations"], strict=True)
        if b > 0 and p == pytest.approx(1 / (b + 1), rel=1e-9)
    ]
    assert bool(floor_notes) == bool(floored)
    if floored:
        # the least B among the floored features (others may have stopped early, higher)
        b = min(
            b
            for f, p, b in zip(rec["features"], rec["p_values"], rec["n_permutations"], strict=True)
            if names[f] in floored
        )
        note = floor_notes[0]
        assert f"p = {1 / (b + 1):.3g} for " in note and f"B = {b:,}" in note
        assert sum(name in note for name in floored) >= min(4, len(floored))
        if len(floored) > 4:
            assert f"and {len(floored) - 4} more" in note
    assert any(f"Stage A at node {node}:" in m.value for m in app.markdown)


@pytest.mark.slow
def test_page_classification(app):
    est = open_page(app, "wine", "paper")
    assert app.title[0].value == "Conditional inference (CIT / CIF)"
    splits = [v for v in range(est.tree_.node_count) if est.tree_.children_left[v] >= 0]
    check_node_table(app, est, splits[-1])
    check_node_table(app, est, 0)
    assert len(app.get("plotly_chart")) >= 6  # tree, leaves, null, stage B, its null, ranks
    ranks = frame(app, "CIT rank")
    assert {"CIT", "CIF", "CART", "Random forest"} <= set(ranks.columns)
    assert ranks["CIT"].sum() == pytest.approx(1.0)
    assert "fitted_models" in app.session_state and any(
        k.startswith("CIT, Wine") for k in app.session_state["fitted_models"]
    )
    # the selection-bias demonstration
    app.number_input(key="ci_n_noise").set_value(5).run()
    app.button(key="ci_bias_run").click().run()
    assert app.session_state["ci_bias_job"].join(TIMEOUT)
    app.run()
    assert not app.exception
    bias = frame(app, "noise")
    assert bias["noise"].sum() == 5 and bias.loc[bias["noise"], "CIT"].sum() == 0
    from sklearn.tree import DecisionTreeClassifier

    ds = app.session_state["ci_job_meta"]
    cart = DecisionTreeClassifier(random_state=0).fit(add_noise_features(ds["X"], 5), ds["y"])
    assert bias["CART"].to_numpy() == pytest.approx(cart.feature_importances_, abs=1e-4)
    # changed parameters: the page keeps the fitted tree and says it is out of date
    app.selectbox(key="ci_tmethod").set_value("random").run()
    app.selectbox(key="ci_mt_kind").set_value("fixed k").run()
    assert not app.exception and not app.error
    assert any("parameters changed since this fit" in unlink_terms(c.value) for c in app.caption)


@pytest.mark.slow
def test_page_runs_ctree_by_default_and_says_so(app):
    """The default procedure is ctree: the caption names it and its asymptotic p-values (no
    permutation floor), the node table shows partykit's adjusted p-values, stage B's figure
    is the two-sample statistic over the cut points with the chosen (largest) one; the
    paper's procedure names the floor 1/(B+1)."""
    est = open_page(app, "wine")
    assert app.radio(key="ci_procedure").value == "ctree"
    assert est.p_value == "asymptotic" and est.splitter == "quadratic"
    assert (est.min_samples_split, est.min_samples_leaf) == (20, 7)
    text = " ".join(unlink_terms(c.value) for c in app.caption)
    assert "Procedure: ctree." in text and "asymptotic p-values" in text
    assert "1/(B+1)" not in text
    check_node_table(app, est, 0)
    rec = est.node_records_[0]
    assert rec["p_value_method"] == "asymptotic" and max(rec["n_permutations"]) == 0
    fig = next(
        c for c in app.get("plotly_chart") if "maximally selected" in c.proto.spec
    )  # stage B's figure of the root
    assert "largest statistic" in fig.proto.spec
    stats = np.asarray(rec["candidate_threshold_statistics"])
    assert rec["chosen_threshold"] == rec["candidate_thresholds"][int(np.argmax(stats))]
    assert any("no permutation null distribution" in unlink_terms(c.value) for c in app.caption)
    # the paper's procedure: its caption names the Monte Carlo floor
    use_procedure(app, "paper")
    app.run()
    assert not app.exception, app.exception
    text = " ".join(unlink_terms(c.value) for c in app.caption)
    assert "Procedure: the CIT paper's permutation tests." in text
    b = re.search(r"up to ([\d,]+) permutations", text).group(1).replace(",", "")
    floor = re.search(r"1/\(B\+1\) = ([0-9.e-]+)", text).group(1)
    assert float(floor) == pytest.approx(1 / (int(b) + 1), rel=0.01)
    assert app.number_input(key="ci_mss").value == 2 and app.checkbox(key="ci_muting").value


@pytest.mark.slow
def test_page_regression_and_top_k(app):
    est = open_page(app, "diabetes")
    check_node_table(app, est, 1 if est.tree_.node_count > 1 else 0)
    ranks = frame(app, "CIT rank")
    assert len(ranks) == 10
    app.multiselect(key="ci_ks_view").set_value([1, 3])
    app.slider(key="ci_folds").set_value(2)
    app.checkbox(key="ci_rerank").uncheck()
    app.multiselect(key="ci_topk_methods").set_value(["CIT", "CART"]).run()
    app.button(key="ci_topk_run").click().run()
    assert app.session_state["ci_topk_job"].join(TIMEOUT)
    app.run()
    assert not app.exception
    top = frame(app, "k")
    assert list(top["k"]) == [1, 3] and {"CIT", "CART"} <= set(top.columns)
    assert (top["CIT"] > 0).all()  # R^2 of ridge on the top features of diabetes
    assert not any("Not every fold finished" in unlink_terms(c.value) for c in app.caption)
    # a run stopped after one fold says so
    from engine.jobs import Job

    meta = app.session_state["ci_job_meta"]

    def one_fold_then_stop(ctx, *args, **kwargs):
        gen = top_k_steps(ctx, *args, **kwargs)
        yield next(gen)
        last = next(gen)  # fold 1 of 2 done: what Stop would keep
        yield last
        return last

    job = Job(
        one_fold_then_stop,
        meta["X"],
        meta["y"],
        "regression",
        {"CIT": np.arange(10)},
        [1, 3],
        learner="ridge",
        n_folds=2,
    ).start()
    assert job.join(TIMEOUT)
    app.session_state["ci_topk_job"] = job
    app.run()
    assert any(
        "Not every fold finished: CIT (1 of 2 folds)" in unlink_terms(c.value) for c in app.caption
    )


@pytest.mark.slow
@pytest.mark.parametrize("procedure", ["ctree", "paper"])
def test_page_categorical_features(app, procedure):
    open_page(app, "penguins", procedure)
    if procedure == "paper":
        app.checkbox(key="ci_fscan").uncheck().run()
        app.button(key="ci_run").click().run()
        assert app.session_state["ci_job"].join(TIMEOUT)
        app.run()
    assert not app.exception
    est = app.session_state["ci_job"].result["tree"]
    check_node_table(app, est, 0)  # every feature tested, the categorical ones included
    shown = frame(app, "status")
    assert {"island", "sex"} <= set(shown.loc[shown["status"] == "tested", "feature"])
    labels = app.selectbox(key="ci_node_view").options
    cat_nodes = [
        v
        for v in range(est.tree_.node_count)
        if est.tree_.feature[v] >= 0
        and est.tree_.cat_offsets is not None
        and est.tree_.cat_offsets[v + 1] > est.tree_.cat_offsets[v]
    ]
    assert cat_nodes  # island or sex splits somewhere with scanning off
    for v in cat_nodes:  # category names, never codes
        assert re.search(r"in \{[A-Za-z]", labels[v]), labels[v]


@pytest.mark.slow
def test_page_settings_come_back_when_streamlit_dropped_them(app):
    # Switching page while the fit's fragment polls made Streamlit drop the parameter
    # panel's values (seen in the browser: max depth, forest size and alpha back at their
    # defaults on return).
    open_page(app, "iris")
    app.number_input(key="ci_max_depth").set_value(2).run()
    app.number_input(key="ci_n_trees").set_value(15).run()
    app.number_input(key="ci_alpha_sel").set_value(0.1).run()
    app.number_input(key="ci_n_noise").set_value(7).run()
    app.switch_page("pages/data.py").run()
    for key in ("ci_max_depth", "ci_n_trees", "ci_alpha_sel", "ci_n_noise"):
        del app.session_state[key]  # what Streamlit's stale-widget cleanup did
    app.switch_page("pages/conditional_inference.py").run()
    assert not app.exception, app.exception
    assert app.number_input(key="ci_max_depth").value == 2
    assert app.number_input(key="ci_n_trees").value == 15
    assert app.number_input(key="ci_alpha_sel").value == pytest.approx(0.1)
    assert app.number_input(key="ci_n_noise").value == 7


@pytest.mark.slow
def test_page_keeps_the_chosen_node_across_a_page_switch(app):
    # The node selectbox is a *_view widget (its options depend on the fit), so Streamlit
    # forgot it on another page and the page came back at the root.
    est = open_page(app, "wine")
    node = est.tree_.node_count - 1
    app.selectbox(key="ci_node_view").set_value(node).run()
    app.switch_page("pages/data.py").run()
    app.switch_page("pages/conditional_inference.py").run()
    assert not app.exception, app.exception
    assert app.selectbox(key="ci_node_view").value == node
    assert any(
        f"node {node} has no tests" in i.value.lower() or f"at node {node}:" in i.value
        for i in list(app.info) + list(app.markdown)
    )
    app.button(key="ci_run").click().run()  # a new fit starts at the root again
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    assert app.selectbox(key="ci_node_view").value == 0


@pytest.mark.slow
def test_page_keeps_the_null_distribution_choice_across_a_page_switch(app):
    # "Null distribution of" is a *_view widget too: it came back at the first feature.
    app.session_state["ci_fscan"] = False  # every feature tested at the root
    open_page(app, "wine", "paper")
    box = app.selectbox(key="ci_null_feature_view")
    assert len(box.options) >= 2
    choice = box.options[-1]
    box.set_value(int(choice) if str(choice).isdigit() else choice).run()
    chosen = app.selectbox(key="ci_null_feature_view").value
    app.switch_page("pages/data.py").run()
    app.switch_page("pages/conditional_inference.py").run()
    assert not app.exception, app.exception
    assert app.selectbox(key="ci_null_feature_view").value == chosen


@pytest.mark.slow
def test_page_top_k_without_reranking_names_missing_rankings(app):
    # After Stop only some rankings exist; top-k without re-ranking used to drop the others
    # silently (and showed nothing at all when none of the chosen methods was left).
    from engine.jobs import Job

    open_page(app, "iris")
    meta = app.session_state["ci_job_meta"]
    params = meta["params"]
    stopped = Job(
        fit_rankings_steps, meta["X"], meta["y"], "classification", params, methods=("CIT",)
    ).start()  # what a fit stopped after the tree leaves
    assert stopped.join(TIMEOUT)
    app.session_state["ci_job"] = stopped
    app.checkbox(key="ci_rerank").uncheck().run()
    app.button(key="ci_topk_run").click().run()
    assert not app.exception, app.exception
    assert any("No ranking above for CIF, CART, Random forest" in e.value for e in app.error)
    assert "ci_topk_job" not in app.session_state or app.session_state["ci_topk_job"] is None


@pytest.mark.slow
def test_page_root_caption_counts_the_features_drawn(app):
    # With 'Features per node' sqrt the caption said "13 features tested at level 0.00385"
    # on wine, while the tree draws ceil(sqrt(13)) = 4 and tests them at 0.05 / 4.
    open_page(app, "wine", "paper")
    assert any(
        "At the root: 13 features tested at level 0.00385" in unlink_terms(c.value)
        for c in app.caption
    )
    app.selectbox(key="ci_max_features").set_value("sqrt").run()
    assert not app.exception, app.exception
    assert any(
        "At the root: 4 of 13 features tested at level 0.0125" in unlink_terms(c.value)
        for c in app.caption
    ), [unlink_terms(c.value) for c in app.caption]
    app.button(key="ci_run").click().run()
    assert app.session_state["ci_job"].join(TIMEOUT)
    rec = app.session_state["ci_job"].result["tree"].node_records_[0]
    assert rec["n_tested"] == 4 and rec["alpha_selector"] == pytest.approx(0.0125)


@pytest.mark.slow
def test_page_root_caption_counts_the_permutations_adaptive_stopping_runs(app):
    # Fixed B = 1 with adaptive stopping: the caption said "up to 13 permutations each"
    # (B x 13 tests), but adaptive stopping first raises B to ceil(1 / level) = 260 and
    # every root test ran 260.
    open_page(app, "wine", "paper")
    app.session_state["ci_b_sel_preset"] = "fixed B"
    app.session_state["ci_b_sel"] = 1
    app.run()
    assert any(
        "At the root: 13 features tested at level 0.00385, up to 260 permutations" in c.value
        for c in app.caption
    ), [unlink_terms(c.value) for c in app.caption]
    app.button(key="ci_run").click().run()
    assert app.session_state["ci_job"].join(TIMEOUT)
    rec = app.session_state["ci_job"].result["tree"].node_records_[0]
    assert max(rec["n_permutations"]) == 260
    app.session_state["ci_es_sel"] = False  # without it B x 13 it is
    app.run()
    assert any("up to 13 permutations each." in unlink_terms(c.value) for c in app.caption)


@pytest.mark.slow
def test_page_says_which_stage_made_the_root_a_leaf(app):
    # The single-leaf message used to say "no feature passed the test at the root" even when
    # one did (p 0.333 < level 0.5) and stage B or the minimum impurity decrease refused it.
    open_page(app, "iris", "paper")
    for key, value in dict(
        ci_alpha_sel=0.5,
        ci_alpha_spl=0.5,
        ci_adj_sel=False,
        ci_adj_spl=False,
        ci_es_spl=False,
        ci_b_spl_preset="fixed B",
        ci_b_spl=1,
    ).items():
        app.session_state[key] = value
    app.run()

    def refit():
        app.button(key="ci_run").click().run()
        assert app.session_state["ci_job"].join(TIMEOUT)
        app.run()
        assert not app.exception, app.exception
        est = app.session_state["ci_job"].result["tree"]
        assert est.tree_.node_count == 1
        rec = est.node_records_[0]
        assert min(rec["p_values"]) < rec["alpha_selector"]  # stage A did pass
        return " ".join(m.value for m in app.info), rec

    text, rec = refit()  # B = 1: the smallest stage-B p-value is 1/2, not below 0.5
    assert min(rec["threshold_p_values"]) >= rec["alpha_splitter"]
    assert "no threshold passed stage B" in text and "no feature passed" not in text.lower()
    assert "adjusted p (m x p, Bonferroni)" not in frame(app, "status").columns  # no Bonferroni
    app.session_state["ci_b_spl_preset"] = "auto"
    app.session_state["ci_min_dec"] = 1e6
    app.run()
    text, rec = refit()
    assert min(rec["threshold_p_values"]) < rec["alpha_splitter"]
    assert "below the min. impurity decrease" in text and "no feature passed" not in text.lower()


@pytest.mark.slow
def test_page_ranks_nothing_when_the_trees_cannot_split(app):
    # Min. rows per leaf above the data: CIT and CIF have no split and all importances 0,
    # yet the table ranked their features 1..13 in column order (and said only 'The CIT
    # has no split').
    app.session_state["ci_msl"] = 100_000
    open_page(app, "wine")
    ranks = frame(app, "CIT rank")
    assert ranks["CIT"].sum() == 0 and ranks["CIF"].sum() == 0
    # a feature a method never used has no rank: "not used", not "None"
    assert (ranks["CIT rank"] == "not used").all() and (ranks["CIF rank"] == "not used").all()
    assert ranks["CART rank"].str.isdigit().any()
    assert any("CIT and CIF have no split" in unlink_terms(c.value) for c in app.caption)
    # and the message names the rule that stopped the root (it listed three possible ones)
    assert any(
        "178 rows, fewer than twice the min. rows per leaf (2 x 100000)" in i.value
        for i in app.info
    ), [i.value for i in app.info]
    app.session_state["ci_msl"] = 1
    app.session_state["ci_mss"] = 500
    app.button(key="ci_run").click().run()
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    assert any("178 rows, fewer than the min. rows to split (500)" in i.value for i in app.info), [
        i.value for i in app.info
    ]
    app.session_state["ci_mss"] = 2
    app.session_state["ci_max_depth"] = 1
    app.button(key="ci_run").click().run()
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    leaf = next(
        v for v in range(3) if app.session_state["ci_job"].result["tree"].tree_.children_left[v] < 0
    )
    app.selectbox(key="ci_node_view").set_value(leaf).run()
    assert any(
        f"Node {leaf} has no tests: it sits at the maximum depth (1)" in i.value for i in app.info
    ), [i.value for i in app.info]


# -- browser ---------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.e2e
def test_click_a_node_shows_its_tests(page, app_url):
    from playwright.sync_api import expect

    page.goto(app_url + "/conditional_inference?ds=wine")
    expect(page.get_by_role("heading", name="Conditional inference (CIT / CIF)")).to_be_visible(
        timeout=90_000
    )
    expect(page.get_by_text(re.compile(r"Stage A at node 0:"))).to_be_visible(timeout=60_000)
    # the forests for the rankings finish in the background; then the page is idle
    expect(page.get_by_text(re.compile(r"Fit times: .*CIF \d"))).to_be_visible(timeout=120_000)
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
    chart = page.get_by_test_id("stPlotlyChart").first
    chart.scroll_into_view_if_needed()
    points = chart.locator(".scatterlayer .trace path.point")
    expect(points.nth(1)).to_be_attached(timeout=30_000)
    # the second split node of the tree; its id from the figure's data
    node_id = page.evaluate(
        "() => { const gd = document.querySelector('[data-testid=stPlotlyChart] "
        ".js-plotly-plot'); const t = gd._fullData.find(t => t.meta && t.meta.role === 'nodes');"
        " return t.customdata[1]; }"
    )  # (plotly decodes customdata in _fullData)
    points.nth(1).click(force=True)
    expect(page.get_by_text(re.compile(rf"Stage A at node {node_id}:"))).to_be_visible(
        timeout=30_000
    )
    expect(page.get_by_test_id("stException")).to_have_count(0)
    grid = page.get_by_test_id("stDataFrame").first
    expect(grid).to_be_visible()


@pytest.mark.slow
def test_page_top_k_with_a_one_row_class_runs_and_says_so(app):
    """An upload with a class of 1 row (kept by the Data page) and the default 5 folds: the
    top-k run finishes with Compare's note instead of failing."""
    rows = "\n".join(f"{i},{(i * 7) % 11},{'ab'[i % 2]}" for i in range(39))
    data = f"x1,x2,label\n{rows}\n5,5,c\n".encode()
    app.file_uploader(key="uploader").set_value(("singleton.csv", data, "text/csv")).run()
    assert not app.exception, app.exception
    app.session_state["ci_n_trees"] = 5
    app.switch_page("pages/conditional_inference.py").run()
    assert not app.exception, app.exception
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    assert app.slider(key="ci_folds").value == 5
    app.multiselect(key="ci_topk_methods").set_value(["CIT", "CART"]).run()
    app.button(key="ci_topk_run").click().run()
    assert app.session_state["ci_topk_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    note = "The smallest class has 1 row, fewer than 5 folds: some test folds miss that class."
    assert any(note == i.value for i in app.info), [i.value for i in app.info]
    assert {"CIT", "CART"} <= set(frame(app, "k").columns)
