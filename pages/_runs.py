"""Runs that survive a reload: a page's finished jobs kept in the run store, keyed by the URL.

When a page's job (:class:`pages._jobs.PageJob`) has finished, or was stopped with a
result, :func:`keep_runs` saves its final snapshot and its meta into the server's run store
(:mod:`engine.store`, once per set of finished jobs), puts ``run=<id>`` into the page's URL
and writes the run's link and the store's limits under the result.  Opening the page with
``?run=<id>`` (a reload, the link in another browser, after a server restart) calls
:func:`restore_runs` first: every job of the stored run comes back as a :class:`StoredJob`,
a finished job whose :meth:`StoredJob.snapshot` is the stored one, so the page's own code
draws it without refitting.  A bad, unknown or expired id gives a warning that names it;
the page goes on without it.

A job still running survives a reload too: :func:`register_live` (called when a page job
starts) puts ``live=<id>`` into the URL (an unguessable id) and keeps the job in a
server-wide registry; a page opened with that id in a new session (the reload, or the link
in another tab) takes the running job back (:func:`adopt_live`) and polls it as its own,
and the finished job is then kept as a run like any other.  The registry holds at most
:data:`LIVE_MAX` entries and drops a finished job :data:`LIVE_TTL` seconds after it ended.

Only Streamlit glue lives here; what is stored and how is :mod:`engine.store`.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import streamlit as st

logger = logging.getLogger(__name__)

#: The URL query key of the run id.
RUN_KEY = "run"
#: The URL query key of a running job's id (:func:`register_live`).
LIVE_KEY = "live"
#: Seconds a finished job stays in the registry of running jobs (a reload after it ended
#: but before its session kept it still finds it).
LIVE_TTL = 900.0
#: Most entries in the registry of running jobs (the oldest finished ones go first).
LIVE_MAX = 256
#: The snapshot fields kept (``history`` is not: no page draws it, and it repeats ``latest``).
SNAPSHOT_FIELDS = ("status", "elapsed", "steps", "latest", "result", "error", "error_kind")
#: Statuses of a job whose result is kept ("error" is not: it is run again).
KEPT_STATUSES = ("done", "cancelled", "timeout")


@dataclass(frozen=True)
class StoredSnapshot:
    """The snapshot of a job reopened from the run store (the fields of
    :class:`engine.jobs.JobSnapshot` a page reads; it never waits and has no history)."""

    status: str
    elapsed: float
    steps: int
    latest: Any
    result: Any
    error: str | None = None
    error_kind: str | None = None
    history: tuple = ()
    waiting: None = None
    queue_position: None = None

    @property
    def finished(self) -> bool:
        return True


class StoredJob:
    """A finished job reopened from the run store, in place of :class:`engine.jobs.Job`.

    It has what pages read of a job (``snapshot()``, ``finished``, ``status``, ``result``,
    ``budget``...) and nothing runs: ``cancel`` and ``join`` do nothing.  ``run_id`` is the
    run it came from, ``extra`` what the page kept with it (:func:`keep_runs`).
    """

    finished = True

    def __init__(
        self, snapshot: StoredSnapshot, *, run_id: str, budget=None, name="", extra=None
    ) -> None:
        self._snapshot = snapshot
        self.run_id = run_id
        self.budget = budget
        self.name = name
        self.extra = extra or {}

    def snapshot(self) -> StoredSnapshot:
        return self._snapshot

    @property
    def status(self) -> str:
        return self._snapshot.status

    @property
    def result(self):
        return self._snapshot.result

    @property
    def error(self):
        return self._snapshot.error

    @property
    def error_kind(self):
        return self._snapshot.error_kind

    @property
    def elapsed(self) -> float:
        return self._snapshot.elapsed

    def cancel(self) -> None:
        """Nothing to stop."""

    def join(self, timeout: float | None = None) -> bool:
        return True

    def __repr__(self) -> str:
        return f"StoredJob({self.name!r}, run={self.run_id!r}, status={self.status!r})"


# -- the store ------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def _open_store(directory: str):
    from engine.store import RunStore

    return RunStore(directory)


def run_store():
    """The server's run store (one per folder and process, ``st.cache_resource``; the folder
    and limits from the environment, :func:`engine.store.default_directory`), or the reason
    it cannot be opened (str)."""
    from engine.store import default_directory

    try:
        return _open_store(str(default_directory()))
    except Exception as exc:  # noqa: BLE001 - a bad TREELAB_RUN_* variable, folder, index
        if not isinstance(exc, ValueError | OSError):
            logger.exception("the run store cannot be opened")
        return f"the run store cannot be opened ({exc}); results are kept in this session only"


#: Session key: run id -> the page it belongs to, for the runs this session kept or reopened
#: (the URL may still name one after a switch to another page: it is dropped there).
_OWNERS = "_run_pages"


def _state_key(page: str) -> str:
    return f"_run::{page}"


def run_link(page: str, run_id: str) -> str:
    """The page's relative link with its current URL settings and ``run=<id>``."""
    query = {k: v for k, v in st.query_params.to_dict().items() if k not in (RUN_KEY, LIVE_KEY)}
    query[RUN_KEY] = run_id
    return f"./{page}?{urlencode(query)}"


