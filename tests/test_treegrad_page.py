"""Feature ranking page: figure builders and page helpers with asserted values, AppTest of
the page (classification, regression, categorical, a remembered model, batch and numerics
jobs, bad input) and a browser test that edits a feature value and sees the curves redraw.

Oracles: the TreeGrad API itself for values the figures must carry (AUC in the legend,
bars, heat maps), hand-counted Kendall tau, the telescoping identity of the per-edge gammas,
the multilinear extension rebuilt from the gammas, shap for brute-force Shapley values.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from sklearn.datasets import load_wine, make_regression
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import engine.treegrad as tg
from engine.figures import treegrad as treegrad_figures
from engine.jobs import Job
from engine.tree import from_sklearn
from engine.treegrad import explain

PAGE = "pages/feature_ranking.py"


@pytest.fixture(scope="module")
def wine_gb():
    X, y = load_wine(return_X_y=True)
    m = GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0).fit(X, y)
    return from_sklearn(m), X


@pytest.fixture(scope="module")
def small_reg():
    X, y = make_regression(400, 6, n_informative=5, noise=3.0, random_state=2)
    X = X.astype(np.float32).astype(np.float64)
    m = DecisionTreeRegressor(max_depth=7, random_state=0).fit(X, y)
    return m, from_sklearn(m), X


# ---------------------------------------------------------------------------------------
# page helpers (engine.treegrad.explain)
# ---------------------------------------------------------------------------------------


def test_explain_matches_the_api(wine_gb):
    T, X = wine_gb
    p = explain.MethodParams(alpha=8, beta=4, p=0.2, lr=2.0, steps=30)
    ex = explain.explain(T, X[3], 2, p)
    labels = p.labels()
    assert list(ex.scores) == labels
    np.testing.assert_array_equal(ex.scores["Shapley"], tg.shapley(T, X[3], 2))
    np.testing.assert_array_equal(ex.scores["Beta(8,4)"], tg.beta_shapley(T, X[3], 8, 4, 2))
    np.testing.assert_array_equal(ex.scores["Weighted Banzhaf(0.2)"], tg.banzhaf(T, X[3], 0.2, 2))
    np.testing.assert_array_equal(
        ex.scores["Ranker Adam"], tg.rank(T, X[3], 2, "adam", lr=2.0, steps=30).scores
    )
    # efficiency ties f(empty), f(all) and the Shapley values; f(all) is the raw score
    assert ex.f_empty + ex.scores["Shapley"].sum() == pytest.approx(ex.f_full, abs=1e-10)
    assert ex.f_full == pytest.approx(T.predict_raw(X[3:4])[0, 2], abs=1e-10)
    with pytest.raises(ValueError, match="alpha"):
        explain.MethodParams(alpha=0).check()
    with pytest.raises(ValueError, match="learning rate"):
        explain.explain(T, X[3], 2, explain.MethodParams(lr=-1.0))


def _tau_by_hand(a, b):
    conc = disc = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            s = np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
            conc += s > 0
            disc += s < 0
    return (conc - disc) / (len(a) * (len(a) - 1) / 2)


def test_kendall_matrix_and_figure():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=9), rng.normal(size=9)
    scores = {"A": a, "B": b, "-A": -a, "flat": np.zeros(9)}
    tau = explain.kendall_matrix(scores)
    assert tau.loc["A", "B"] == pytest.approx(_tau_by_hand(a, b))
    assert tau.loc["A", "-A"] == pytest.approx(-1.0)
    assert np.isnan(tau.loc["A", "flat"]) and tau.loc["B", "B"] == 1.0
    fig = treegrad_figures.kendall_figure(tau)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z, float), tau.to_numpy())
    assert fig.data[0].text[0][3] == "n/a"


def test_edge_gammas_telescope_and_rebuild_the_multilinear_extension(small_reg):
    m, T, X = small_reg
    rng = np.random.default_rng(1)
    for x in X[:4]:
        g = explain.edge_gammas(T, x)
        path = T.decision_path(x)
        leaf = path[-1]
        cov = T.weighted_n_node_samples
        # along the sample's own path the cover ratios telescope to c_root / c_leaf
        assert np.prod(g[path[1:]]) == pytest.approx(cov[0] / cov[leaf])
        # the sibling of every path edge has gamma 0
        for u in path[1:]:
            par = T.parent[u]
            sib = T.children_right[par] if T.children_left[par] == u else T.children_left[par]
            assert g[sib] == 0.0
        # fbar(z) = sum_v rho_v c_v / c_r prod_j (1 - z_j + z_j gamma_{j,v})
        lg = explain.leaf_gammas(T, x)
        z = rng.random(T.n_features)
        fbar = sum(
            T.value[v, 0, 0]
            * cov[v]
            / cov[0]
            * np.prod([1 - z[j] + z[j] * gj for j, gj in feats.items()])
            for v, feats in lg.items()
        )
        assert fbar == pytest.approx(tg.multilinear(T, x, z), rel=1e-12)


def test_brute_force_semivalue_against_shap(small_reg):
    shap = pytest.importorskip("shap")
    m, T, X = small_reg
    sv = shap.TreeExplainer(m, feature_perturbation="tree_path_dependent").shap_values(X[:2])
    for r in range(2):
        np.testing.assert_allclose(explain.brute_force_semivalue(m, X[r]), sv[r], atol=1e-9)
        np.testing.assert_allclose(
            explain.brute_force_semivalue(m, X[r], 4, 1), tg.beta_shapley(m, X[r], 4, 1), atol=1e-9
        )
        np.testing.assert_allclose(
            explain.brute_force_semivalue(m, X[r], p=0.3), tg.banzhaf(m, X[r], 0.3), atol=1e-9
        )
    with pytest.raises(ValueError, match="12"):
        explain.brute_force_semivalue(
            DecisionTreeRegressor(max_depth=2).fit(
                np.random.default_rng(0).normal(size=(50, 13)), np.arange(50.0)
            ),
            np.zeros(13),
        )


def test_best_beta_and_batch_curves(wine_gb):
    T, X = wine_gb
    Xb = X[::20][:6]
    best, pick = explain.best_beta_curves(T, Xb, 1, "probability")
    joints = np.stack(
        [
            tg.insertion_deletion(T, Xb, tg.beta_shapley(T, Xb, a, b, 1), 1, "probability").joint
            for a, b in explain.PAPER_BETAS
        ]
    )
    np.testing.assert_array_equal(pick, np.argmax(joints, axis=0))
    np.testing.assert_allclose(best.joint, joints.max(axis=0))
    # batch: the mean of per-row curves, rows grouped by their own class
    cls = np.array([0, 1, 2, 1, 0, 2])
    params = explain.MethodParams(steps=10)
    snaps = list(
        explain.curves_steps(
            None,
            T,
            Xb,
            cls,
            params=params,
            output="probability",
            n_random=4,
            chunk=4,
            step_seconds=0.0,
        )
    )
    assert [s["done"] for s in snaps] == [4, 6]
    res = snaps[-1]["result"]
    assert res.n_rows == 6
    sh = np.stack([tg.shapley(T, Xb[r], int(cls[r])) for r in range(6)])
    ins = np.stack(
        [
            tg.insertion_deletion(T, Xb[r], sh[r], int(cls[r]), "probability").insertion
            for r in range(6)
        ]
    )
    np.testing.assert_allclose(res.curves["Shapley"].insertion, ins.mean(axis=0), atol=1e-12)
    assert explain.RANDOM in res.curves and explain.BEST not in res.curves  # 13 features > 12
    table = res.auc_table().set_index("method")
    assert table.loc["Shapley", "insertion_auc"] == pytest.approx(ins.mean())
    per_row = res.per_row_auc
    assert len(per_row[per_row.method == "Shapley"]) == 6
    long = res.to_frame()
    assert set(long.columns) == {"method", "k", "insertion", "deletion"}
    assert len(long[long.method == "Shapley"]) == 14


# ---------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------


def test_curves_figure_legend_carries_the_engine_auc(wine_gb):
    T, X = wine_gb
    res = explain.batch_curves(
        T, X[:3], 1, params=explain.MethodParams(steps=5), output="probability", n_random=2
    )
    for which in ("insertion", "deletion"):
        fig = treegrad_figures.curves_figure(res.curves, which, y_label="P(class 1)", n_rows=3)
        assert len(fig.data) == len(res.curves)
        for tr in fig.data:
            cv = res.curves[tr.meta["method"]]
            auc = float(cv.auc_insertion if which == "insertion" else cv.auc_deletion)
            assert tr.name == treegrad_figures.curve_label(tr.meta["method"], auc)
            shown = float(re.search(r"AUC ([-0-9.e]+)\)", tr.name).group(1))
            assert shown == pytest.approx(auc, rel=1e-3)
            np.testing.assert_array_equal(tr.y, getattr(cv, which))
        assert "mean over 3 rows" in fig.layout.title.text
        assert fig.layout.yaxis.title.text == "P(class 1)"
    with pytest.raises(ValueError, match="insertion"):
        treegrad_figures.curves_figure(res.curves, "both")


@pytest.mark.slow
def test_attribution_figure_bars(wine_gb):
    T, X = wine_gb
    ex = explain.explain(T, X[0], 0, explain.MethodParams(steps=5))
    names = [f"f{j}" for j in range(13)]
    fig = treegrad_figures.attribution_figure(ex.scores, names, top_k=5)
    assert len(fig.data) == 6
    mag = np.max(np.abs(np.stack(list(ex.scores.values()))), axis=0)
    top = np.argsort(-mag, kind="stable")[:5]
    for tr, s in zip(fig.data, ex.scores.values(), strict=True):
        assert list(tr.y) == [names[j] for j in top]
        np.testing.assert_array_equal(tr.x, s[top])
    norm = treegrad_figures.attribution_figure(ex.scores, names, top_k=None, normalise=True)
    for tr in norm.data:
        assert np.max(np.abs(tr.x)) == pytest.approx(1.0)


def test_ranker_figure_shows_the_history(wine_gb):
    T, X = wine_gb
    ga = tg.rank(T, X[1], 1, "ga", steps=12)
    adam = tg.rank(T, X[1], 1, "adam", steps=12)
    fig = treegrad_figures.ranker_figure(
        {"GA": ga, "Adam": adam}, [f"f{j}" for j in range(13)], heat="Adam", top_k=4
    )
    heat = fig.data[0]
    keep = np.argsort(-np.abs(adam.scores), kind="stable")[:4]
    np.testing.assert_array_equal(np.asarray(heat.z), adam.z_history[:, keep].T)
    np.testing.assert_array_equal(fig.data[1].y, ga.objective)
    np.testing.assert_array_equal(fig.data[2].y, adam.objective)


def test_gamma_tree_figure_labels_the_path(small_reg):
    m, T, X = small_reg
    x = X[5]
    g = explain.edge_gammas(T, x)
    path = T.decision_path(x)
    fig = treegrad_figures.gamma_tree_figure(T, g, path)
    texts = [a.text for a in fig.layout.annotations if "\u03b3=" in a.text]
    assert len(texts) == 2 * (len(path) - 1)  # each path edge and its sibling
    assert (
        f"{T.feature_labels(None)[T.feature[0]]}: \u03b3={g[path[1]]:.3g}" in texts
    )  # path edges name the feature
    assert texts.count("\u03b3=0") == len(path) - 1
    hover = " ".join(h for tr in fig.data if tr.hovertext is not None for h in tr.hovertext)
    assert f"gamma of the edge into this node: {g[path[-1]]:.4g}" in hover


@pytest.mark.slow
def test_numerics_jobs_and_figures():
    snaps = list(explain.error_vs_depth_steps(None, depths=(3, None), n_rows=4000, n_samples=2))
    df = snaps[-1]["rows"]
    assert [s["done"] for s in snaps] == [1, 2]
    deep = df[df.depth == df.depth.max()].set_index("method")["max_abs_error"]
    assert df.depth.max() >= 25
    assert deep["TreeGrad-Shap"] <= 1e-12
    assert deep["Chebyshev nodes (Linear TreeShap)"] > 1e3 * max(deep["TreeGrad-Shap"], 1e-16)
    fig = treegrad_figures.error_depth_figure(df)
    assert fig.layout.yaxis.type == "log" and len(fig.data) == df.method.nunique()
    rt = list(explain.runtime_vs_leaves_steps(None, leaves=(50, 200), repeat=1))[-1]["rows"]
    assert set(rt.leaves) == {50, 200} and (rt.seconds > 0).all()
    assert len(treegrad_figures.runtime_figure(rt).data) == rt.method.nunique()


# ---------------------------------------------------------------------------------------
# AppTest
# ---------------------------------------------------------------------------------------


def _open(app, ds):
    app.selectbox(key="ds").set_value(ds).run()
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    return app


def _charts(app):
    import json

    return [json.loads(c.proto.spec) for c in app.get("plotly_chart")]


def _arr(v):
    """A plotly JSON array: a list, or plotly 6's ``{"dtype", "bdata"}`` base64 encoding."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
    return np.asarray(v)


