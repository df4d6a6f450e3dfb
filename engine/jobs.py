"""Anytime background jobs for live pages (docs/spec.md section 0.6; issue 13).

A :class:`Job` drives a *step generator*.  The generator does one short piece of work
(well under 100 ms: a few numba calls, one CV fold, ...) between two ``yield`` statements
and yields a progress snapshot (any picklable object, usually a dict).  Between two steps
the runner checks a cancel flag and a wall-clock budget, so

* ``cancel()`` stops the job within one step;
* the budget is honoured within one step;
* the job's ``result`` is the generator's return value when it finishes, or the last
  snapshot it yielded when it is cancelled, runs out of time or fails ("Stop keeps the best
  result": generators put their incumbent in each snapshot).

Two runners run the same generators with the same API (the thread runner is here, the Dask
runner in :mod:`engine.dask_runner`; both drive the generator with
:mod:`engine.job_context`):

``dask`` (the default)
    The generator runs in a Dask worker *process* (:mod:`engine.cluster`: the current
    client, the cluster at ``TREELAB_DASK_SCHEDULER``, or an embedded ``LocalCluster``
    started on first use).  Snapshots stream back through a Dask queue, at most a few
    times a second (less often for big snapshots), and Stop reaches the worker through a
    Dask event.  When a step overruns (a scikit-learn fit that cannot be interrupted),
    ``cancel()`` then ``join()`` still returns within about a second: the job ends
    ``cancelled`` with the last snapshot received, its task is cancelled and the worker
    still running the abandoned step is restarted.  A job whose worker dies (killed, or over
    its memory limit) or that cannot reach the cluster ends with status ``error`` and a
    message saying so (:attr:`Job.error_kind` is ``"memory"``, ``"lost"`` or ``"cluster"``).
``threads`` (``TREELAB_JOBS=threads`` or ``Job(..., runner="threads")``)
    The generator runs in a thread of the calling process (numba kernels release the GIL;
    Python and scikit-learn code does not).  A step cannot be abandoned here, so long fits
    are cut into steps: scikit-learn forests grow a chunk of trees per step
    (:func:`engine.job_context.fit_in_steps`; Stop waits about half a second, not the whole
    forest).

Long numba kernels that cannot yield often enough receive the :class:`JobContext` and
poll ``ctx.should_stop()`` (or ``ctx.deadline``, a ``time.monotonic()`` value of the
process running the job) inside their inner loops.

Runners never call ``st.*``: a Streamlit page keeps the ``Job`` in ``st.session_state`` and
polls ``job.snapshot()`` (a local read) from an ``st.fragment(run_every=...)``.
:class:`JobSlots` bounds how many jobs of one session run at once (the next ones wait in
line, status ``queued``).

Example::

    def count(ctx, n):
        for i in range(n):
            time.sleep(0.01)          # one short step of work
            yield {"i": i}
        return {"total": n}

    job = Job(count, 100, budget=5.0).start()
    job.join()
    job.status, job.result            # ('done', {'total': 100})

The page talks to a running job with :meth:`Job.send` (a dict of plain values); the
generator reads what arrived with ``ctx.messages()`` between two steps.  The thread runner
hands it over in a deque shared with the :class:`JobContext`; the Dask runner through a
Dask queue the worker's pump thread reads every :data:`FLUSH_INTERVAL` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from engine.dask_runner import (
    CANCEL_GRACE,
    FLUSH_INTERVAL,
    HISTORY_BYTES,
    MEMORY_STOP_FRACTION,
    POLL_INTERVAL,
    STREAM_RATE,
    DaskRun,
)
from engine.job_context import JobContext, ProgressRecorder, drive_steps

__all__ = [
    "CANCEL_GRACE",
    "FINISHED",
    "FLUSH_INTERVAL",
    "HISTORY_BYTES",
    "MEMORY_STOP_FRACTION",
    "POLL_INTERVAL",
    "STATES",
    "STREAM_RATE",
    "Job",
    "JobContext",
    "JobSlots",
    "JobSnapshot",
    "poll_interval",
    "running_jobs",
]

logger = logging.getLogger(__name__)

#: Job states. ``queued``: waiting for a free slot of its :class:`JobSlots`; ``done``: the
#: generator returned; ``cancelled``: Stop was pressed; ``timeout``: the budget ran out;
#: ``error``: the step function raised, or its worker or the cluster was lost.
STATES = ("pending", "queued", "running", "done", "cancelled", "timeout", "error")
FINISHED = frozenset({"done", "cancelled", "timeout", "error"})


#: Jobs started in this process and not finished yet (see :func:`running_jobs`).
_RUNNING: weakref.WeakSet = weakref.WeakSet()
_RUNNING_LOCK = threading.Lock()


def running_jobs() -> int:
    """How many jobs started in this process have not finished yet (every session of a
    server, either runner; a job waiting in its session's line is not counted).  Pages poll
    their running jobs less often when there are many (:func:`poll_interval`)."""
    with _RUNNING_LOCK:
        return sum(1 for job in _RUNNING if not job._finished.is_set())


#: Seconds between two polls of a running job's live view while the server runs a few jobs.
POLL_SECONDS = 0.5
#: Longest wait between two polls, however many jobs the server runs.
SLOWEST_POLL_SECONDS = 3.0
#: Running jobs per extra second between polls (see :func:`poll_interval`).
JOBS_PER_POLL_SECOND = 8


def poll_interval(running: int) -> float:
    """Seconds between two polls of a live view when the server runs ``running`` jobs:
    :data:`POLL_SECONDS` up to 4 jobs, then ``running / 8`` s (2.5 s at 20), at most
    :data:`SLOWEST_POLL_SECONDS`.  Every poll reruns the page's fragment on the server, so
    the polls of a class of 20 watching sessions stay at about 8 a second."""
    return min(SLOWEST_POLL_SECONDS, max(POLL_SECONDS, running / JOBS_PER_POLL_SECOND))


@dataclass(frozen=True)
class JobSnapshot:
    """A consistent copy of a job's state, safe to read from any thread.

    ``history`` holds ``(elapsed_seconds, snapshot)`` pairs, downsampled to at most
    ``max_history`` entries (the first and the latest are always kept).  ``waiting`` says
    why a job that is not finished has no snapshot yet: ``"session"`` (queued behind the
    session's other jobs, ``queue_position`` is its 1-based place in line) or ``"worker"``
    (submitted to Dask, no worker has started it yet: the workers are starting, warming
    up or busy with other jobs); ``None`` once it runs.
    """

    status: str
    elapsed: float
    steps: int
    latest: Any
    history: list[tuple[float, Any]]
    result: Any
    error: str | None
    error_kind: str | None = None
    waiting: str | None = None
    queue_position: int | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class Job:
    """Run ``fn(ctx, *args, **kwargs)`` (a generator function) in the background.

    Parameters
    ----------
    fn : callable
        Generator function taking a :class:`JobContext` first.  Each ``yield`` ends one
        step and hands out a progress snapshot; ``return value`` sets :attr:`result`.
        With the Dask runner ``fn``, its arguments, snapshots and result are pickled
        (functions of importable modules are sent by reference).
    *args, **kwargs
        Passed to ``fn`` after the context.
    budget : float or None
        Wall-clock budget in seconds (``None``: no limit), counted from the moment the job
        starts running (time waiting for a slot or a worker does not count).  Must be
        positive.
    max_history : int
        Maximum number of snapshots kept (older ones are thinned to every other one
        when the limit is hit, so the history spans the whole run).
    name : str
        Label for displays, the worker thread and the Dask task key.
    runner : {"dask", "threads"} or None
        Where the generator runs; ``None`` reads ``TREELAB_JOBS`` (default ``"dask"``).

    Raises
    ------
    ValueError
        If ``budget`` is not positive, ``max_history < 2`` or ``runner`` is unknown.
    TypeError
        If ``fn`` is not callable.
    """

    def __init__(
        self,
        fn: Callable[..., Generator],
        *args,
        budget: float | None = 60.0,
        max_history: int = 1000,
        name: str = "job",
        runner: str | None = None,
        **kwargs,
    ):
        if not callable(fn):
            raise TypeError(f"fn must be a generator function, got {type(fn).__name__}")
        if budget is not None and not budget > 0:
            raise ValueError(f"budget must be a positive number of seconds or None, got {budget!r}")
        if max_history < 2:
            raise ValueError(f"max_history must be >= 2, got {max_history!r}")
        if runner is None:
            from engine.cluster import jobs_runner

            runner = jobs_runner()
        if runner not in ("dask", "threads"):
            raise ValueError(f"runner must be 'dask' or 'threads', got {runner!r}")
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.budget = budget
        self.max_history = int(max_history)
        self.name = name
        self.runner = runner
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._inbox: deque = deque()  # messages for the thread runner's JobContext
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        self._status = "pending"
        self._rec = ProgressRecorder(self.max_history)
        self._history_view: list[tuple[float, Any]] | None = None  # Dask runner's history
        self._result: Any = None
        self._error: str | None = None
        self._error_kind: str | None = None
        self._traceback: str | None = None
        self._t0: float | None = None
        self._t1: float | None = None
        self._waiting: str | None = None
        self._slots: JobSlots | None = None
        self._callbacks: list[Callable[[Job], None]] = []
        self.worker: str | None = None  # Dask worker address once the job runs there

    # -- control -------------------------------------------------------------------------
    def start(self) -> Job:
        """Start the job; returns ``self``.  Raises RuntimeError if started twice.

        With the Dask runner this submits the job to the cluster (starting the embedded
        one on first use); when the cluster cannot be reached the job ends at once with
        status ``error`` and ``error_kind == "cluster"`` instead of raising.
        """
        with self._lock:
            if self._started:
                raise RuntimeError(f"job {self.name!r} was already started")
            self._started = True
            self._status = "running"
        with _RUNNING_LOCK:
            _RUNNING.add(self)
        if self.runner == "threads":
            with self._lock:
                self._t0 = time.monotonic()
            self._thread = threading.Thread(
                target=self._run_thread, name=f"treelab-{self.name}", daemon=True
            )
            self._thread.start()
        else:
            with self._lock:
                self._waiting = "worker"
            self._dask = DaskRun(self)
            self._dask.start()
        return self

    def cancel(self) -> None:
        """Ask the job to stop after its current step (the Stop button).

        A queued job leaves its line and ends ``cancelled`` at once.  With the Dask runner
        a step that overruns is abandoned :data:`CANCEL_GRACE` seconds later.
        """
        self._cancel.set()
        with self._lock:
            queued = self._status == "queued"
        if queued and self._slots is not None and self._slots._withdraw(self):
            self._finish("cancelled", None, None)
            return
        dask_run = getattr(self, "_dask", None)
        if dask_run is not None:
            dask_run.request_cancel()

    def send(self, message: dict) -> None:
        """Send ``message`` to the running generator, which reads it with
        ``ctx.messages()`` between two steps (e.g. "give this node priority").

        ``message`` is a dict of str keys and plain values (str, int, float, bool, None):
        the Dask runner puts it on a Dask queue (Dask serialises it, with pickle for a
        dict; only such plain values, made by the server, ever go there).  With the
        thread runner it is read at the next step; with the Dask runner within about
        :data:`FLUSH_INTERVAL` seconds of reaching the worker.  A message to a finished job
        is dropped.  Raises ``TypeError`` for anything else than such a dict."""
        if not isinstance(message, dict) or not all(
            isinstance(k, str) and (v is None or isinstance(v, str | int | float | bool))
            for k, v in message.items()
        ):
            raise TypeError(
                "A job message is a dict of str keys and str, int, float, bool or None "
                f"values; got {message!r}."
            )
        if self.finished:
            return
        dask_run = getattr(self, "_dask", None)
        if dask_run is not None:
            dask_run.send(dict(message))
        else:
            self._inbox.append(dict(message))

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the job has finished; True if it did within ``timeout`` seconds."""
        return self._finished.wait(timeout)

    def add_done_callback(self, callback: Callable[[Job], None]) -> None:
        """Call ``callback(job)`` (from the runner's thread) once the job has finished."""
        with self._lock:
            if not self._finished.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    # -- reading -------------------------------------------------------------------------
    @property
    def status(self) -> str:
        with self._lock:
            return self._status

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    @property
    def result(self) -> Any:
        with self._lock:
            return self._result

    @property
    def error(self) -> str | None:
        with self._lock:
            return self._error

    @property
    def error_kind(self) -> str | None:
        """Why the job failed: ``"exception"`` (the step raised), ``"memory"`` (over its
        worker's memory limit), ``"lost"`` (its worker died), ``"cluster"`` (no cluster);
        None unless the status is ``error``."""
        with self._lock:
            return self._error_kind

    @property
    def traceback(self) -> str | None:
        """The step function's traceback (for logs and tests, never for the page)."""
        with self._lock:
            return self._traceback

    @property
    def elapsed(self) -> float:
        with self._lock:
            return self._elapsed_locked()

    @property
    def queue_position(self) -> int | None:
        """1-based place in its :class:`JobSlots` line while queued, else None."""
        slots = self._slots
        return None if slots is None else slots.position(self)

    def _elapsed_locked(self) -> float:
        if self._t0 is None:
            return 0.0
        end = self._t1 if self._t1 is not None else time.monotonic()
        return end - self._t0

    def snapshot(self) -> JobSnapshot:
        """A consistent copy of status, history and result, taken under the lock."""
        position = self.queue_position
        with self._lock:
            if self._history_view is not None:
                history = list(self._history_view)
            else:
                history = [(t, item) for _, t, item in self._rec.history]
            waiting = self._waiting
            if self._status == "queued":
                waiting = "session"
            return JobSnapshot(
                status=self._status,
                elapsed=self._elapsed_locked(),
                steps=self._rec.steps,
                latest=self._rec.latest,
                history=history,
                result=self._result,
                error=self._error,
                error_kind=self._error_kind,
                waiting=None if self._status in FINISHED else waiting,
                queue_position=position,
            )

    # -- finishing -----------------------------------------------------------------------
    def _finish(self, status: str, result: Any, error: str | None, kind: str | None = None):
        with self._lock:
            if self._finished.is_set():
                return
            self._status = status
            self._result = result
            self._error = error
            self._error_kind = kind if status == "error" else None
            now = time.monotonic()
            if self._t0 is None:
                self._t0 = now
            self._t1 = now
            self._waiting = None
            callbacks, self._callbacks = self._callbacks, []
            self._finished.set()
        with _RUNNING_LOCK:
            _RUNNING.discard(self)
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # noqa: BLE001 - a display hook must not break the runner
                logger.exception("job %s: done callback failed", self.name)

    # -- thread runner -------------------------------------------------------------------
    def _record(self, item: Any) -> None:
        with self._lock:
            self._rec.record(self._elapsed_locked(), item)

    def _run_thread(self) -> None:
        deadline = float("inf") if self.budget is None else self._t0 + self.budget
        ctx = JobContext(deadline=deadline, cancel_event=self._cancel, inbox=self._inbox)
        status, result, error, tb = drive_steps(self.fn, self.args, self.kwargs, ctx, self._record)
        with self._lock:
            if status != "done":
                result = self._rec.latest
            self._traceback = tb
            self._rec.close(self._elapsed_locked())
        self._finish(status, result, error, "exception" if status == "error" else None)

    def __repr__(self) -> str:
        return f"Job({self.name!r}, status={self.status!r}, elapsed={self.elapsed:.2f}s)"


# -- per-session bound ----------------------------------------------------------------------
class JobSlots:
    """At most ``max_running`` jobs of one owner (a browser session) run at once.

    :meth:`start` starts a job when a slot is free, else puts it in line (status
    ``queued``); each finished job starts the next in line.  Thread-safe.

    Parameters
    ----------
    max_running : int
        Jobs running at once (>= 1).

    Raises
    ------
    ValueError
        If ``max_running < 1``.
    """

    def __init__(self, max_running: int = 2):
        if max_running < 1:
            raise ValueError(f"max_running must be >= 1, got {max_running!r}")
        self.max_running = int(max_running)
        self._lock = threading.Lock()
        self._running: set[int] = set()
        self._line: deque[Job] = deque()

    def start(self, job: Job) -> Job:
        """Start ``job`` now or queue it; returns ``job``."""
        with self._lock:
            job._slots = self
            if len(self._running) < self.max_running:
                self._running.add(id(job))
                start_now = True
            else:
                with job._lock:
                    job._status = "queued"
                self._line.append(job)
                start_now = False
        if start_now:
            self._launch(job)
        return job

    def _launch(self, job: Job) -> None:
        job.add_done_callback(self._release)
        with job._lock:
            job._status = "pending"
        job.start()

    def _release(self, job: Job) -> None:
        with self._lock:
            self._running.discard(id(job))
            nxt = None
            while self._line and len(self._running) < self.max_running:
                nxt = self._line.popleft()
                if nxt._cancel.is_set():
                    nxt = None
                    continue
                self._running.add(id(nxt))
                break
        if nxt is not None:
            self._launch(nxt)

    def _withdraw(self, job: Job) -> bool:
        with self._lock:
            try:
                self._line.remove(job)
            except ValueError:
                return False
            return True

    def position(self, job: Job) -> int | None:
        """1-based place of ``job`` in line, or None when it is not waiting."""
        with self._lock:
            for i, queued in enumerate(self._line):
                if queued is job:
                    return i + 1
        return None

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)

    @property
    def queued(self) -> int:
        with self._lock:
            return len(self._line)
