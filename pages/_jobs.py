"""The page-job kit: everything a page needs to run a background job and show its result.

Every page uses these pieces (``pages/_shared.py`` re-exports them), so a fix to how a job
starts, stops, polls or is shown is made once:

* :class:`PageJob` -- one background job of a page, kept in ``st.session_state`` under
  ``<prefix>_job`` (the :class:`engine.jobs.Job`) and ``<prefix>_job_meta`` (what the page
  must remember of the run: :func:`job_meta` and its own settings).  It draws the Run /
  Stop buttons (:meth:`PageJob.controls`: ``<prefix>_run``, ``<prefix>_stop``), starts the
  job within the session's bound (:func:`start_job`), stops it (:meth:`PageJob.stop`, a
  button callback) and polls it in a fragment (:meth:`PageJob.live`).
* :meth:`PageJob.keep_run` / :meth:`PageJob.restore_run` -- runs that survive a reload
  (``pages/_runs.py``): the finished job is saved once into the run store with
  ``run=<id>`` in the URL, and a page opened with ``?run=<id>`` gets it back as a finished
  job whose snapshot is the stored one, drawn without refitting.
* :func:`running_elsewhere` / :func:`stop_page` -- a page that cannot go on (another
  dataset, a target it cannot use) still shows its running jobs with their Stop buttons,
  rather than letting them run on out of sight until their time budget.
* :class:`SavedSettings` -- Streamlit drops the values of a page's widgets when the user
  switches page while a job's fragment polls (``keep_widget_state`` then has nothing left
  to keep); a page restores them from here before any widget is drawn and saves them after
  its settings panel.
* :class:`ResultPanel` -- the result section of a page (``pages/_result_panel.py``,
  re-exported here).  **The export hook**: every figure
  and table a page draws as a result goes through :meth:`ResultPanel.chart` and
  :meth:`ResultPanel.table`, which draw it and record it by its key in
  ``panel.figures`` / ``panel.tables``; :func:`result_panels` returns the last panel each
  page drew in this session (page name -> panel, with the run's ``meta``).  Creating a
  panel draws the page's export row (:meth:`ResultPanel.exports`): "Download report (HTML)"
  (:mod:`engine.report`: the dataset, the run's parameters, every recorded table and
  every recorded figure, interactive) and "Download figures (PNG)" / "(SVG)" (a zip,
  :func:`engine.images.figures_zip`).  Their files are made when the user clicks (a
  callable ``data``, run by Streamlit on click), from what the panel recorded in that run,
  so no page renders an image on a rerun.  :meth:`ResultPanel.downloads` draws a page's
  own CSV/JSON downloads.
* :func:`job_waiting`, :func:`job_failure` / :func:`show_job_failure` -- what a queued or
  failed job says (never a traceback).
* :func:`cv_job_panel` -- the whole Run / live table / outcome cycle of a cross-validation
  job (Compare and Split strategies), built from the pieces above.

Only Streamlit glue lives here; jobs, models and figures come from ``engine``.  Dask and
the estimators are imported on first use, so the first page draws without waiting for them.
"""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Callable, Iterable

import streamlit as st

from pages._result_panel import (  # noqa: F401 (re-exported: the kit's result panel)
    NO_IMAGES,
    PAGE_PREFIXES,
    PAGE_TITLES,
    PROJECTION_KEY,
    ResultPanel,
    images_status,
    result_panels,
    shown_figure,
)

logger = logging.getLogger(__name__)