def _attr_x(app):
    figs = [f for f in _charts(app) if "Attributions" in f["layout"]["title"]["text"]]
    assert len(figs) == 1
    return [tuple(_arr(tr["x"]).tolist()) for tr in figs[0]["data"]]


def _curve_names(app):
    return [
        tr["name"]
        for f in _charts(app)
        if "curves" in f["layout"]["title"]["text"]
        for tr in f["data"]
    ]


@pytest.mark.slow
def test_page_classification_edit_a_feature(app):
    at = _open(app, "wine")
    assert at.title[0].value == "Feature ranking (TreeGrad)"
    assert not at.error
    before, curves_before = _attr_x(at), _curve_names(at)
    assert any("AUC" in nm for nm in curves_before) and any(
        nm.startswith("Ranker Adam") for nm in curves_before
    )
    assert len(_charts(at)) == 6  # attributions, tau, insertion, deletion, ranker, tree
    # what-if: edit the most important feature far out of its range
    names = list(at.selectbox(key="tg_edit_feature").options)
    top = int(np.argmax(np.abs(np.array(before[0]))))
    figs = [f for f in _charts(at) if "Attributions" in f["layout"]["title"]["text"]]
    top_name = figs[0]["data"][0]["y"][top]
    at.selectbox(key="tg_edit_feature").set_value(names.index(top_name)).run()
    row = at.selectbox(key="tg_row").value
    (field,) = [w for w in at.number_input if w.key and w.key.startswith("tg_x::")]
    assert field.key.endswith(f"::{row}::{names.index(top_name)}")
    # far below or far above every threshold: one of them changes the sample's path on the
    # feature the tree relies on most for it
    changed = False
    for value in (-1e6, 1e6):
        field.set_value(value).run()
        assert not at.exception, at.exception
        assert any("What-if" in i.value for i in at.info)
        if _attr_x(at) != before:
            changed = True
            assert _curve_names(at) != curves_before
            break
    assert changed
    # reset brings the row's own values back
    at.button(key="tg_reset_btn").click().run()
    assert _attr_x(at) == before
    # class choice and method parameters
    at.selectbox(key="tg_class").set_value(0).run()
    at.number_input(key="tg_alpha").set_value(16).run()
    assert not at.exception
    assert any(
        "Beta(16,1)" in (f["layout"].get("annotations") or [{}])[2].get("text", "")
        for f in _charts(at)
        if "Attributions" in f["layout"]["title"]["text"]
    )
    names_csv = [d for d in at.get("download_button")]
    assert names_csv