# -- reopening ------------------------------------------------------------------------------
def restore_runs(page: str, *page_jobs) -> str | None:
    """Reopen the run named by the URL's ``run=<id>`` into ``page_jobs`` (once per id and
    session; a job running in this session is left alone); returns the run id reopened.

    A bad, unknown or expired id, or a run of another page, gives a warning naming it (kept
    while the URL names it) and the page goes on as without it.
    """
    from pages._shared import md

    adopt_live(page_jobs)
    run_id = st.query_params.get(RUN_KEY)
    if run_id is None:
        return None
    owner = st.session_state.get(_OWNERS, {}).get(run_id)
    if owner is not None and owner != page:  # this session's run of the page it came from
        st.query_params.pop(RUN_KEY, None)
        return None
    done = st.session_state.get(_state_key(page))
    if done is not None and done[0] == run_id:
        if done[1]:
            st.warning(done[1])
        return None if done[1] else run_id
    message = None
    try:
        run = _load(run_id)
    except Exception as exc:  # noqa: BLE001 - a link must never break the page
        from engine.store import RunStoreError

        if not isinstance(exc, RunStoreError):
            logger.exception("run %s could not be reopened", run_id)
        message = (
            f"The link's run could not be reopened: {_quote(exc, run_id)} This page shows no "
            "result of it; set the parameters and press **Run** to compute one."
        )
    else:
        if run.kind != page:
            from pages._link_params import PAGE_NAMES

            title = md(PAGE_NAMES.get(run.kind, run.kind))  # the page's name, not its path
            message = (
                f"Run `{run_id}` holds a result of the {title} page, not of this "
                f"one: open it there ([{title}](./{run.kind}?{RUN_KEY}={run_id}))."
            )
        else:
            try:
                reopened = _stored_jobs(run, page_jobs)
            except (TypeError, KeyError, AttributeError, ValueError) as exc:
                message = (
                    f"Run `{run_id}` cannot be reopened by this version of the page "
                    f"({type(exc).__name__}: {md(exc)}); press **Run** to compute it again."
                )
            else:
                if not reopened and any(page_job.running for page_job in page_jobs):
                    # this session's own job runs: reopen the run after it, not now
                    return None
                if not reopened:
                    message = (
                        f"Run `{run_id}` holds no result this page draws; press **Run** to "
                        "compute one."
                    )
                for page_job, (job, meta) in reopened.items():
                    st.session_state[page_job.key] = job
                    st.session_state[page_job.meta_key] = meta
                st.session_state.setdefault(_OWNERS, {})[run_id] = page
    st.session_state[_state_key(page)] = (run_id, message)
    if message:
        st.warning(message)
        return None
    return run_id


def _quote(exc: Exception, run_id: str) -> str:
    """The store's message for Markdown: escaped (:func:`pages._shared.md`), with a
    well-formed run id in it as code (``md`` would escape some of its underscores)."""
    from engine.store import InvalidRunId, check_run_id
    from pages._shared import md

    text = str(exc).rstrip(".") + "."
    try:
        check_run_id(run_id)
    except InvalidRunId:
        return md(text)
    return f"`{run_id}`".join(md(part) for part in text.split(run_id))


