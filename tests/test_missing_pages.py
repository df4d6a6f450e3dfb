"""The conditional inference page and the Literati page on a table with missing values
(penguins with "keep (trees route them)": 19 values missing in 5 columns), in
AppTest: they run, say how they treat missing values (the engine's caption), and the
conditional inference node view counts the rows a split routed by the missing-value rule."""

import numpy as np
import pytest

from engine.cit.tree import MISSING_VALUES_CAPTION as CIT_CAPTION
from engine.literati.estimator import MISSING_VALUES_CAPTION as LITERATI_CAPTION
from engine.teaching.glossary import unlink_terms

TIMEOUT = 180


def keep_missing(app, dataset="penguins"):
    app.selectbox(key="missing").set_value("keep").run()
    app.selectbox(key="ds").set_value(dataset).run()
    assert not app.exception, app.exception


@pytest.mark.slow  # a page run and a fit: 10-40 s
def test_cit_page_runs_on_missing_values_and_counts_the_routed_rows(app):
    keep_missing(app)
    app.session_state["ci_n_trees"] = 5
    app.switch_page("pages/conditional_inference.py").run()
    assert not app.exception, app.exception
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    assert any(unlink_terms(c.value) == CIT_CAPTION for c in app.caption)
    meta = app.session_state["ci_job_meta"]
    assert np.isnan(meta["X"]).any()
    est = app.session_state["ci_job"].result["tree"]
    routed = [
        v
        for v in range(est.tree_.node_count)
        if est.tree_.children_left[v] >= 0 and est.node_records_[v].get("n_missing_routed")
    ]
    if routed:  # the node view says how many rows the split routed by the rule
        v = routed[0]
        app.selectbox(key="ci_node_view").set_value(v).run()
        assert not app.exception, app.exception
        n = est.node_records_[v]["n_missing_routed"]
        assert any(f"The split routed {n} rows with a missing" in m.value for m in app.markdown)


