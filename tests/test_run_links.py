"""Runs that survive a reload (issue 16 point 1): a finished job's result is kept in the run
store, its id goes into the URL, and a fresh session opened with ``?run=<id>`` draws the
same tables from the store without starting a job; bad ids give a warning naming them."""

import time

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine import jobs as jobs_module
from engine.store import RunStore
from tests.conftest import APPTEST_TIMEOUT, ROOT

TIMEOUT = 120


@pytest.fixture
def store_folder(tmp_path, monkeypatch):
    """A run store of its own for the test (the app opens it from the environment)."""
    folder = tmp_path / "runs"
    monkeypatch.setenv("TREELAB_RUN_STORE", str(folder))
    yield folder
    st.cache_resource.clear()


def forbid_jobs(monkeypatch) -> list:
    """From now on, constructing a job fails the test (a restore that silently refits);
    returns the list of attempts."""
    made = []

    class NoJob(jobs_module.Job):
        def __init__(self, *args, **kwargs):
            made.append(args)
            raise AssertionError("a job was started while reopening a run")

    monkeypatch.setattr(jobs_module, "Job", NoJob)
    return made


def fresh_app(monkeypatch, page: str, link: str | dict) -> AppTest:
    """A new browser session (a reload or the link opened elsewhere) on ``page`` with the
    link's query (a dict: the first session's ``query_params``; a str: ``run=<id>``
    only), after the server's cached store is dropped (as after a restart)."""
    from streamlit.testing.v1 import app_test as app_test_module

    from tests.conftest import navigation_pages_manager

    st.cache_resource.clear()
    monkeypatch.setattr(app_test_module, "PagesManager", navigation_pages_manager())
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APPTEST_TIMEOUT)
    at.query_params.update(link if isinstance(link, dict) else {"run": link})
    at.switch_page(page).run()  # the link opens that page
    assert not at.exception, at.exception
    return at


def warnings_of(at) -> list[str]:
    return [w.value for w in at.warning]


def run_caption(at) -> str:
    return next(c.value for c in at.caption if "is kept" in c.value)


@pytest.mark.slow
def test_compare_run_reopens_from_its_link_without_refitting(app, store_folder, monkeypatch):
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree", "sklearn_forest"])
    app.slider(key="cmp_folds").set_value(3)
    app.button(key="cmp_run").click().run()
    assert app.session_state["cmp_job"].join(TIMEOUT)
    app.run()
    assert not app.exception
    run_id = app.query_params["run"]
    assert RunStore(store_folder).load(run_id).kind == "compare"
    caption = run_caption(app)
    assert run_id in caption and "run=" + run_id in caption
    assert "Runs are kept for 7 days" in caption and "2.0 GiB" in caption
    table = app.dataframe[0].value
    app.run()  # a rerun keeps the same run (saved once)
    assert app.query_params["run"] == run_id and len(RunStore(store_folder)) == 1

    made = forbid_jobs(monkeypatch)
    again = fresh_app(monkeypatch, "pages/compare.py", dict(app.query_params))
    assert not made
    assert type(again.session_state["cmp_job"]).__name__ == "StoredJob"
    assert not warnings_of(again)
    restored = again.dataframe[0].value
    assert list(restored["model"]) == list(table["model"])
    assert restored["accuracy"].tolist() == table["accuracy"].tolist()
    assert restored["accuracy"].between(0.8, 1.0).all()
    assert again.query_params["run"] == run_id
    assert run_id in run_caption(again)
    assert len(RunStore(store_folder)) == 1  # reopening does not store it again


@pytest.mark.parametrize("bad", ["nope", "well-formed-but-unknown"])
def test_a_bad_or_unknown_run_id_warns_and_the_page_goes_on(
    warm_engine, store_folder, monkeypatch, bad
):
    """``run=nope`` (not an id) and an unknown well-formed id: a warning naming the id and
    what to do, no traceback, no job, and the page as without it (Run enabled)."""
    # underscores at the edges: shown as written (Markdown would take them for emphasis)
    run_id = "_unknown_but_formed-0_" if bad != "nope" else bad
    assert len(run_id) == 22 or bad == "nope"
    made = forbid_jobs(monkeypatch)
    at = fresh_app(monkeypatch, "pages/compare.py", run_id)
    texts = warnings_of(at)
    assert len(texts) == 1 and run_id in texts[0] and "press **Run**" in texts[0]
    if bad == "nope":
        assert "is not a run id" in texts[0]
    else:
        assert "is not in the store: it expired" in texts[0]
    assert "cmp_job" not in at.session_state and not made
    assert not at.button(key="cmp_run").disabled
    assert any("press **Run**" in i.value for i in at.info)  # the idle text: page goes on
    at.run()  # the warning stays while the URL names the id, without reloading it
    assert warnings_of(at) == texts