def _stored_jobs(run, page_jobs) -> dict:
    """page job -> (:class:`StoredJob`, meta) of each job of ``run`` (not those running in
    this session); TypeError / KeyError on a run that is not a page's."""
    jobs = run.result["jobs"]
    if not isinstance(jobs, dict):
        raise TypeError("the run holds no page jobs")
    out = {}
    for page_job in page_jobs:
        part = jobs.get(page_job.prefix)
        if part is None or page_job.running:
            continue
        fields = dict(part["snapshot"])
        if fields.pop("latest_is_result", False):
            fields["latest"] = fields["result"]
        job = StoredJob(
            StoredSnapshot(**fields),
            run_id=run.run_id,
            budget=part.get("budget"),
            name=page_job.prefix,
            extra=part.get("extra"),
        )
        out[page_job] = (job, dict(part["meta"]))
    return out


#: The run the app loaded to put its parameters in the URL, kept for :func:`restore_runs`.
_LOADED = "_run_loaded"
#: Session-state key prefix: the run ids whose parameters were already put in the URL.
_QUERIED = "_run_query::"
#: Session-state key: run id -> the page it is a run of, for the runs loaded by
#: :func:`open_run_link` (a run of another page is not loaded again on every rerun).
_RUN_PAGES = "_run_kinds"
#: Session-state key prefix of the URL a page job was started with (``PageJob.launch``).
LAUNCH_QUERY = "_link_query::"


def open_run_link(page: str) -> None:
    """Before the sidebar and the page draw (app.py): when the URL names a run of ``page``
    (``?run=<id>``), put the parameters the run was made with into the URL, so the sidebar
    and the page set their widgets from them (:mod:`pages._links`) and show the run's
    settings, not their defaults.  A parameter of the URL that differs from the run's is
    named in a warning with the run's value, which is used.  Once per run id and session;
    a run that cannot be loaded is left to :func:`restore_runs`, which says why."""
    from pages._link_params import SIDEBAR, declared_links
    from pages._links import parse_value, warn_param

    run_id = st.query_params.get(RUN_KEY)
    if run_id is None or st.session_state.get(_QUERIED + run_id):
        return
    kinds = st.session_state.setdefault(_RUN_PAGES, {})
    if kinds.get(run_id, page) != page:  # loaded before: a run of another page
        return
    try:
        run = _load(run_id)
    except Exception:  # noqa: BLE001 - restore_runs reports it on the page
        st.session_state[_QUERIED + run_id] = True
        return
    kinds[run_id] = run.kind
    if run.kind != page:
        # not marked as done: on a new server's first request the link's page passes
        # through app.py's Start page (require_entrypoint), and the run's own page, drawn
        # next, must still get the run's parameters
        return
    st.session_state[_QUERIED + run_id] = True
    st.session_state[_LOADED] = run  # restore_runs reopens it without reading it again
    stored = run.meta.get("query") if isinstance(run.meta, dict) else None
    if not isinstance(stored, dict):
        return
    stored = {str(k): str(v) for k, v in stored.items() if k != RUN_KEY}
    params = {p.name: p for p in declared_links().get(page, ())}
    declared = {name for name, _ in SIDEBAR} | set(params)

    def same(name: str, text: str, wanted: str | None) -> bool:
        """The two texts give the parameter the same value ('5' and '5.0', '04' and '4')."""
        if wanted is None or name not in params:
            return text == wanted
        (value, problem), (run_value, run_problem) = (
            parse_value(params[name], text),
            parse_value(params[name], wanted),
        )
        return text == wanted or (problem is None and run_problem is None and value == run_value)

    for name, text in list(st.query_params.to_dict().items()):
        if name == RUN_KEY or (name not in stored and name not in declared):
            continue  # an unknown name: the page's link check warns about it
        wanted = stored.get(name)
        if not same(name, text, wanted):
            used = "its default" if wanted is None else wanted
            warn_param(name, text, f"differs from the one run {run_id} was made with", used)
        if wanted is None:
            st.query_params.pop(name, None)
    for name, text in stored.items():
        if st.query_params.get(name) != text:
            st.query_params[name] = text


def forget_loaded_run() -> None:
    """Drop the run :func:`open_run_link` loaded when no page reopened it (app.py, at the
    start of every run, before :func:`open_run_link`), so the session does not hold its
    result."""
    st.session_state.pop(_LOADED, None)


def _load(run_id: str):
    from engine.store import RunStoreError, check_run_id

    check_run_id(run_id)
    loaded = st.session_state.pop(_LOADED, None)
    if loaded is not None and loaded.run_id == run_id:
        return loaded
    store = run_store()
    if isinstance(store, str):
        raise RunStoreError(store)
    return store.load(run_id)