@pytest.mark.slow
def test_page_settings_come_back_when_streamlit_dropped_them(app):
    # Switching page while a job's fragment polls made Streamlit drop the page's widget
    # values (seen in the browser: Max depth back at 6 after a visit to the Data page).
    at = _open(app, "diabetes")
    at.number_input(key="tg_depth").set_value(3).run()
    row = at.selectbox(key="tg_row").value
    (field,) = [w for w in at.number_input if w.key and w.key.startswith("tg_x::")]
    field.set_value(123.0).run()
    assert any("What-if" in i.value for i in at.info)
    at.switch_page("pages/data.py").run()
    for key in ("tg_depth", field.key):
        del at.session_state[key]  # what Streamlit's stale-widget cleanup did
    at.switch_page("pages/feature_ranking.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="tg_depth").value == 3
    assert at.number_input(key=field.key).value == 123.0
    assert at.selectbox(key="tg_row").value == row
    # Reset still removes the edit for good (the saved copy goes too)
    at.button(key="tg_reset_btn").click().run()
    at.switch_page("pages/data.py").run()
    at.switch_page("pages/feature_ranking.py").run()
    assert not any("What-if" in i.value for i in at.info)


@pytest.mark.slow
def test_page_regression_boosting_batch_job(app):
    at = _open(app, "diabetes")
    at.selectbox(key="tg_kind").set_value("boosting").run()
    at.number_input(key="tg_trees").set_value(10).run()
    assert not at.exception and not at.error
    assert len(_curve_names(at)) > 0
    at.radio(key="tg_mode").set_value("batch").run()
    at.slider(key="tg_batch").set_value(6).run()
    at.button(key="tg_batch_run").click().run()
    job = at.session_state["tg_batch_job"]
    assert job.join(120) and job.status == "done", job.error
    at.run()
    assert not at.exception, at.exception
    names = _curve_names(at)
    assert any(nm.startswith("Best achievable") for nm in names)  # 10 features <= 12
    res = job.result
    shap_auc = float(res.curves["Shapley"].auc_insertion)
    assert treegrad_figures.curve_label("Shapley", shap_auc) in names
    assert res.n_rows == 6


@pytest.mark.slow
def test_page_batch_curves_of_a_tree_classifier_are_probabilities(app):
    at = _open(app, "wine")  # a decision tree: the game is the class probability
    at.radio(key="tg_mode").set_value("batch").run()
    at.slider(key="tg_batch").set_value(3).run()
    at.button(key="tg_batch_run").click().run()
    assert at.session_state["tg_batch_job"].join(120)
    at.run()
    assert not at.exception, at.exception
    titles = {
        f["layout"]["yaxis"]["title"]["text"]
        for f in _charts(at)
        if "curves" in f["layout"]["title"]["text"]
    }
    assert titles == {"P(predicted class)"}


@pytest.mark.slow
def test_page_curves_of_another_dataset_say_so(app):
    # A batch run on one dataset, then another dataset picked: the page showed the old
    # curves (30 features of breast cancer under Iris's 4) saying only "computed with other
    # settings".  It now names the dataset they were computed on (so do a sample's
    # background curves, drawn for big models only).
    at = _open(app, "iris")
    at.radio(key="tg_mode").set_value("batch").run()
    at.slider(key="tg_batch").set_value(3).run()
    at.button(key="tg_batch_run").click().run()
    assert at.session_state["tg_batch_job"].join(120)
    at.run()
    assert not any("another dataset" in i.value for i in at.info)
    at.selectbox(key="ds").set_value("wine").run()
    assert not at.exception, at.exception
    notes = [i.value for i in at.info if "computed on another dataset" in i.value]
    assert len(notes) == 1 and "**Iris**" in notes[0] and "Model: Decision tree." in notes[0]
    assert not any("other settings" in c.value for c in at.caption)


@pytest.mark.slow
def test_page_running_job_stays_stoppable_when_the_page_stops_early(app):
    # 'Max leaves' = 1 (or a dataset the page refuses) stopped the page above the tabs: a
    # running batch vanished with its Stop button and ran on until its 300 s budget.
    def forever(ctx):  # a batch job that runs until Stop
        while True:
            ctx.cancel_event.wait(0.01)
            yield {"done": 0, "total": 9}

    at = _open(app, "iris")
    at.session_state["tg_batch_job"] = Job(forever, budget=60, name="tg_batch").start()
    at.number_input(key="tg_leaves").set_value(1).run()
    assert not at.exception, at.exception
    assert any("Max leaves must be 0" in e.value for e in at.error)
    assert any("batch of curves job is still running" in i.value for i in at.info)
    at.button(key="tg_batch_stop").click().run()
    job = at.session_state["tg_batch_job"]
    assert job.join(30) and job.status == "cancelled"
    assert not any("still running" in i.value for i in at.info)


@pytest.mark.slow
def test_page_batch_size_kept_from_a_bigger_dataset(app):
    at = _open(app, "digits")
    at.radio(key="tg_mode").set_value("batch").run()
    at.slider(key="tg_batch").set_value(400).run()
    at.selectbox(key="ds").set_value("iris").run()  # 38 test rows
    assert not at.exception, at.exception
    assert at.slider(key="tg_batch").max == 38 and at.slider(key="tg_batch").value == 38


@pytest.mark.slow
def test_page_dataset_widgets_start_again_on_another_dataset(app):
    # "Features shown 4 of 10" and "Rows in the batch 38": values set on one dataset were
    # kept on the next one, saved copies too (SavedSettings put them back).
    at = _open(app, "iris")  # 4 features, 38 test rows
    at.slider(key="tg_topk").set_value(2).run()
    at.selectbox(key="tg_edit_feature").set_value(3).run()
    at.radio(key="tg_mode").set_value("batch").run()
    at.slider(key="tg_batch").set_value(10).run()
    assert at.slider(key="tg_topk").value == 2 and at.slider(key="tg_batch").value == 10
    at.selectbox(key="ds").set_value("wine").run()  # 13 features, 45 test rows
    assert not at.exception, at.exception
    shown = at.slider(key="tg_topk")
    assert (shown.max, shown.value) == (13, 13)
    batch = at.slider(key="tg_batch")
    assert (batch.max, batch.value) == (45, 45)
    assert at.selectbox(key="tg_edit_feature").value == 0
    assert len(_attr_x(at)[0]) == 13
    # settings that do not depend on the dataset are kept
    assert at.radio(key="tg_mode").value == "batch"
    # a value set on wine survives a page switch that dropped it (the saved copy) ...
    at.slider(key="tg_topk").set_value(5).run()
    at.switch_page("pages/data.py").run()
    del at.session_state["tg_topk"]
    at.switch_page(PAGE).run()
    assert at.slider(key="tg_topk").value == 5
    # ... but not a switch to another dataset made on another page
    at.switch_page("pages/data.py").run()
    del at.session_state["tg_topk"]
    at.selectbox(key="ds").set_value("iris").run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert (at.slider(key="tg_topk").max, at.slider(key="tg_topk").value) == (4, 4)


@pytest.mark.slow
def test_page_stopped_batch_says_how_many_rows_finished(app):
    # a stopped job's result is its last snapshot {"done", "total", "result": CurveSet}
    from engine.data import load_bundled, make_dataset

    df, _r, entry = load_bundled("diabetes")
    ds = make_dataset(df, entry["target"])
    tree = DecisionTreeRegressor(max_depth=3, random_state=0).fit(ds.X, ds.y)
    partial = explain.batch_curves(tree, ds.X[:4], None, n_random=2, seed=0)

    def forever(ctx):
        while True:
            yield {"done": 4, "total": 9, "result": partial}

    at = _open(app, "diabetes")
    at.radio(key="tg_mode").set_value("batch").run()
    job = Job(forever, budget=30, name="tg_batch").start()
    deadline = time.monotonic() + 30
    while job.snapshot().latest is None and time.monotonic() < deadline:
        time.sleep(0.01)
    job.cancel()
    assert job.join(30) and job.status == "cancelled"
    at.session_state["tg_batch_job"] = job
    at.run()
    assert not at.exception, at.exception
    assert any(w.value == "Stopped: showing the 4 of 9 rows that finished." for w in at.warning), [
        w.value for w in at.warning
    ]
    assert any(nm.startswith("Shapley") for nm in _curve_names(at))  # the 4 rows' curves
    assert any(b.key == "tg_rows_dl" for b in at.get("download_button"))


@pytest.mark.slow
def test_page_categorical_remembered_model_and_numerics(app):
    at = _open(app, "penguins")
    assert not at.exception and not at.error
    names = list(at.selectbox(key="tg_edit_feature").options)
    before = _attr_x(at)
    # penguins: island and sex are categorical -> a selectbox of their labels
    options = at.selectbox(key="tg_edit_feature").options
    island = next(i for i, o in enumerate(options) if o == "island")
    at.selectbox(key="tg_edit_feature").set_value(island).run()
    (box,) = [w for w in at.selectbox if w.key and w.key.startswith("tg_x::")]
    assert set(box.options) == {"Biscoe", "Dream", "Torgersen"}
    other = next(o for o in box.options if o != box.value)
    box.set_value(box.options.index(other)).run()
    assert not at.exception, at.exception
    assert any("island" in i.value and other in i.value for i in at.info)
    assert names and _attr_x(at) is not None and before is not None
    # a model remembered by another page on the same dataset
    from engine.data import load_bundled, make_dataset
    from pages._shared import dataset_digest

    df, _r, entry = load_bundled("wine")
    ds = make_dataset(df, entry["target"], missing="drop")
    m = DecisionTreeClassifier(max_depth=3, random_state=0).fit(ds.X, ds.y)
    at.session_state["fitted_models"] = {
        "CART, wine": {
            "model": m,
            "digest": dataset_digest(ds),
            "source": "Compare models",
            "meta": {},
        }
    }
    at = _open(at, "wine")
    at.radio(key="tg_source").set_value("remembered").run()
    assert not at.exception, at.exception
    assert any("Compare models" in c.value for c in at.caption)
    assert any(f"{m.get_n_leaves()} leaves" in c.value for c in at.caption)
    # numerics job (small)
    at.multiselect(key="tg_num_depths").set_value([5, 0]).run()
    at.select_slider(key="tg_num_rows").set_value(5000).run()
    at.button(key="tg_num_run").click().run()
    job = at.session_state["tg_num_job"]
    assert job.join(120) and job.status == "done", job.error
    at.run()
    assert not at.exception
    errs = [f for f in _charts(at) if "error vs tree depth" in f["layout"]["title"]["text"]]
    assert errs and len(errs[0]["data"]) >= 3


@pytest.mark.slow
def test_page_remembered_without_models_and_tiny_upload(app):
    at = _open(app, "iris")
    at.radio(key="tg_source").set_value("remembered").run()
    assert not at.exception
    assert any("No model has been fitted" in i.value for i in at.info)
    csv = "a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(8))
    at.switch_page("pages/data.py").run()
    at.file_uploader(key="uploader").set_value(("tiny.csv", csv.encode(), "text/csv")).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("at least 10" in e.value for e in at.error)


# ---------------------------------------------------------------------------------------
# browser
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.e2e
def test_browser_edit_feature_redraws_curves(page, app_url, tmp_path):
    from playwright.sync_api import expect

    from tests.test_e2e import no_exception, wait_idle

    page.set_viewport_size({"width": 1400, "height": 1600})
    page.goto(app_url + "/feature_ranking?ds=iris")
    expect(page.get_by_role("heading", name="Feature ranking (TreeGrad)")).to_be_visible(
        timeout=90_000
    )
    wait_idle(page)
    no_exception(page)
    page.get_by_role("tab", name="Insertion / deletion").click()
    legend_js = (
        "() => Array.from(document.querySelectorAll("
        "'[data-testid=stPlotlyChart] .js-plotly-plot')).filter(e => e.layout.title"
        " && e.layout.title.text.includes('Insertion curves')).map(e => e.data.map(t => "
        "t.name).join('|'))"
    )
    page.wait_for_function(f"({legend_js})().length > 0", timeout=30_000)
    before = page.evaluate(legend_js)
    assert "AUC" in before[0]
    page.screenshot(path=tmp_path / "fr_before.png", full_page=True)
    box = page.get_by_test_id("stSelectbox").filter(has_text="Feature to edit").first
    box.click()
    page.get_by_role("option", name="petal width (cm)").click()
    wait_idle(page)
    field = page.get_by_role("spinbutton", name=re.compile("Value of petal width"))
    field.fill("2.2")
    field.press("Enter")
    wait_idle(page)
    expect(page.get_by_text("What-if").first).to_be_visible(timeout=30_000)
    no_exception(page)
    page.wait_for_function(
        f"({legend_js})().length > 0 && ({legend_js})()[0] !== {before[0]!r}", timeout=30_000
    )
    after = page.evaluate(legend_js)
    assert after[0] != before[0]
    page.screenshot(path=tmp_path / "fr_after.png", full_page=True)