@pytest.mark.slow
def test_optimal_shape_trees_run_reopens_without_searching_again(app, store_folder, monkeypatch):
    """Literati on iris: the stored run holds the search's results (not the live search
    objects); a fresh session draws the same baselines table and tree, and neither a job
    nor a search (``search_results``) runs."""
    import pages._shared  # noqa: F401 (the page imports it)
    from engine.literati import service as literati_service

    app.switch_page("pages/optimal_shape_trees.py").run()
    app.slider(key="lit_depth").set_value(2)
    app.number_input(key="lit_time").set_value(5.0)
    app.button(key="lit_run").click().run()
    assert app.session_state["lit_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    run_id = app.query_params["run"]
    table = app.session_state["_lit_results"][1]["table"]
    shown = [frame.value for frame in app.dataframe]
    assert run_id in run_caption(app)

    made = forbid_jobs(monkeypatch)

    def no_search(*args, **kwargs):
        raise AssertionError("the search results were recomputed")

    monkeypatch.setattr(literati_service, "search_results", no_search)
    again = fresh_app(monkeypatch, "pages/optimal_shape_trees.py", run_id)
    assert not made and not warnings_of(again)
    assert type(again.session_state["lit_job"]).__name__ == "StoredJob"
    back = again.session_state["_lit_results"][1]["table"]
    pd.testing.assert_frame_equal(back, table)
    assert list(table["model"])[0] == "Literati, K_max = 2"
    for before, after in zip(shown, [frame.value for frame in again.dataframe], strict=True):
        pd.testing.assert_frame_equal(before, after)
    assert any("Proven optimal" in s.value for s in again.success)


@pytest.mark.slow
def test_split_strategies_run_reopens_without_refitting(app, store_folder, monkeypatch):
    app.switch_page("pages/split_strategies.py").run()
    app.slider(key="ss_cv_folds").set_value(3)
    app.button(key="ss_run").click().run()
    assert app.session_state["ss_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    run_id = app.query_params["run"]
    cv = app.dataframe[-1].value
    made = forbid_jobs(monkeypatch)
    again = fresh_app(monkeypatch, "pages/split_strategies.py", run_id)
    assert not made and not warnings_of(again)
    pd.testing.assert_frame_equal(again.dataframe[-1].value, cv)
    assert (cv["accuracy"] > 0.85).all()


def metrics_of(at) -> dict:
    return {m.label: m.value for m in at.metric}


@pytest.mark.slow
def test_conditional_density_growth_and_comparison_reopen_together(app, store_folder, monkeypatch):
    """Both jobs of the page in one run: the grown model's metrics and the comparison table
    come back in a fresh session; the growth alone was kept first, then both."""
    app.selectbox(key="ds").set_value("heteroscedastic").run()
    app.switch_page("pages/conditional_density.py").run()
    app.number_input(key="pt_max_leaves_regression").set_value(12)
    app.button(key="pt_run").click().run()
    assert app.session_state["pt_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    grown_only = app.query_params["run"]
    app.button(key="pt_cmp_run").click().run()
    assert app.session_state["pt_cmp_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    run_id = app.query_params["run"]
    assert run_id != grown_only and len(RunStore(store_folder)) == 2
    assert set(RunStore(store_folder).load(run_id).result["jobs"]) == {"pt", "pt_cmp"}
    metrics, table = metrics_of(app), app.dataframe[-1].value
    assert len(table) == 6
    made = forbid_jobs(monkeypatch)
    again = fresh_app(monkeypatch, "pages/conditional_density.py", dict(app.query_params))
    assert again.query_params["ds"] == "heteroscedastic"
    assert not any("grown on another dataset" in i.value for i in again.info)
    assert not made and not warnings_of(again)
    assert metrics_of(again) == metrics and "Test NLL" in metrics
    pd.testing.assert_frame_equal(again.dataframe[-1].value, table)


@pytest.mark.slow
def test_feature_ranking_batch_curves_reopen_without_refitting(app, store_folder, monkeypatch):
    """TreeGrad's batch of curves on wine: the AUC table comes back in a fresh session on the
    batch view, without a job."""
    app.selectbox(key="ds").set_value("wine").run()
    app.switch_page("pages/feature_ranking.py").run()
    app.radio(key="tg_mode").set_value("batch").run()
    app.slider(key="tg_batch").set_value(4).run()
    app.button(key="tg_batch_run").click().run()
    job = app.session_state["tg_batch_job"]
    assert job.join(TIMEOUT) and job.status == "done", job.error
    app.run()
    assert not app.exception, app.exception
    run_id = app.query_params["run"]
    assert run_id in run_caption(app)
    auc = job.result.auc_table()
    assert job.result.n_rows == 4
    assert any(frame.value.shape == auc.shape for frame in app.dataframe)
    made = forbid_jobs(monkeypatch)
    again = fresh_app(monkeypatch, "pages/feature_ranking.py", dict(app.query_params))
    assert not made and not warnings_of(again)
    assert again.radio(key="tg_mode").value == "batch"
    back = again.session_state["tg_batch_job"].result
    pd.testing.assert_frame_equal(back.auc_table(), auc)
    # every table of the page is the same (the batch's AUC table among them)
    before = [frame.value for frame in app.dataframe]
    after = [frame.value for frame in again.dataframe]
    assert len(after) == len(before)
    for one, other in zip(before, after, strict=True):
        pd.testing.assert_frame_equal(one, other)


@pytest.mark.slow
def test_conditional_inference_fit_and_bias_reopen_without_refitting(
    app, store_folder, monkeypatch
):
    """The CIT page fits by itself on its first visit; the fit and the selection-bias run
    are kept as one run and come back in a fresh session, where no fit starts."""
    app.session_state["ci_n_trees"] = 10
    app.selectbox(key="ds").set_value("wine").run()
    app.switch_page("pages/conditional_inference.py").run()
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    fit_only = app.query_params["run"]
    app.number_input(key="ci_n_noise").set_value(3).run()
    app.button(key="ci_bias_run").click().run()
    assert app.session_state["ci_bias_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    run_id = app.query_params["run"]
    assert run_id != fit_only
    assert set(RunStore(store_folder).load(run_id).result["jobs"]) == {"ci", "ci_bias"}
    ranks = next(d.value for d in app.dataframe if "CIT rank" in d.value.columns)
    bias = next(d.value for d in app.dataframe if "noise" in d.value.columns)
    assert bias["noise"].sum() == 3
    made = forbid_jobs(monkeypatch)
    again = fresh_app(monkeypatch, "pages/conditional_inference.py", dict(app.query_params))
    assert not made and not warnings_of(again)
    assert type(again.session_state["ci_job"]).__name__ == "StoredJob"
    pd.testing.assert_frame_equal(
        next(d.value for d in again.dataframe if "CIT rank" in d.value.columns), ranks
    )
    pd.testing.assert_frame_equal(
        next(d.value for d in again.dataframe if "noise" in d.value.columns), bias
    )


def test_a_run_of_another_page_is_named_with_a_link_to_it(warm_engine, store_folder, monkeypatch):
    """A link whose run belongs to another page (a hand-edited URL): a warning naming the
    run, its page and a link there; no job."""
    run_id = RunStore(store_folder).save("compare", {"jobs": {}}, meta={"page": "compare"})
    made = forbid_jobs(monkeypatch)
    at = fresh_app(monkeypatch, "pages/split_strategies.py", run_id)
    texts = warnings_of(at)
    assert len(texts) == 1 and run_id in texts[0]
    # the page by its name (was its URL key, "the compare page"), the link by its path
    assert "result of the Compare page" in texts[0] and f"./compare?run={run_id}" in texts[0]
    assert f"[Compare](./compare?run={run_id})" in texts[0]
    cit = RunStore(store_folder).save("conditional_inference", {"jobs": {}}, meta={})
    texts = warnings_of(fresh_app(monkeypatch, "pages/split_strategies.py", cit))
    assert "result of the Conditional inference page" in texts[0], texts
    assert "ss_job" not in at.session_state and not made


@pytest.mark.slow
def test_switching_page_drops_this_sessions_run_of_the_other_page(app, store_folder, monkeypatch):
    """After a Compare run, the URL names its run; on another page of the same session it
    is dropped silently (no warning, nothing loaded)."""
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"])
    app.button(key="cmp_run").click().run()
    assert app.session_state["cmp_job"].join(TIMEOUT)
    app.run()
    assert app.query_params["run"] in RunStore(store_folder)
    loads = []
    monkeypatch.setattr(RunStore, "load", lambda self, rid: loads.append(rid))
    app.switch_page("pages/split_strategies.py").run()
    assert not app.exception and not warnings_of(app) and not loads
    assert "run" not in app.query_params


def test_a_stored_run_that_is_not_a_page_run_warns(warm_engine, store_folder, monkeypatch):
    """A run saved under the page's name by other code (not the page kit's layout): a
    warning, not a traceback."""
    run_id = RunStore(store_folder).save("compare", [1, 2, 3])
    at = fresh_app(monkeypatch, "pages/compare.py", run_id)
    texts = warnings_of(at)
    assert len(texts) == 1 and run_id in texts[0] and "cannot be reopened" in texts[0]
    assert "cmp_job" not in at.session_state


def test_a_run_with_no_result_this_page_draws_warns(warm_engine, store_folder, monkeypatch):
    """A run of this page whose jobs are none of the page's (an empty or foreign job set):
    a warning naming it, nothing reopened, no job (it was taken as reopened before)."""
    run_id = RunStore(store_folder).save("compare", {"jobs": {}}, meta={"page": "compare"})
    made = forbid_jobs(monkeypatch)
    at = fresh_app(monkeypatch, "pages/compare.py", run_id)
    texts = warnings_of(at)
    assert len(texts) == 1 and run_id in texts[0] and "no result this page draws" in texts[0]
    assert "cmp_job" not in at.session_state and not made
    assert not [c.value for c in at.caption if "is kept" in c.value]


@pytest.mark.slow
def test_a_stopped_comparison_is_kept_with_the_folds_it_finished(app, store_folder, monkeypatch):
    """Stop keeps the finished folds; the run holds them (status 'cancelled') and a fresh
    session shows the same partial table and says it was stopped."""
    import threading

    import pages._jobs as jobs_kit
    from engine.compare import cross_validate_steps

    held = threading.Event()

    def hold_after_first_rows(ctx, plan):
        """The real comparison until its first rows, then wait for Stop."""
        for snapshot in cross_validate_steps(ctx, plan):
            yield snapshot
            if snapshot["rows"]:
                break
        held.set()
        while not ctx.should_stop():
            time.sleep(0.01)
            yield snapshot

    monkeypatch.setattr(jobs_kit, "cross_validate_steps", hold_after_first_rows, raising=False)
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"])
    app.button(key="cmp_run").click().run()
    assert held.wait(TIMEOUT)
    app.button(key="cmp_stop").click().run()
    assert app.session_state["cmp_job"].status == "cancelled"
    app.run()
    assert not app.exception, app.exception
    run_id = app.query_params["run"]
    assert RunStore(store_folder).load(run_id).result["jobs"]["cmp"]["snapshot"]["status"] == (
        "cancelled"
    )
    table = app.dataframe[0].value
    assert table["folds"].tolist() == [1]  # one fold of five finished before Stop
    made = forbid_jobs(monkeypatch)
    again = fresh_app(monkeypatch, "pages/compare.py", dict(app.query_params))
    assert not made
    assert warnings_of(again) == [
        "The job was stopped; showing the 1 fits (a model on a fold) that finished. "
        "A model with no finished fold is not in the table."
    ]
    pd.testing.assert_frame_equal(again.dataframe[0].value, table)


@pytest.mark.slow
def test_a_store_that_cannot_open_says_so_and_the_result_stays(app, store_folder, monkeypatch):
    """A bad TREELAB_RUN_EXPIRY_DAYS: the result is drawn, the caption says it is not kept
    and why (naming the variable), and no run id goes into the URL."""
    st.cache_resource.clear()
    monkeypatch.setenv("TREELAB_RUN_EXPIRY_DAYS", "a week")
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"])
    app.button(key="cmp_run").click().run()
    assert app.session_state["cmp_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert "run" not in app.query_params
    assert app.dataframe[0].value["accuracy"].iloc[0] > 0.8
    caption = next(c.value for c in app.caption if c.value.startswith("Not kept"))
    assert "TREELAB_RUN_EXPIRY_DAYS must be a number of days" in caption
    assert "kept in this session only" in caption


@pytest.mark.slow
def test_a_reopened_run_shows_the_parameters_it_was_made_with(app, store_folder, monkeypatch):
    """``?run=<id>`` alone: the widgets show the run's parameters (those of the URL it was
    started with, not the ones moved after Run), and the URL holds them again; a link
    whose parameter differs from the run's gets a warning naming it and the run's value."""
    app.switch_page("pages/split_strategies.py").run()
    app.multiselect(key="ss_strategies").set_value(["exhaustive", "quantile"])
    app.slider(key="ss_cv_depth").set_value(4)
    app.slider(key="ss_cv_folds").set_value(3)
    app.number_input(key="seed").set_value(3)
    app.run()
    app.button(key="ss_run").click().run()
    app.slider(key="ss_cv_depth").set_value(9).run()  # moved after Run: not the run's
    assert app.session_state["ss_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    run_id = app.query_params["run"]
    stored = RunStore(store_folder).load(run_id).meta["query"]
    assert stored["cv_depth"] == "4" and stored["strategies"] == "exhaustive,quantile"

    made = forbid_jobs(monkeypatch)
    again = fresh_app(monkeypatch, "pages/split_strategies.py", run_id)
    assert not made and not warnings_of(again)
    assert again.slider(key="ss_cv_depth").value == 4
    assert again.slider(key="ss_cv_folds").value == 3
    assert again.multiselect(key="ss_strategies").value == ["exhaustive", "quantile"]
    assert again.number_input(key="seed").value == 3
    query = dict(again.query_params)
    assert query["cv_depth"] == "4" and query["seed"] == "3" and query["run"] == run_id

    # the run's values written another way ('04', a space after the comma): no warning
    alike = {"run": run_id, "cv_depth": "04", "strategies": "exhaustive, quantile"}
    assert not warnings_of(fresh_app(monkeypatch, "pages/split_strategies.py", alike))

    clash = fresh_app(monkeypatch, "pages/split_strategies.py", {"run": run_id, "cv_depth": "7"})
    assert clash.slider(key="ss_cv_depth").value == 4
    assert any("cv" in w and "'7'" in w and "4 is used" in w for w in warnings_of(clash)), (
        warnings_of(clash)
    )


@pytest.mark.slow  # a whole-app run
def test_a_loaded_run_no_page_reopened_is_dropped_even_after_st_stop(warm_engine, monkeypatch):
    """The Optimal shape trees page stops on a regression target (st.stop()) before it
    reopens anything: the run the app loaded for the link is not kept in the session."""
    from streamlit.testing.v1 import app_test as app_test_module

    from tests.conftest import navigation_pages_manager

    monkeypatch.setattr(app_test_module, "PagesManager", navigation_pages_manager())
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APPTEST_TIMEOUT)
    at.query_params.update({"ds": "diabetes"})
    at.switch_page("pages/optimal_shape_trees.py").run()
    assert any("classification-only" in e.value for e in at.error)
    at.session_state["_run_loaded"] = object()  # as open_run_link leaves it
    at.run()
    assert not at.exception, at.exception
    assert "_run_loaded" not in at.session_state


def gated(steps, gate):
    """The job step generator function ``steps`` made to wait for ``gate`` (or Stop)."""

    def held(ctx, *args, **kwargs):
        while not gate.wait(0.01):
            if ctx.cancel_event.is_set():
                return None
        return (yield from steps(ctx, *args, **kwargs))

    return held


def reload_of(app, monkeypatch, page: str) -> AppTest:
    """A new session of the same server (the server's caches kept) opened on ``app``'s URL:
    a browser reload."""
    from streamlit.testing.v1 import app_test as app_test_module

    from tests.conftest import navigation_pages_manager

    monkeypatch.setattr(app_test_module, "PagesManager", navigation_pages_manager())
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APPTEST_TIMEOUT)
    at.query_params.update(dict(app.query_params))
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


@pytest.mark.slow
def test_a_reload_while_a_job_runs_takes_the_running_job_back(app, store_folder, monkeypatch):
    """Reload mid-job: the new session gets the same running job (``live=<id>`` in the URL),
    polls it, and keeps its result as a run once it ends; an unknown live id is dropped with
    a note; the id is unguessable (22 URL-safe characters, 128 bits)."""
    import threading

    import pages._jobs as shared
    from pages import _runs

    gate = threading.Event()
    monkeypatch.setattr(shared, "cross_validate_steps", gated(shared.cross_validate_steps, gate))
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"])
    app.slider(key="cmp_folds").set_value(2)
    app.button(key="cmp_run").click().run()
    job = app.session_state["cmp_job"]
    live_id = app.query_params["live"]
    assert len(live_id) == 22 and not job.finished
    reloaded = reload_of(app, monkeypatch, "pages/compare.py")
    assert reloaded.session_state["cmp_job"] is job  # the same job, not a new one
    assert reloaded.button(key="cmp_stop").disabled is False
    assert reloaded.button(key="cmp_run").disabled is True
    gate.set()
    assert job.join(TIMEOUT) and job.status == "done"
    reloaded.run()
    assert not reloaded.exception, reloaded.exception
    run_id = reloaded.query_params["run"]
    assert "live" not in reloaded.query_params  # a reload now reopens the kept run
    assert RunStore(store_folder).load(run_id).kind == "compare"
    # the other session's job is the same one: nothing was run twice
    assert app.session_state["cmp_job"] is job
    # a live id the server does not hold (a restart, or long ended): dropped, with a note
    lock, entries = _runs._live_registry()
    with lock:
        entries.clear()
    gone = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APPTEST_TIMEOUT)
    gone.query_params.update({"live": live_id})
    gone.switch_page("pages/compare.py").run()
    assert not gone.exception, gone.exception
    assert "live" not in gone.query_params
    assert any("no longer on the server" in i.value for i in gone.info)
    assert "cmp_job" not in gone.session_state or gone.session_state["cmp_job"] is None


@pytest.mark.slow  # whole-app runs
def test_a_run_link_on_a_cold_server_opens_on_the_runs_dataset(app, store_folder, monkeypatch):
    """A new server's first request for ``/compare?run=<id>`` runs the page alone, which
    sends it through app.py (on the Start page) and back (require_entrypoint): that passage
    set the sidebar to Iris and took the link's run as seen, so the page drew Iris and the
    default settings under the run's Wine result.  It opens on the run's dataset and
    settings."""
    from streamlit.testing.v1 import app_test as app_test_module

    from tests.conftest import navigation_pages_manager

    app.sidebar.selectbox(key="ds").set_value("wine").run()
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"])
    app.slider(key="cmp_folds").set_value(3)
    app.button(key="cmp_run").click().run()
    assert app.session_state["cmp_job"].join(TIMEOUT)
    app.run()
    run_id = app.query_params["run"]

    made = forbid_jobs(monkeypatch)
    st.cache_resource.clear()
    monkeypatch.setattr(app_test_module, "PagesManager", navigation_pages_manager())
    cold = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APPTEST_TIMEOUT)
    cold.query_params.update({"run": run_id})
    # as pages/compare.py's require_entrypoint leaves it before it switches to app.py
    cold.session_state["_intended_page"] = ("pages/compare.py", {"run": run_id})
    cold.run()
    assert not cold.exception, cold.exception
    assert not made and not warnings_of(cold)
    assert cold.sidebar.selectbox(key="ds").value == "wine"
    assert cold.multiselect(key="cmp_models").value == ["sklearn_tree"]
    assert cold.slider(key="cmp_folds").value == 3
    lines = [m.value for m in cold.markdown if "rows x" in m.value]
    assert lines and all("Wine" in line and "Iris" not in line for line in lines), lines