# -- keeping --------------------------------------------------------------------------------
def kept_snapshot(snap, to_store: Callable[[dict], dict] | None = None) -> dict:
    """The fields of ``snap`` the store keeps (``to_store(fields)`` may replace some: a live
    object that is not data); ``latest`` is not stored twice when it is the result."""
    fields = {name: getattr(snap, name) for name in SNAPSHOT_FIELDS}
    fields["elapsed"] = float(fields["elapsed"])
    fields["steps"] = int(fields["steps"])
    if to_store is not None:
        fields = to_store(fields)
    if fields["latest"] is fields["result"] and fields["result"] is not None:
        fields["latest"] = None
        fields["latest_is_result"] = True
    return fields


def result_only(fields: dict) -> dict:
    """A :class:`pages._jobs.PageJob` ``to_store`` for a page that reads only the finished
    job's ``result``: the last progress snapshot (``latest``) is not kept."""
    return {**fields, "latest": None}


def keep_runs(page: str, *page_jobs, caption: bool = True) -> str | None:
    """Save the finished jobs of ``page_jobs`` (done, or stopped / out of time) as one run,
    once per set of jobs; put its id into the URL and, with ``caption``, write the run's
    link and the store's limits (:func:`run_caption`).  Returns the run id, or None when
    nothing is kept (no finished job, or the store refused it: the caption says why)."""
    finished = [
        page_job
        for page_job in page_jobs
        if page_job.job is not None
        and page_job.job.finished
        and page_job.job.status in KEPT_STATUSES
    ]
    if not finished:
        return None
    # weak references to the job objects, not their id() (a new job may reuse a freed one's
    # id) nor the jobs themselves (the session would hold every old result in memory)
    jobs = tuple(page_job.job for page_job in finished)
    key = f"_run_saved::{page}"
    saved = st.session_state.get(key)
    if (
        saved is None
        or len(saved[0]) != len(jobs)
        or any(ref() is not job for ref, job in zip(saved[0], jobs, strict=True))
    ):
        signature = tuple(weakref.ref(job) for job in jobs)
        from_runs = {getattr(page_job.job, "run_id", None) for page_job in finished}
        if len(from_runs) == 1 and None not in from_runs:  # all reopened from one run
            saved = (signature, from_runs.pop(), None)
        else:
            saved = (signature, *_save(page, finished))
        st.session_state[key] = saved
    _, run_id, problem = saved
    if not any(page_job.running for page_job in page_jobs):
        st.query_params.pop(LIVE_KEY, None)  # a reload now reopens the kept run
    if run_id is not None:
        st.session_state[_state_key(page)] = (run_id, None)
        st.session_state[_QUERIED + run_id] = True  # its parameters are the page's already
        st.session_state.setdefault(_OWNERS, {})[run_id] = page
        if st.query_params.get(RUN_KEY) != run_id:
            st.query_params[RUN_KEY] = run_id
    if caption:
        run_caption(page, run_id, problem)
    return run_id


def _save(page: str, finished) -> tuple[str | None, str | None]:
    """(run id, None) or (None, why the run is not kept)."""
    from engine.store import RunStoreError

    store = run_store()
    if isinstance(store, str):
        return None, store
    # the URL a job was started with (the last listed of those kept): the parameters it ran
    # with, though the widgets may have been moved since; else the current URL
    launched = [st.session_state.get(LAUNCH_QUERY + page_job.prefix) for page_job in finished]
    launched = [query for query in launched if query is not None]
    query = launched[-1] if launched else st.query_params.to_dict()
    query = {k: v for k, v in query.items() if k not in (RUN_KEY, LIVE_KEY)}
    started = time.perf_counter()
    try:
        jobs = {}
        for page_job in finished:
            job = page_job.job
            jobs[page_job.prefix] = {
                "snapshot": kept_snapshot(job.snapshot(), page_job.to_store),
                "meta": dict(page_job.meta),
                "budget": getattr(job, "budget", None),
                "extra": page_job.extra,
            }
        run_id = store.save(page, {"jobs": jobs}, meta={"page": page, "query": query})
    except RunStoreError as exc:
        return None, f"this result is not kept for a link: {exc}"
    except Exception as exc:  # noqa: BLE001 - keeping a run must never break the page
        logger.exception("run of %s could not be stored", page)
        return None, f"this result is not kept for a link ({type(exc).__name__}: {exc})"
    logger.info("run %s of %s kept in %.2f s", run_id, page, time.perf_counter() - started)
    return run_id, None