# imported on first use (see the module docstring); tests substitute them here
_LAZY = {
    "cross_validate_steps": "engine.compare",
    "summarise": "engine.compare",
    "Job": "engine.jobs",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Jobs of one browser session running at once; the next ones wait in line.
MAX_RUNNING_JOBS = 2
#: Advice shown under a job that ran out of memory, per page (the job's own message says
#: how much memory it had).
MEMORY_ADVICE = "use a smaller dataset or lighter settings"
#: Key endings that are never settings: buttons and download buttons (their value cannot be
#: set), jobs, ``*_view`` widgets whose options depend on the last result, and charts.
NOT_SAVED_SUFFIXES = ("_run", "_stop", "_btn", "_dl", "_job", "_job_meta", "_view", "_fig")


# -- starting and explaining jobs ---------------------------------------------------------
def start_job(job):
    """Start ``job`` within this session's bound (:data:`MAX_RUNNING_JOBS` at once; the next
    ones wait in line, status ``queued``); returns it."""
    from engine.jobs import JobSlots

    slots = st.session_state.get("_job_slots")
    if slots is None:
        slots = st.session_state["_job_slots"] = JobSlots(MAX_RUNNING_JOBS)
    return slots.start(job)


def job_waiting(snap) -> bool:
    """Show why a started job has no progress yet (queued in the session, or every worker
    busy); True when it is waiting."""
    if snap.waiting == "session":
        ahead = (snap.queue_position or 1) - 1
        st.progress(
            0.0,
            text=f"Waiting in line: {MAX_RUNNING_JOBS} jobs of this session are running"
            + (f" and {ahead} more wait before this one" if ahead else "")
            + ". It starts by itself when one finishes (Stop removes it from the line).",
        )
        return True
    if snap.waiting == "worker":
        st.progress(
            0.0,
            text="Waiting for a worker process: the server's workers are starting, "
            "preparing the engine or busy with other jobs. It starts by itself.",
        )
        return True
    return False


def job_failure(snap, what: str, advice: str = MEMORY_ADVICE) -> str:
    """A sentence for a failed job (``snap.status == "error"``), never a traceback.

    ``what`` names the job ("The comparison"); ``advice`` says what to lower when the job
    ran out of memory ("lower the cache size or the depth").
    """
    kind = getattr(snap, "error_kind", None)
    message = str(snap.error or "unknown error")
    if kind == "memory":
        detail = message.split(": ", 1)[-1].split(" and was stopped")[0]
        return f"{what} stopped: {detail}. Try again: {advice}."
    if kind == "lost":
        return (
            f"{what} stopped: the worker process running it stopped unexpectedly (killed or "
            "crashed). A new worker has been started; press the button again to retry."
        )
    if kind == "cluster":
        return (
            f"{what} could not run: {message.split(': ', 1)[-1]}. The app keeps working; "
            "check the Dask cluster (see docs/deploy.md)."
        )
    name, _, rest = message.partition(": ")
    if not (rest and name.isidentifier()):
        name, rest = "", message
    if name == "ValueError":  # the engine's own checks: a sentence about the data / settings
        return (
            f"{what} could not run with these data and settings: {rest.rstrip('.')}. "
            "Change the settings and try again."
        )
    return (
        f"{what} failed because of an unexpected error (nothing you had is lost). Try "
        f"again, or {advice}; the details below help to report it."
    )


def show_job_failure(snap, what: str, advice: str = MEMORY_ADVICE) -> None:
    """Draw :func:`job_failure`'s sentence as an error box and, for a failure other than
    memory / lost worker / cluster, the error text (not a traceback) in a collapsed
    "Details" expander."""
    st.error(job_failure(snap, what, advice))
    if getattr(snap, "error_kind", None) not in ("memory", "lost", "cluster"):
        with st.expander("Details", expanded=False):
            st.code(str(snap.error or "unknown error"), language=None)


def job_meta(ds) -> dict:
    """What a page must remember of the dataset a job ran on, to draw its results later."""
    from pages._scale import subsample_meta
    from pages._shared import dataset_caption, dataset_recipe

    return {
        **subsample_meta(ds),  # a subsample: every result on it says so (ResultPanel)
        "task": ds.task,
        "feature_names": list(ds.feature_names),
        "classes": None if ds.classes_ is None else [str(c) for c in ds.classes_],
        "categories": [ds.categories.get(j) for j in range(ds.n_features)],
        "X": ds.X,
        "target": ds.target,
        "caption": dataset_caption(ds),
        "recipe": dataset_recipe(ds),  # the dataset as code (engine/snippets.py)
    }


def _show_error(exc: ValueError) -> None:
    from pages._shared import md

    st.error(md(exc))


# -- one job of a page --------------------------------------------------------------------
class PageJob:
    """One background job of a page (see the module docstring).

    Parameters
    ----------
    prefix : str
        Session-state prefix: the job is ``<prefix>_job``, its meta ``<prefix>_job_meta``,
        the buttons ``<prefix>_run`` and ``<prefix>_stop``.
    elsewhere : str
        What :func:`running_elsewhere` says while the job runs and the page cannot show it;
        ``{caption}`` is replaced by the caption of the dataset it runs on (``meta``).
    stop_label : str
        The label of :func:`running_elsewhere`'s Stop button.
    join_seconds : float
        How long Stop waits for the job to end (a callback runs before the page, so the
        buttons redraw right once it has): a Dask step that overruns is abandoned within
        about a second, a thread cannot interrupt a fit.  0: do not wait.
    to_store : callable, optional
        ``to_store(fields) -> fields``: replaces what is not data in the finished
        snapshot's fields (``latest``, ``result``...) before the run store keeps it
        (:meth:`keep_run`); by default they are kept as they are.
    """

    def __init__(
        self,
        prefix: str,
        *,
        elsewhere: str = "",
        stop_label: str = "Stop",
        join_seconds: float = 5.0,
        to_store: Callable[[dict], dict] | None = None,
    ) -> None:
        self.prefix = prefix
        self.key = f"{prefix}_job"
        self.meta_key = f"{prefix}_job_meta"
        self.extra_key = f"_{prefix}_job_extra"
        self.elsewhere = elsewhere
        self.stop_label = stop_label
        self.join_seconds = float(join_seconds)
        self.to_store = to_store

    @property
    def job(self):
        """The :class:`engine.jobs.Job` (None before the first run)."""
        return st.session_state.get(self.key)

    @property
    def meta(self) -> dict:
        """What the page stored with the run (``{}`` before the first run)."""
        return st.session_state.get(self.meta_key) or {}

    @property
    def running(self) -> bool:
        job = self.job
        return job is not None and not job.finished

    @property
    def extra(self) -> dict:
        """What the page keeps with the current run besides its snapshot and meta (results
        it derived from them, :meth:`keep_extra`; a reopened run's are the stored ones)."""
        job = self.job
        stored = getattr(job, "extra", None)
        if stored is not None:
            return stored
        kept = st.session_state.get(self.extra_key)
        return kept[1] if kept is not None and kept[0] is job else {}

    def keep_extra(self, values: dict) -> None:
        """Keep ``values`` (data the run store can hold) with the current job's run."""
        st.session_state[self.extra_key] = (self.job, dict(values))

    def restore_run(self, page: str) -> str | None:
        """Reopen the run named by the URL's ``run=<id>`` (a reload, a shared link, after a
        server restart) as this job: a finished job whose snapshot and meta are the stored
        ones, so the page draws them without refitting.  ``page``: the page's URL path.
        Call it before the page reads the job.  A bad or unknown id gives a warning.
        Returns the run id reopened, or None (:func:`pages._runs.restore_runs`)."""
        from pages._runs import restore_runs

        return restore_runs(page, self)

    def keep_run(self, page: str) -> str | None:
        """Save the finished job (done, or stopped with a result) into the run store once,
        put ``run=<id>`` into the URL and write the run's link and the store's limits;
        returns the run id (:func:`pages._runs.keep_runs`)."""
        from pages._runs import keep_runs

        return keep_runs(page, self)

    def stop(self) -> None:
        """Cancel the job (a button callback)."""
        job = self.job
        if job is not None:
            job.cancel()
            if self.join_seconds > 0:
                job.join(self.join_seconds)

    def launch(self, job, meta: dict | None = None):
        """Start ``job`` (:func:`start_job`) and keep it, with ``meta`` when given."""
        from pages._runs import LAUNCH_QUERY, register_live

        started = start_job(job)
        st.session_state[self.key] = started
        st.session_state[LAUNCH_QUERY + self.prefix] = st.query_params.to_dict()
        if meta is not None:
            st.session_state[self.meta_key] = meta
        register_live(self, started)  # a reload while it runs takes it back (live=<id>)
        return started

    def controls(
        self,
        label: str,
        start: Callable,
        *,
        disabled: bool = False,
        primary: bool = True,
        help: str | None = None,
        columns: tuple = (1, 1, 6),
        on_error: Callable[[ValueError], None] = _show_error,
    ) -> None:
        """The Run (``label``) and Stop buttons.

        Run calls ``start()``, which returns the :class:`engine.jobs.Job` to run (not yet
        started) or ``(job, meta)``; the job is started, kept and the page redrawn (Run
        disabled, Stop enabled).  A ValueError of ``start()`` goes to ``on_error`` (by
        default an error box with its message).  Stop is enabled while the job runs.
        """
        running = self.running
        run_col, stop_col, _ = st.columns(list(columns))
        kind = "primary" if primary else "secondary"
        if run_col.button(
            label, type=kind, disabled=running or disabled, key=f"{self.prefix}_run", help=help
        ):
            try:
                started = start()
            except ValueError as exc:
                on_error(exc)
            else:
                job, meta = started if isinstance(started, tuple) else (started, None)
                self.launch(job, meta)
                st.rerun()
        stop_col.button("Stop", disabled=not running, key=f"{self.prefix}_stop", on_click=self.stop)

    def live(
        self,
        draw: Callable,
        *,
        caption: str | None = None,
        redraw_on: Callable | None = None,
        run_every: float | None = None,
    ) -> None:
        """Poll the running job in a fragment and ``draw(snapshot)``: twice a second, less
        often when the server runs many jobs (``run_every=None``:
        :func:`engine.jobs.poll_interval` of :func:`engine.jobs.running_jobs`, re-read at
        every poll; a change of 0.5 s or more reruns the page to apply it).

        ``caption`` (``{caption}``: the dataset the job runs on) is written above; a job
        waiting for a slot or a worker says so instead of drawing.  The whole page is
        redrawn when the job ends, or when ``redraw_on(snapshot.latest)`` changes (e.g. a
        new partial result the page shows outside the fragment).
        """
        job = self.job
        if job is None:
            return
        drawn = None if redraw_on is None else redraw_on(job.snapshot().latest)
        adaptive = run_every is None
        if adaptive:
            from engine.jobs import poll_interval, running_jobs

            run_every = poll_interval(running_jobs())

        @st.fragment(run_every=run_every)
        def poll() -> None:
            current = self.job
            if current is None:
                return
            # the server got busier or quieter since the view opened: a full rerun
            # re-creates the fragment with the new interval (steps of 0.5 s or more)
            if adaptive and abs(poll_interval(running_jobs()) - run_every) >= 0.5:
                st.rerun()
            snap = current.snapshot()
            if caption is not None:
                st.caption(caption.format(caption=self.meta.get("caption", "")))
            if snap.finished:
                st.rerun()
            if job_waiting(snap):
                return
            draw(snap)
            if snap.finished or (redraw_on is not None and redraw_on(snap.latest) != drawn):
                st.rerun()

        poll()


def running_elsewhere(*jobs: PageJob) -> None:
    """Each of ``jobs`` still running, with its Stop button, refreshed every second until
    it ends (for a page that cannot show the job: another dataset is active)."""

    @st.fragment(run_every=1.0)
    def watch() -> None:
        for page_job in jobs:
            if page_job.running:
                caption = page_job.meta.get("caption", "another dataset.")
                st.info(page_job.elsewhere.format(caption=caption))
                st.button(
                    page_job.stop_label, key=f"{page_job.prefix}_stop", on_click=page_job.stop
                )

    watch()


def stop_page(*jobs: PageJob) -> None:
    """``st.stop()`` for a page that cannot go on, after :func:`running_elsewhere` of its
    running jobs: a running job used to vanish with its Stop button and run on, out of
    sight, until its time budget (up to an hour)."""
    if any(page_job.running for page_job in jobs):
        running_elsewhere(*jobs)
    st.stop()


# -- saved settings -------------------------------------------------------------------------
def _matches(key, entries: tuple[str, ...]) -> bool:
    """``key`` is one of ``entries`` (an entry ending in ``::`` is a prefix)."""
    return isinstance(key, str) and any(
        key.startswith(entry) if entry.endswith("::") else key == entry for entry in entries
    )


def reset_on_dataset_change(page: str, dataset: str, keys: Iterable[str]) -> bool:
    """Drop the values of a page's widgets that belong to one dataset when it changes.

    Parameters
    ----------
    page : str
        Names the page (its record is ``st.session_state["_widgets_dataset::<page>"]``).
    dataset : str
        The dataset the page draws now (``dataset_digest``: rows, target, features).
    keys : iterable of str
        The widget keys whose bounds or options come from the dataset ("Features shown",
        "Rows in the batch", the test row); an entry ending in ``::`` is a prefix.

    Returns
    -------
    bool
        True when the dataset differs from the one the values were set for and they were
        dropped: the widgets then draw with their defaults for this dataset.  Call it
        before the widgets are drawn (after :meth:`SavedSettings.restore`).
    """
    entries = tuple(keys)
    record = f"_widgets_dataset::{page}"
    before = st.session_state.get(record)
    st.session_state[record] = dataset
    if before is None or before == dataset:
        return False
    for key in [k for k in list(st.session_state.keys()) if _matches(k, entries)]:
        del st.session_state[key]
    return True


class SavedSettings:
    """Widget values of a page kept in ``st.session_state[name]`` across page switches.

    ``keys``: the exact widget keys to keep; or ``prefix``: every key starting with it
    that is not a button, job, view or chart (:data:`NOT_SAVED_SUFFIXES`), or with
    ``suffix``, only the keys ending with it.  ``merge``: a save adds to what was saved
    before (a widget not drawn this run keeps its saved value), else replaces it.
    :meth:`restore` and :meth:`save` take a ``scope`` (e.g. the run the view widgets
    belong to): values saved under another scope are not restored.  ``per_dataset``: the
    keys (an entry ending in ``::`` is a prefix) whose values belong to one dataset;
    :meth:`for_dataset` drops them, saved or current, when the dataset changes.  ``link``:
    the page's widgets mirrored in the URL (:class:`pages._links.LinkParam`); the page's
    first :meth:`restore` of a session sets them from the link, :meth:`save` writes them
    back, and :meth:`for_dataset` keeps the values that came from the link.
    """

    def __init__(
        self,
        name: str,
        *,
        keys: Iterable[str] = (),
        prefix: str | None = None,
        suffix: str | None = None,
        merge: bool = False,
        per_dataset: Iterable[str] = (),
        link: Iterable = (),
    ) -> None:
        self.name = name
        self.link = tuple(link)
        self._from_link: dict = {}
        self.keys = tuple(keys)
        self.prefix = prefix
        self.suffix = suffix
        self.merge = merge
        self.per_dataset = tuple(per_dataset)

    def for_dataset(self, dataset: str) -> bool:
        """Scope the ``per_dataset`` values by ``dataset`` (a ``dataset_digest``): when it is
        not the dataset they were set for, drop them from the session and from the saved
        values, so the widgets draw with this dataset's defaults and bounds.  Call it after
        :meth:`restore`, before the widgets are drawn; True when values were dropped."""
        if not reset_on_dataset_change(self.name, dataset, self.per_dataset):
            return False
        saved = st.session_state.get(self.name)
        if saved:
            values = {k: v for k, v in saved["values"].items() if not _matches(k, self.per_dataset)}
            st.session_state[self.name] = {"scope": saved.get("scope"), "values": values}
        # values a link set in this run were chosen for the link's dataset: kept
        st.session_state.update(self._from_link)
        return True

    def _wanted(self, key) -> bool:
        if not isinstance(key, str):
            return False
        if self.keys:
            return key in self.keys
        if self.prefix is None or not key.startswith(self.prefix):
            return False
        if self.suffix is not None:
            return key.endswith(self.suffix)
        return not key.endswith(NOT_SAVED_SUFFIXES)

    def restore(self, scope=None) -> None:
        """Put back the saved values of widgets Streamlit dropped (before any is drawn)."""
        saved = st.session_state.get(self.name)
        if saved and saved.get("scope") == scope:
            for key, value in saved["values"].items():
                if key not in st.session_state:
                    st.session_state[key] = value
        if self.link and scope is None:
            from pages._links import apply_link

            self._from_link = apply_link(self.name, self.link)

    def read_link(self, params: Iterable) -> None:
        """Declare the page's link parameters once its dataset is known (their options or
        keys depend on it: the task, the number of features) and, on the page's first run
        of the session, set the widgets from the URL (:func:`pages._links.apply_link`).
        Call it after :meth:`restore`, before the widgets are drawn; :meth:`save` then
        writes their values back into the URL."""
        from pages._links import apply_link

        self.link = tuple(params)
        self._from_link = apply_link(self.name, self.link)

    def link_fixed(self, key: str, used, why: str) -> None:
        """Say that the value the link gave widget ``key`` cannot be used here (``why``,
        e.g. "is not a test row of this split") and ``used`` is shown instead; nothing
        when the value did not come from the link in this run.  Call it where the page
        replaces a value its widget cannot take."""
        from pages._links import format_value, warn_param, watch_link_value

        param = next((p for p in self.link if p.key == key), None)
        if param is None or key not in self._from_link:
            return
        value = self._from_link.pop(key)
        warn_param(param.name, format_value(param, value), why, format_value(param, used))
        watch_link_value(key, used)

    def take_from_link(self, key: str):
        """The value the link gave widget ``key`` in this run (removed, so it is used
        once), or ``None`` when the value did not come from the link."""
        return self._from_link.pop(key, None)

    def save(self, scope=None) -> None:
        """Remember the current values of the widgets."""
        saved = st.session_state.get(self.name)
        before = saved["values"] if self.merge and saved and saved.get("scope") == scope else {}
        now = {k: st.session_state[k] for k in list(st.session_state.keys()) if self._wanted(k)}
        st.session_state[self.name] = {"scope": scope, "values": before | now}
        if self.link and scope is None:
            from pages._links import mirror_link

            mirror_link(self.link)

    def forget(self, prefix: str) -> None:
        """Drop the saved values of the keys starting with ``prefix``."""
        saved = st.session_state.get(self.name)
        if saved:
            values = {k: v for k, v in saved["values"].items() if not k.startswith(prefix)}
            st.session_state[self.name] = {"scope": saved.get("scope"), "values": values}


# -- cross-validation jobs (Compare, Split strategies) --------------------------------------
def _plan_signature(prefix: str, ds) -> str:
    """What the user has set for the job of ``prefix`` (its page's widgets and the
    dataset): a plan error is shown until this changes."""
    from pages._shared import _NOT_KEPT_SUFFIXES, dataset_digest, seed

    skip = {f"{prefix}_job", f"{prefix}_job_meta", f"{prefix}_plan_error"}
    plain = (str, int, float, bool, type(None), list, tuple)
    values = sorted(
        (key, repr(value))
        for key, value in st.session_state.items()
        if isinstance(key, str)
        and key.startswith(f"{prefix}_")
        and key not in skip
        and not key.endswith(_NOT_KEPT_SUFFIXES)
        and isinstance(value, plain)
    )
    return hashlib.sha256(repr((values, dataset_digest(ds), seed())).encode()).hexdigest()


def cv_job_panel(
    page_job: PageJob | str,
    ds,
    make_plan,
    *,
    budget: float,
    idle_text: str,
    can_run: bool = True,
    estimate: dict | None = None,
):
    """Run / Stop buttons, live progress and the outcome of a cross-validation job
    (``page_job``: the page's :class:`PageJob` or its prefix).

    ``make_plan()`` returns an :class:`engine.compare.ComparisonPlan` (a ValueError is shown
    as an error message until a setting or the dataset changes).  While the job runs, a
    fragment polls it (twice a second, less often on a busy server) and the rest of the
    page is not drawn; afterwards this returns ``(result, meta)`` -- the
    :class:`engine.compare.CompareResult` (the finished folds after Stop or a spent budget)
    and :func:`job_meta` plus run labels -- or stops the page when there is nothing to
    show.  ``estimate``: the keyword arguments of :func:`pages._scale.scale_notice` (a
    cross-validation job's from :func:`pages._scale.comparison_notice`: every model on every
    fold plus the refits), which says before Run how long the job takes at this size and
    offers a subsample beyond ``budget``; while it runs, the progress line says how long the
    rest takes at the pace so far.
    """
    from pages._scale import scale_notice

    this = sys.modules[__name__]  # looked up here so that tests can substitute them
    cross_validate_steps, summarise, Job = this.cross_validate_steps, this.summarise, this.Job
    if isinstance(page_job, str):
        page_job = PageJob(page_job)
    prefix = page_job.prefix
    ekey = f"{prefix}_plan_error"

    def start():
        try:
            plan = make_plan()
        except ValueError as exc:
            # kept until the user changes a setting or the dataset (not only for this run)
            st.session_state[ekey] = (str(exc), _plan_signature(prefix, ds))
            st.rerun()
        st.session_state.pop(ekey, None)
        job = Job(cross_validate_steps, plan, budget=float(budget), name=prefix)
        labels = {rid: label for rid, (label, _) in plan.estimators.items()}
        meta = {**job_meta(ds), "labels": labels, "n_folds": len(plan.folds)}
        if settings is not None:
            meta["settings"] = settings
        return job, {**meta, "plan": getattr(plan, "request", None)}

    estimate = dict(estimate or {})
    settings = estimate.pop("settings", None)
    if estimate and not page_job.running:
        took = finished_within(page_job, settings, float(budget))
        if took is None:
            scale_notice(ds, budget=float(budget), **estimate)
        else:
            _say_finished(ds, took, float(budget), estimate)
    page_job.controls("Run", start, disabled=not can_run)
    if page_job.running:
        page_job.live(
            lambda snap: _draw_cv_progress(snap, page_job, float(budget), summarise),
            caption="Running on {caption}",
        )
        st.stop()
    _show_plan_error(page_job, ds, idle_text)
    return _cv_outcome(page_job, summarise)


def finished_within(page_job: PageJob, settings: str | None, budget: float) -> float | None:
    """Seconds the last run of ``page_job`` took when it finished every fit (status
    ``done``) within ``budget`` seconds and with these ``settings`` (the ``settings`` of
    :func:`pages._scale.comparison_notice`, kept in the run's meta); else ``None``."""
    job = page_job.job
    if settings is None or job is None or page_job.meta.get("settings") != settings:
        return None
    snap = job.snapshot()
    if snap.status != "done" or snap.elapsed > budget:
        return None
    return float(snap.elapsed)


def _say_finished(ds, took: float, budget: float, estimate: dict) -> None:
    """The caption in place of the estimate once a run of the same settings finished in
    ``took`` seconds within ``budget``: no subsample to offer, what the curves said."""
    from engine.scale import PAGE_BUDGET, format_seconds

    seconds = estimate["seconds_at"](ds.n_samples)
    if seconds < PAGE_BUDGET:  # the estimate would have said nothing either
        return
    st.caption(
        f"The last run of these settings finished every fit in {took:.1f} s on these "
        f"{ds.n_samples:,} rows, within its time budget of {budget:.0f} s (the measured "
        f"cost curves said {format_seconds(seconds)}): no subsample needed."
    )


def _draw_cv_progress(snap, page_job: PageJob, budget: float, summarise) -> None:
    """One poll of a running cross-validation job (``snap``: its
    :class:`engine.jobs.JobSnapshot`): the progress bar with the time left at the pace so
    far, a caption when that pace overruns ``budget`` (seconds), and the table of the
    folds finished so far (``summarise``, :func:`engine.compare.summarise`, runs once per
    finished fold and is kept in ``<prefix>_live_table``)."""
    from engine.scale import format_seconds

    latest = snap.latest or {"completed": 0, "total": 1, "message": "starting...", "rows": []}
    done, total = latest["completed"], latest["total"]
    left = (
        f"; {format_seconds(snap.elapsed / done * (total - done))} left at this pace"
        if 0 < done < total
        else ""
    )
    st.progress(
        done / total,
        text=f"{latest['message']} -- {done}/{total} fits, {snap.elapsed:.1f} s{left}",
    )
    if 0 < done < total and snap.elapsed / done * total > budget:
        st.caption(
            f"At this pace all {total} fits need more than the {budget:.0f} s "
            "budget: the job will stop at it and keep the folds it finished. A seeded "
            "stratified subsample (*Large data* in the sidebar, for tables above "
            "20,000 rows) or fewer models or folds would finish."
        )
    if latest["rows"]:
        from engine.compare import shown_summary

        # the fragment polls up to twice a second: summarise only when a fold has finished
        key = f"{page_job.prefix}_live_table"
        held = st.session_state.get(key)
        n_rows = len(latest["rows"])
        if held is None or held[0] is not page_job.job or held[1] != n_rows:
            summary = summarise(latest["rows"], page_job.meta["task"]).summary
            held = (page_job.job, n_rows, shown_summary(summary))
            st.session_state[key] = held
        st.dataframe(held[2], hide_index=True, width="stretch")  # 1 fold: no spread yet


def _show_plan_error(page_job: PageJob, ds, idle_text: str) -> None:
    """Show the last plan error of the job of ``page_job`` while the user's settings and
    the dataset are those it was made with (it is dropped once they change); stop the page
    with ``idle_text`` (or only the error) when there is no job to show."""
    from pages._shared import md

    prefix = page_job.prefix
    ekey = f"{prefix}_plan_error"
    plan_error = st.session_state.get(ekey)
    if plan_error is not None and plan_error[1] != _plan_signature(prefix, ds):
        st.session_state.pop(ekey, None)
        plan_error = None
    if plan_error is not None:
        st.error(md(plan_error[0]))
        if page_job.job is not None:
            st.info("The results below are from the last run that could start.")
    if page_job.job is None:
        if plan_error is None:
            st.info(idle_text)
        st.stop()


def _cv_outcome(page_job: PageJob, summarise) -> tuple:
    """``(result, meta)`` of the finished job of ``page_job``: its
    :class:`engine.compare.CompareResult` -- the job's result, or after an error, Stop or a
    spent budget the folds that finished (summarised with ``summarise`` and said so) -- and
    the run's meta; the result's warnings are shown.  Stops the page when there is nothing
    to show."""
    from pages._shared import md

    job = page_job.job
    snap = job.snapshot()
    meta = page_job.meta
    rows = (snap.result or {}).get("rows", []) if isinstance(snap.result, dict) else []
    if snap.status == "error":
        show_job_failure(snap, "The comparison", "choose fewer or lighter models")
        if not rows:
            st.stop()
        st.info(
            f"Showing the {len(rows)} fits (a model on a fold) that finished before it stopped."
        )
        result = summarise(rows, meta["task"], complete=False, n_folds=meta.get("n_folds"))
    elif snap.status in ("cancelled", "timeout"):
        why = (
            "was stopped"
            if snap.status == "cancelled"
            else (f"ran out of its {job.budget:.0f} s budget")
        )
        st.warning(
            f"The job {why}; showing the {len(rows)} fits (a model on a fold) that "
            "finished. A model with no finished fold is not in the table."
        )
        result = summarise(rows, meta["task"], complete=False, n_folds=meta.get("n_folds"))
    else:
        result = snap.result
    for w in result.warnings:
        st.info(md(w))
    if result.summary.empty:
        st.stop()
    return result, meta
