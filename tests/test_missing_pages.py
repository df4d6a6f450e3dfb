"""The conditional inference page and the Literati page on a table with missing values
(penguins with "keep (trees route them)": 19 values missing in 5 columns), in
AppTest: they run, say how they treat missing values (the engine's caption), and the
conditional inference node view counts the rows a split routed by the missing-value rule."""

import numpy as np
import pytest

from engine.cit.tree import MISSING_VALUES_CAPTION as CIT_CAPTION
from engine.literati.estimator import MISSING_VALUES_CAPTION as LITERATI_CAPTION

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
    assert any(c.value == CIT_CAPTION for c in app.caption)
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
    assert any(c.value == LITERATI_CAPTION for c in app.caption)
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