def run_caption(page: str, run_id: str | None, problem: str | None = None) -> None:
    """One short caption: the run's link (its id in the URL) and the store's limits."""
    from pages._shared import md

    store = run_store()
    if run_id is None:
        st.caption(f"Not kept: {md(problem or 'no result to keep')}.")
        return
    limits = store.limits.describe() if not isinstance(store, str) else ""
    st.caption(
        f"Run [`{run_id}`]({run_link(page, run_id)}) is kept: its link reopens it without "
        f"refitting (after a reload, elsewhere, after a restart). {limits}"
    )


# -- running jobs across a reload ----------------------------------------------------------
@dataclass
class _Live:
    """One entry of the registry: a page's running jobs by prefix (job, meta, launch URL)."""

    jobs: dict
    created: float
    finished_at: float | None = None

    @property
    def finished(self) -> bool:
        return all(job.finished for job, *_ in self.jobs.values())


@st.cache_resource(show_spinner=False)
def _live_registry() -> tuple[threading.Lock, dict]:
    """The server's registry of running page jobs: live id -> :class:`_Live`."""
    return threading.Lock(), {}


#: Session key: the live ids this session started or took over (their jobs are its own).
_LIVE_OWNED = "_live_owned"


def _prune(entries: dict) -> None:
    """Drop the entries whose jobs all ended :data:`LIVE_TTL` seconds ago, then the oldest
    finished ones, then the oldest, down to :data:`LIVE_MAX` (under the registry's lock)."""
    now = time.monotonic()
    for live_id, entry in list(entries.items()):
        if entry.finished:
            if entry.finished_at is None:
                entry.finished_at = now
            if now - entry.finished_at > LIVE_TTL:
                del entries[live_id]
    if len(entries) > LIVE_MAX:
        order = sorted(entries, key=lambda i: (not entries[i].finished, entries[i].created))
        for live_id in order[: len(entries) - LIVE_MAX]:
            del entries[live_id]


def register_live(page_job, job) -> str:
    """Keep the started ``job`` of ``page_job`` in the server's registry under this page's
    live id (the URL's ``live=<id>`` when this session made it, else a new unguessable id,
    put into the URL); returns the id."""
    lock, entries = _live_registry()
    owned = st.session_state.setdefault(_LIVE_OWNED, set())
    live_id = st.query_params.get(LIVE_KEY)
    with lock:
        _prune(entries)
        if live_id not in owned or live_id not in entries:
            live_id = secrets.token_urlsafe(16)
            entries[live_id] = _Live(jobs={}, created=time.monotonic())
            owned.add(live_id)
        entry = entries[live_id]
        entry.finished_at = None
        entry.jobs[page_job.prefix] = (
            job,
            dict(page_job.meta),
            st.session_state.get(LAUNCH_QUERY + page_job.prefix),
        )
    st.query_params[LIVE_KEY] = live_id
    return live_id


def adopt_live(page_jobs) -> int:
    """Take over the jobs the URL's ``live=<id>`` names (a reload or a link opened while
    they ran): each of ``page_jobs`` with no job of its own in this session gets its job
    and meta back; returns how many were taken.  An id unknown here (the jobs ended long
    ago, or a server restart) is dropped from the URL with a note."""
    live_id = st.query_params.get(LIVE_KEY)
    if live_id is None:
        return 0
    owned = st.session_state.setdefault(_LIVE_OWNED, set())
    if live_id in owned:
        return 0
    lock, entries = _live_registry()
    with lock:
        entry = entries.get(live_id)
        found = dict(entry.jobs) if entry is not None else {}
    mine = [page_job for page_job in page_jobs if page_job.prefix in found]
    if not mine:
        st.query_params.pop(LIVE_KEY, None)
        if entry is None:
            st.info(
                "The job this link was watching is no longer on the server (it ended a "
                "while ago, or the server restarted); a finished job's link has "
                f"`{RUN_KEY}=` instead. Press **Run** to compute it again."
            )
        return 0
    owned.add(live_id)
    taken = 0
    for page_job in mine:
        if page_job.job is not None:
            continue
        job, meta, launched = found[page_job.prefix]
        st.session_state[page_job.key] = job
        st.session_state[page_job.meta_key] = meta
        if launched is not None:
            st.session_state[LAUNCH_QUERY + page_job.prefix] = launched
        taken += 1
    return taken
