"""The service side of the pages in AppTest: the kernels-not-ready gate, the per-session job
line, failed jobs (memory, lost worker) shown as sentences that keep what finished, and the
session's upload byte bound."""

import threading
import time

import pandas as pd
import pytest

import pages._shared as shared
from engine import warmup
from engine.jobs import Job


def test_a_page_whose_kernels_are_not_ready_shows_their_progress(app, monkeypatch):
    """Literati's groups not ready: the page's main area names the engine and how far it is
    (no page content yet); once they are, the same app run opens the page."""
    groups = warmup.closure(warmup.PAGE_GROUPS["optimal_shape_trees"][1])
    state = {g: "ready" for g in groups} | {"literati": "compiling"}
    monkeypatch.setattr(warmup, "_STATE", state)
    monkeypatch.setattr(warmup, "_STARTED_AT", {"literati": time.monotonic() - 3})
    monkeypatch.setattr(warmup, "start_background", lambda *args, **kwargs: False)
    app.switch_page("pages/optimal_shape_trees.py").run()
    assert not app.exception
    assert app.title[0].value == "Optimal shape trees (Literati)"
    texts = [p.proto.text for p in app.get("progress")]
    assert texts and texts[0].startswith(
        f"Compiling the Literati engine: {len(groups) - 1} of {len(groups)} kernel groups"
    )
    assert "now: Literati search" in texts[0]
    assert not app.button  # the page itself is not drawn yet
    state["literati"] = "ready"
    app.run()
    assert not app.exception
    assert any(b.key == "lit_run" for b in app.button)


def test_compare_run_waits_for_the_chosen_models_kernels(app, monkeypatch):
    monkeypatch.setattr(
        warmup, "_STATE", {g: "ready" for g in warmup.GROUPS} | {"literati": "compiling"}
    )
    monkeypatch.setattr(warmup, "start_background", lambda *args, **kwargs: False)
    app.switch_page("pages/compare.py").run()
    assert not app.button(key="cmp_run").disabled  # scikit-learn models need no kernels
    app.multiselect(key="cmp_models").set_value(["sklearn_tree", "treelab_literati"]).run()
    assert app.button(key="cmp_run").disabled
    texts = [p.proto.text for p in app.get("progress")]
    assert any("kernels of the chosen models" in t for t in texts)


def _hold(ctx, gate):
    """A job that runs until ``gate`` is set (or Stop)."""
    while not gate.is_set() and not ctx.should_stop():
        time.sleep(0.01)
        yield {"completed": 0, "total": 1, "message": "holding", "rows": []}
    return None


def test_a_third_job_of_a_session_waits_in_line_and_says_so(app):
    gate = threading.Event()
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"]).run()
    try:
        # fill the session's two slots, then press Run: the comparison waits in line
        from engine.jobs import JobSlots

        slots = JobSlots(shared.MAX_RUNNING_JOBS)
        app.session_state["_job_slots"] = slots
        held = [slots.start(Job(_hold, gate, runner="threads")) for _ in range(2)]
        app.button(key="cmp_run").click().run()
        job = app.session_state["cmp_job"]
        assert job.status == "queued" and job.queue_position == 1
        texts = [p.proto.text for p in app.get("progress")]
        assert any(
            t.startswith("Waiting in line: 2 jobs of this session are running") for t in texts
        )
        assert not app.exception
        gate.set()  # the held jobs end: the comparison starts by itself and finishes
        assert all(h.join(10) for h in held)
        assert job.join(60) and job.status == "done"
        app.run()
        assert any(h.value == "Results" for h in app.subheader)
    finally:
        gate.set()


def _finished_job(status, result, error, kind):
    job = Job(_hold, threading.Event(), runner="threads")
    job._started = True
    job._finish(status, result, error, kind)
    return job


def _compare_rows(app):
    """Run a short real comparison and return its per-fold rows (for a failed job's result)."""
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"]).run()
    app.slider(key="cmp_folds").set_value(3)
    app.button(key="cmp_run").click().run()
    job = app.session_state["cmp_job"]
    assert job.join(60) and job.status == "done"
    return job, list(job.snapshot().latest["rows"])


@pytest.mark.parametrize(
    "kind, error, words",
    [
        (
            "memory",
            "MemoryError: this job needed more than 2.0 GiB of memory (the limit of one "
            "worker) and was stopped; the results so far are kept",
            "The comparison stopped: this job needed more than 2.0 GiB of memory",
        ),
        ("lost", "WorkerLost: the worker ...", "the worker process running it stopped"),
    ],
)
def test_a_failed_comparison_says_why_and_keeps_the_finished_folds(app, kind, error, words):
    done, rows = _compare_rows(app)
    partial = {"completed": 2, "total": 4, "message": "...", "rows": rows[:2]}
    app.session_state["cmp_job"] = _finished_job("error", partial, error, kind)
    app.run()
    assert not app.exception
    assert any(words in e.value for e in app.error), [e.value for e in app.error]
    assert any("Showing the 2 fits (a model on a fold) that finished" in i.value for i in app.info)
    table = app.dataframe[0].value
    assert isinstance(table, pd.DataFrame) and len(table) == 1  # the model's mean row
    assert "Traceback" not in " ".join(e.value for e in app.error)