@pytest.mark.slow  # a page run and a search: 10-40 s
def test_literati_page_runs_on_missing_values(app):
    keep_missing(app)
    app.switch_page("pages/optimal_shape_trees.py").run()
    assert not app.exception, app.exception
    assert any(unlink_terms(c.value) == LITERATI_CAPTION for c in app.caption)
    app.slider(key="lit_depth").set_value(2)
    app.number_input(key="lit_time").set_value(5.0)
    app.button(key="lit_run").click().run()
    assert app.session_state["lit_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    meta = app.session_state["lit_job_meta"]
    assert np.isnan(meta["X"]).any()
    main = app.session_state["_lit_results"][1]["models"]["main"]
    assert main.tree_.routes_missing


@pytest.mark.slow  # a page run and a comparison: 10-40 s
def test_compare_page_keeps_missing_values_and_names_the_fallback_model(app):
    from engine.compare import MISSING_VALUES_CAPTION, REGISTRY

    keep_missing(app)
    app.switch_page("pages/compare.py").run()
    assert not app.exception, app.exception
    assert not any("cannot use missing values" in m.value for m in app.info), app.info
    assert any(unlink_terms(c.value) == MISSING_VALUES_CAPTION for c in app.caption)
    app.multiselect(key="cmp_models").set_value(["sklearn_tree", "sklearn_boosting"]).run()
    app.slider(key="cmp_folds").set_value(3)
    app.number_input(key="cmp_sklearn_boosting_n_estimators").set_value(10).run()
    app.button(key="cmp_run").click().run()
    assert app.session_state["cmp_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    meta = app.session_state["cmp_job_meta"]
    X = meta["X"]
    n_rows, n_complete = X.shape[0], int((~np.isnan(X).any(axis=1)).sum())
    assert n_complete < n_rows
    label = REGISTRY["sklearn_boosting"].label
    notes = [m.value for m in app.info if "cannot take missing values" in m.value]
    assert len(notes) == 1 and notes[0].startswith(md_escaped(label)), notes
    assert f"{n_rows - n_complete} rows with missing values left out" in notes[0]
    result = app.session_state["cmp_job"].result
    rows = result.summary.set_index("model")["rows"]
    assert rows[label] == n_complete
    assert rows[REGISTRY["sklearn_tree"].label] == n_rows
    # the drawn scikit-learn tree's hover counts the training rows each split routed
    # by its missing-value side (scikit-learn records none: counted on the refit's rows)
    tree = result.models["sklearn_tree"].tree_
    root_missing = int(np.isnan(X[:, tree.feature[0]]).sum())
    assert root_missing > 0
    hovers = [str(h) for c in app.get("plotly_chart") for h in _hovertexts(c.proto.spec)]
    root = [h for h in hovers if h.startswith("<b>node 0</b> (split, depth 0)")]
    assert root, "the tree is drawn"
    side = "left" if tree.missing_go_to_left[0] else "right"
    assert f"missing values \u2192 {side} ({root_missing} training rows routed so)" in root[0]


def _hovertexts(spec: str) -> list:
    import json

    return [h for trace in json.loads(spec)["data"] for h in trace.get("hovertext") or []]


def md_escaped(text: str) -> str:
    """``text`` as the pages' ``md`` escapes it for Markdown."""
    from pages._shared import md

    return md(text)


def _penguins_kept():
    """The penguins dataset as the sidebar keeps it (missing values kept)."""
    from engine.data import load_bundled, make_dataset

    df, _report, entry = load_bundled("penguins")
    return make_dataset(df, entry["target"], missing="keep")


@pytest.mark.slow  # page runs with three fits: 20-60 s
def test_feature_ranking_explains_rows_with_missing_values(app):
    from engine.treegrad.service import MISSING_VALUES_CAPTION

    ds = _penguins_kept()
    keep_missing(app)
    app.switch_page("pages/feature_ranking.py").run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    assert any(unlink_terms(c.value) == MISSING_VALUES_CAPTION for c in app.caption)
    names = list(app.selectbox(key="tg_edit_feature").options)
    assert len(names) == ds.n_features
    sex = list(ds.feature_names).index("sex")
    missing_sex = np.isnan(ds.X[:, sex])
    # every test row is offered, those with missing values too
    rows = [int(r.split()[1]) for r in app.selectbox(key="tg_row").options]  # "row 12 (...)"
    nan_rows = [r for r in rows if missing_sex[r]]
    assert nan_rows, "the seeded split holds a row without a value for sex"
    app.selectbox(key="tg_row").set_value(nan_rows[0]).run()
    app.selectbox(key="tg_edit_feature").set_value(sex).run()
    assert not app.exception, app.exception
    field = next(w for w in app.selectbox if w.key and w.key.startswith("tg_x::"))
    assert field.value == -1 and field.options[field.index] == "(missing)"
    assert not any("What-if" in i.value for i in app.info)  # the row's own value: no edit
    assert any("Attributions" in str(c.proto.spec) for c in app.get("plotly_chart"))
    # a missing numeric value: an empty box, still no what-if
    num = list(ds.feature_names).index("bill_length_mm")
    both = [r for r in rows if np.isnan(ds.X[r, num])]
    if both:
        app.selectbox(key="tg_row").set_value(both[0]).run()
        app.selectbox(key="tg_edit_feature").set_value(num).run()
        assert not app.exception, app.exception
        field = next(w for w in app.number_input if w.key and w.key.startswith("tg_x::"))
        assert field.value is None
        assert not any("What-if" in i.value for i in app.info)
    # a forest routes missing values too: every test row
    app.selectbox(key="tg_kind").set_value("forest").run()
    assert not app.exception, app.exception
    assert len(app.selectbox(key="tg_row").options) == len(rows)
    # scikit-learn's gradient boosting cannot: complete rows only, and the page says so
    app.selectbox(key="tg_kind").set_value("boosting").run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    complete = ~np.isnan(ds.X).any(axis=1)
    offered = [int(r.split()[1]) for r in app.selectbox(key="tg_row").options]
    assert offered == [r for r in rows if complete[r]]
    notes = [i.value for i in app.info if "cannot take missing values" in i.value]
    n_left = sum(not complete[r] for r in rows)
    assert len(notes) == 1, notes
    assert notes[0].startswith("Gradient boosting (scikit-learn) cannot take missing values")
    assert f"({n_left} left out)" in notes[0]