def test_upload_bytes_are_bounded_per_session(app, monkeypatch):
    monkeypatch.setattr(shared, "MAX_UPLOAD_BYTES", 3000)

    def csv(n):
        body = "".join(f"{i},{i % 3}\n" for i in range(n))
        return ("a,b\n" + body).encode()

    big = csv(200)  # about 1.3 KB
    assert 1000 < len(big) < 1500
    for name in ("one.csv", "two.csv"):
        app.file_uploader(key="uploader").set_value((name, big, "text/csv")).run()
    assert set(app.session_state["uploads"]) == {"upload:one.csv", "upload:two.csv"}
    app.file_uploader(key="uploader").set_value(("three.csv", big, "text/csv")).run()
    assert not app.exception
    assert set(app.session_state["uploads"]) == {"upload:two.csv", "upload:three.csv"}
    assert any("forgotten: **one.csv**" in i.value for i in app.info), [i.value for i in app.info]
    # one file above the session's bound is refused; the active dataset stays
    app.file_uploader(key="uploader").set_value(("huge.csv", csv(600), "text/csv")).run()
    assert not app.exception
    assert any("a session keeps at most" in e.value for e in app.error)
    assert app.session_state["ds"] == "upload:three.csv"


@pytest.mark.slow
@pytest.mark.parametrize(
    "error, words",
    [
        (
            "ZeroDivisionError: float division by zero",
            "The comparison failed because of an unexpected error",
        ),
        (
            "ValueError: the folds do not fit the data.",
            "The comparison could not run with these data and settings: the folds do not fit "
            "the data. Change the settings",
        ),
    ],
)
def test_an_unexpected_job_error_is_a_sentence_with_the_details_folded(app, error, words):
    """No exception class name in the error box: a sentence, and the error text in a
    collapsed Details expander."""
    _, rows = _compare_rows(app)
    partial = {"completed": 2, "total": 4, "message": "...", "rows": rows[:2]}
    app.session_state["cmp_job"] = _finished_job("error", partial, error, "exception")
    app.run()
    assert not app.exception
    boxes = [e.value for e in app.error]
    assert any(words in b for b in boxes), boxes
    assert not any(error.split(":")[0] in b for b in boxes), boxes
    details = [x for x in app.expander if x.label == "Details"]
    assert details and any(error in c.value for c in details[0].code)


def test_the_result_panel_records_what_the_page_drew(app):
    """The export hook of the page-job kit (pages/_jobs.py): every result figure and table
    a page draws is recorded, under its key, in the page's ResultPanel, the very objects
    the page sent to the browser (a later exporter reads them there)."""
    import json

    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"]).run()
    app.slider(key="cmp_folds").set_value(2)
    app.button(key="cmp_run").click().run()
    assert app.session_state["cmp_job"].join(60)
    app.run()
    assert not app.exception, app.exception
    panel = app.session_state["_result_panels"]["compare"]
    assert panel.meta["caption"] == app.session_state["cmp_job_meta"]["caption"]
    assert list(panel.figures) == ["cmp_fig", "cmp_tree_fig_sklearn_tree"]
    assert set(panel.tables) == {"summary", "folds", "nodes_sklearn_tree"}  # folds: recorded
    drawn = [json.loads(c.proto.spec) for c in app.get("plotly_chart")]
    assert [d["layout"]["title"]["text"] for d in drawn] == [
        f.layout.title.text for f in panel.figures.values()
    ]
    shown = app.dataframe[0].value
    assert list(shown["model"]) == list(panel.tables["summary"]["model"])
    assert shown["accuracy"].tolist() == panel.tables["summary"]["accuracy"].tolist()


def test_the_engine_is_started_after_a_page_that_stops_early(app, monkeypatch):
    """The idle Compare page ends with ``st.stop()``; ``app.py``'s ``finally`` still starts
    the background warm-up with that page's groups first (a Streamlit-cached call there
    raised StopException again and never ran)."""
    monkeypatch.setattr(warmup, "_STATE", {g: "ready" for g in warmup.GROUPS})
    calls = []
    monkeypatch.setattr(
        warmup, "start_background", lambda first=(), **kwargs: calls.append(first) or False
    )
    app.switch_page("pages/compare.py").run()
    assert not app.exception
    assert not app.button(key="cmp_run").disabled  # the page drew, then stopped idle
    assert calls and calls[-1] == tuple(warmup.PAGE_GROUPS["compare"][1])


def test_the_app_opens_on_the_start_page_with_a_link_to_every_page(warm_engine, monkeypatch):
    """No page argument: the Start page draws the dataset in use and one link per page of
    the navigation (the same scripts app.py routes to), and no plot."""
    import re
    from pathlib import Path

    from streamlit.testing.v1 import AppTest
    from streamlit.testing.v1 import app_test as app_test_module

    from tests.conftest import APPTEST_TIMEOUT, ROOT, navigation_pages_manager

    monkeypatch.setattr(app_test_module, "PagesManager", navigation_pages_manager())
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APPTEST_TIMEOUT).run()
    assert not at.exception
    assert at.title[0].value == "TreeLab"
    assert any("Iris" in m.value and "150 rows x 4 features" in m.value for m in at.markdown)
    linked = {e.proto.page for e in at.get("page_link")}
    url_paths = set(re.findall(r'url_path="([a-z_]+)"', Path(ROOT / "app.py").read_text()))
    # not the Start page itself ("start", served at the root) nor its hidden /home alias
    assert linked == url_paths - {"start", "home"}
    assert not at.get("plotly_chart")
