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

Two runners run the same generators with the same API:

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
    Python and scikit-learn code does not).

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
"""

from __future__ import annotations

import logging
import os
import pickle
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

#: Job states. ``queued``: waiting for a free slot of its :class:`JobSlots`; ``done``: the
#: generator returned; ``cancelled``: Stop was pressed; ``timeout``: the budget ran out;
#: ``error``: the step function raised, or its worker or the cluster was lost.
STATES = ("pending", "queued", "running", "done", "cancelled", "timeout", "error")
FINISHED = frozenset({"done", "cancelled", "timeout", "error"})

#: After ``cancel()``, how long the Dask runner waits for the worker to stop between two
#: steps before it abandons the running step (``join`` then returns about this much later).
CANCEL_GRACE = 0.6
#: Least seconds between two progress messages of one Dask job (bigger snapshots wait
#: longer: see :data:`STREAM_RATE`).
FLUSH_INTERVAL = 0.25
#: Seconds between two reads of a Dask job's progress queue by the client.
POLL_INTERVAL = 0.2
#: Bytes per second one job may stream through the scheduler.
STREAM_RATE = 16 * 2**20
#: Bytes of history snapshots a Dask job keeps on the client before thinning it further.
HISTORY_BYTES = 64 * 2**20
#: Fraction of its worker's memory limit above which a job stops between steps (the nanny
#: restarts the worker at 95 %).
MEMORY_STOP_FRACTION = 0.9


@dataclass
class JobContext:
    """What a step generator may read while it runs.

    Attributes
    ----------
    deadline : float
        ``time.monotonic()`` value after which the job must stop (``inf`` without budget).
    cancel_event : threading.Event
        Set when the user presses Stop.
    """

    deadline: float
    cancel_event: threading.Event = field(default_factory=threading.Event)

    def should_stop(self) -> bool:
        """True when the job was cancelled or its budget is spent."""
        return self.cancel_event.is_set() or time.monotonic() >= self.deadline

    def time_left(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self.deadline - time.monotonic())


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


class _Recorder:
    """Latest snapshot and downsampled history of one run (held by the process running it).

    Entries are ``(step, elapsed, item)``; every ``stride``-th step is kept, and when the
    history exceeds ``max_history`` it keeps every other entry and doubles the stride, so it
    spans the whole run.  Not locked: callers hold their own lock.
    """

    def __init__(self, max_history: int):
        self.max_history = max_history
        self.steps = 0
        self.latest: Any = None
        self.history: list[tuple[int, float, Any]] = []
        self.stride = 1

    def record(self, elapsed: float, item: Any) -> None:
        self.steps += 1
        self.latest = item
        if self.steps % self.stride == 0:
            self.history.append((self.steps, elapsed, item))
            if len(self.history) > self.max_history:
                self.history = self.history[::2]  # thin, always keeping the first
                self.stride *= 2

    def close(self, elapsed: float) -> None:
        """Make sure the latest snapshot ends the history (within the bound)."""
        if self.latest is not None and (not self.history or self.history[-1][2] is not self.latest):
            self.history.append((self.steps, elapsed, self.latest))
            if len(self.history) > self.max_history:
                del self.history[-2]  # keep the bound; first and latest stay


def _drive(fn, args, kwargs, ctx: JobContext, record: Callable[[Any], None]):
    """Run the step generator until it returns, is cancelled, times out or raises.

    Returns ``(status, result, error, traceback_text)``; ``result`` is the return value
    when ``done`` and ``None`` otherwise (the caller substitutes the last snapshot).
    """
    status, result, error, tb = "done", None, None, None
    gen = None
    try:
        gen = fn(ctx, *args, **kwargs)
        if not hasattr(gen, "__next__"):
            raise TypeError(
                f"{getattr(fn, '__name__', fn)!r} must be a generator "
                "function (use 'yield' for each step)"
            )
        while True:
            if ctx.cancel_event.is_set():
                status = "cancelled"
                break
            if time.monotonic() >= ctx.deadline:
                status = "timeout"
                break
            try:
                item = next(gen)
            except StopIteration as stop:
                result = stop.value
                break
            record(item)
    except _MemoryStop as exc:
        status, error, tb = "error", str(exc), None
    except Exception as exc:  # a step function's failure is reported, never raised
        status = "error"
        error = f"{type(exc).__name__}: {exc}"
        tb = traceback.format_exc()
    finally:
        if gen is not None and hasattr(gen, "close"):
            try:
                gen.close()
            except Exception:  # noqa: BLE001 - closing must not mask the outcome
                pass
    return status, result, error, tb


class _MemoryStop(Exception):
    """Raised between steps on a worker when the job nears the worker's memory limit."""


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
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        self._status = "pending"
        self._rec = _Recorder(self.max_history)
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
            self._dask = _DaskRun(self)
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
        ctx = JobContext(deadline=deadline, cancel_event=self._cancel)
        status, result, error, tb = _drive(self.fn, self.args, self.kwargs, ctx, self._record)
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


# -- Dask runner: the worker side -------------------------------------------------------------
def _process_rss() -> int:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # noqa: BLE001
        return 0


class _WorkerState:
    """The recorder of a job running on a worker, with what was already sent to the client."""

    def __init__(self, max_history: int):
        self.lock = threading.Lock()
        self.rec = _Recorder(max_history)
        self.t0 = time.monotonic()
        self.sent_step = 0  # highest history step sent
        self.sent_latest = 0  # step of the latest snapshot sent
        self.seq = 0

    def record(self, item: Any) -> None:
        with self.lock:
            self.rec.record(time.monotonic() - self.t0, item)

    def delta(self) -> dict | None:
        """What the client does not have yet (None when nothing changed)."""
        with self.lock:
            rec = self.rec
            if rec.steps == self.sent_latest and not any(
                s > self.sent_step for s, _, _ in rec.history
            ):
                return None
            new = [(s, t, item) for s, t, item in rec.history if s > self.sent_step]
            if new:
                self.sent_step = new[-1][0]
            self.seq += 1
            msg = {
                "type": "progress",
                "seq": self.seq,
                "steps": rec.steps,
                "latest_step": rec.steps,
                "latest": rec.latest,
                "keep": [s for s, _, _ in rec.history],
                "new": new,
                "elapsed": time.monotonic() - self.t0,
            }
            self.sent_latest = rec.steps
            return msg


def _run_on_worker(key: str, payload, budget, max_history: int, flush_interval: float):
    """The Dask task of one job: drive the generator, stream progress, return the outcome."""
    import cloudpickle
    from distributed import Event, Queue, get_worker

    from engine.cluster import wait_for_worker_imports

    wait_for_worker_imports()  # never race the worker's own import of scikit-learn
    worker = get_worker()
    started = Event(key + "-started")
    if started.is_set():
        # The scheduler re-ran this job after its first worker died (an external cluster's
        # ``allowed-failures``): running it again would most likely kill another worker.
        return {"status": "error", "error_kind": "lost", "rerun": True}
    started.set()
    queue = Queue(key + "-progress")
    cancel = Event(key + "-cancel")
    local_cancel = threading.Event()
    state = _WorkerState(max_history)
    memory_limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)

    def send(msg: dict) -> int:
        data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        queue.put(data)
        return len(data)

    send(
        {
            "type": "started",
            "worker": worker.address,
            "pid": os.getpid(),
            "memory_limit": memory_limit,
        }
    )
    stop_pump = threading.Event()

    def pump() -> None:
        wait = flush_interval
        while not stop_pump.is_set():
            try:
                if cancel.wait(timeout=wait):
                    local_cancel.set()
            except Exception:  # noqa: BLE001 - scheduler busy or gone: retry later
                time.sleep(wait)
            if local_cancel.is_set():
                stop_pump.wait(flush_interval)  # the event stays set: do not spin on it
            msg = None if stop_pump.is_set() else state.delta()
            if msg is not None:
                try:
                    size = send(msg)
                except Exception:  # noqa: BLE001
                    size = 0
                wait = max(flush_interval, size / STREAM_RATE)
            else:
                wait = flush_interval

    pump_thread = threading.Thread(target=pump, name=f"treelab-pump-{key}", daemon=True)
    pump_thread.start()
    last_check = [0.0]

    def record(item: Any) -> None:
        state.record(item)
        now = time.monotonic()
        if memory_limit and now - last_check[0] > 0.1:
            last_check[0] = now
            rss = _process_rss()
            if rss > MEMORY_STOP_FRACTION * memory_limit:
                raise _MemoryStop(
                    f"MemoryError: the job used {rss / 2**30:.1f} GiB of its worker's "
                    f"{memory_limit / 2**30:.1f} GiB limit"
                )

    status, result, error, tb, kind = "error", None, None, None, None
    try:
        fn, args, kwargs = cloudpickle.loads(payload)
        deadline = float("inf") if budget is None else state.t0 + budget
        ctx = JobContext(deadline=deadline, cancel_event=local_cancel)
        status, result, error, tb = _drive(fn, args, kwargs, ctx, record)
        if status == "error":
            kind = "exception"
            if error and error.startswith("MemoryError: the job used"):
                kind, error = "memory", _lost_message("memory", memory_limit)
    except Exception as exc:  # noqa: BLE001 - e.g. the payload cannot be unpickled here
        error, tb, kind = f"{type(exc).__name__}: {exc}", traceback.format_exc(), "exception"
    finally:
        stop_pump.set()
        pump_thread.join(5)
    with state.lock:
        if status != "done":
            result = state.rec.latest
        state.rec.close(time.monotonic() - state.t0)
    final = state.delta() or {}
    final.update(
        type="final",
        status=status,
        result=result,
        error=error,
        error_kind=kind,
        traceback=tb,
        elapsed=time.monotonic() - state.t0,
    )
    try:
        data = pickle.dumps(final, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - an unpicklable result
        data = pickle.dumps(
            {
                "type": "final",
                "status": "error",
                "result": None,
                "error": f"the job's result cannot be sent back: {type(exc).__name__}: {exc}",
                "error_kind": "exception",
                "elapsed": time.monotonic() - state.t0,
            }
        )
    try:
        queue.close()
    except Exception:  # noqa: BLE001
        pass
    try:
        Event(key + "-ended").set()
    except Exception:  # noqa: BLE001
        pass
    return data


# -- Dask runner: the client side -------------------------------------------------------------
def _lost_message(kind: str, limit: int | None, detail: str = "") -> str:
    from engine.cluster import format_bytes

    if kind == "memory":
        size = f"more than {format_bytes(limit)}" if limit else "more memory than its worker has"
        return (
            f"MemoryError: this job needed {size} of memory (the limit of one worker) and "
            "was stopped; the results so far are kept"
        )
    if kind == "cluster":
        return f"ClusterError: {detail}"
    return (
        "WorkerLost: the worker process running this job stopped unexpectedly (it was "
        "killed or crashed); the results so far are kept and a new worker was started"
        + (f" ({detail})" if detail else "")
    )


class _DaskRun:
    """Client side of a Dask job: submit it, mirror its progress, cancel and recycle."""

    def __init__(self, job: Job):
        self.job = job
        self.key = f"treelab-{_safe(job.name)}-{uuid.uuid4().hex[:12]}"
        self.client = None
        self.future = None
        self.queue = None
        self.cancel_event = None
        self.started_info: dict | None = None
        self.cancel_at: float | None = None
        self.items: dict[int, tuple[float, Any, int]] = {}  # step -> (elapsed, item, batch)
        self.batch_bytes: dict[int, int] = {}
        self.keep: list[int] = []
        self.thread: threading.Thread | None = None
        self.wake = threading.Event()

    # started from Job.start()
    def start(self) -> None:
        job = self.job
        try:
            import cloudpickle
            from distributed import Event, Queue

            from engine.cluster import get_client

            self.client = get_client()
            payload = cloudpickle.dumps((job.fn, job.args, job.kwargs))
            self.queue = Queue(self.key + "-progress", client=self.client)
            self.cancel_event = Event(self.key + "-cancel", client=self.client)
            if len(payload) > 2**20:  # big inputs go to a worker directly, not via the scheduler
                payload = self.client.scatter(payload, hash=False)
            self.future = self.client.submit(
                _run_on_worker,
                self.key,
                payload,
                job.budget,
                job.max_history,
                FLUSH_INTERVAL,
                key=self.key,
                pure=False,
                retries=0,
            )
        except Exception as exc:  # noqa: BLE001 - no cluster, or inputs that cannot be sent
            from engine.cluster import ClusterError

            if isinstance(exc, ClusterError):
                job._finish("error", None, _lost_message("cluster", None, str(exc)), "cluster")
            else:
                job._finish(
                    "error",
                    None,
                    f"{type(exc).__name__}: this job cannot be sent to a worker: {exc}",
                    "exception",
                )
            self._cleanup()
            return
        self.thread = threading.Thread(
            target=self._monitor, name=f"treelab-monitor-{job.name}", daemon=True
        )
        self.thread.start()

    def request_cancel(self) -> None:
        if self.cancel_at is not None:
            return
        self.cancel_at = time.monotonic()
        self.wake.set()  # the monitor re-checks at once
        try:
            self.cancel_event.set()
        except Exception:  # noqa: BLE001 - the monitor notices a dead cluster itself
            pass

    # monitor thread ---------------------------------------------------------------------
    def _apply(self, raw) -> str | None:
        if not isinstance(raw, bytes | bytearray):
            return raw.get("type") if isinstance(raw, dict) else None
        msg = pickle.loads(raw)  # noqa: S301 - written by our own worker task
        job = self.job
        if msg["type"] == "started":
            self.started_info = msg
            job.worker = msg.get("worker")
            with job._lock:
                job._t0 = time.monotonic()
                job._waiting = None
            return "started"
        batch = msg.get("seq", 0)
        self.batch_bytes[batch] = len(raw)
        for step, elapsed, item in msg.get("new", ()):
            self.items[step] = (elapsed, item, batch)
        if "keep" in msg:
            self.keep = [s for s in msg["keep"] if s in self.items]
        self._bound_history()
        with job._lock:
            if "steps" in msg:
                job._rec.steps = msg["steps"]
                job._rec.latest = msg["latest"]
            job._history_view = [(self.items[s][0], self.items[s][1]) for s in self.keep]
        return msg["type"]

    def _bound_history(self) -> None:
        """Thin the history (first and latest kept) while its snapshots exceed HISTORY_BYTES."""
        while len(self.keep) > 2:
            live = {self.items[s][2] for s in self.keep}
            if sum(self.batch_bytes.get(b, 0) for b in live) <= HISTORY_BYTES:
                break
            self.keep = self.keep[:-1:2] + [self.keep[-1]]
        wanted = set(self.keep)
        for step in [s for s in self.items if s not in wanted]:
            del self.items[step]

    def _monitor(self) -> None:
        job = self.job
        try:
            self.future.add_done_callback(lambda _future: self.wake.set())
            while True:
                timeout = POLL_INTERVAL
                if self.cancel_at is not None:
                    if self.started_info is None and not self.future.done():
                        self._abandon(restart=False)
                        return
                    left = self.cancel_at + CANCEL_GRACE - time.monotonic()
                    timeout = max(0.01, min(timeout, left))
                self.wake.wait(timeout)
                self.wake.clear()
                for raw in self.queue.get(batch=True):
                    self._apply(raw)
                if self.future.done():
                    self._complete()
                    return
                if (
                    self.cancel_at is not None
                    and time.monotonic() >= self.cancel_at + CANCEL_GRACE
                    and self.started_info is not None
                ):
                    self._abandon(restart=True)
                    return
        except Exception as exc:  # noqa: BLE001 - the cluster went away under us
            logger.warning("job %s: lost contact with the cluster", job.name, exc_info=True)
            if not job.finished:
                job._finish(
                    "error",
                    job._rec.latest,
                    _lost_message("cluster", None, f"lost contact with the Dask cluster: {exc}"),
                    "cluster",
                )
            self._cleanup()

    def _complete(self) -> None:
        job = self.job
        try:
            for raw in self.queue.get(batch=True):
                self._apply(raw)
        except Exception:  # noqa: BLE001
            pass
        try:
            data = self.future.result(timeout=30)
            final = pickle.loads(data) if isinstance(data, bytes) else data  # noqa: S301
        except Exception as exc:  # noqa: BLE001 - KilledWorker, CancelledError, ...
            final = {"status": "error", "error_kind": "lost", "detail": type(exc).__name__}
        if final.get("rerun") or (final.get("status") == "error" and "error" not in final):
            kind = self._why_lost()
            limit = (self.started_info or {}).get("memory_limit")
            job._finish("error", job._rec.latest, _lost_message(kind, limit), kind)
            self._cleanup(worker_died=True)
            return
        self._apply(pickle.dumps(final))
        with job._lock:
            job._traceback = final.get("traceback")
            if final.get("elapsed") is not None and job._t0 is not None:
                job._t0 = time.monotonic() - final["elapsed"]
        job._finish(
            final["status"], final.get("result"), final.get("error"), final.get("error_kind")
        )
        self._cleanup()

    def _why_lost(self) -> str:
        """``"memory"`` when the nanny restarted this job's worker for memory, else ``"lost"``."""
        info = self.started_info or {}
        for attempt in range(3):  # the nanny's event may arrive just after the task's failure
            try:
                events = self.client.get_events("worker-restart-memory")
            except Exception:  # noqa: BLE001
                return "lost"
            for _, event in events:
                if event.get("worker") == info.get("worker") or event.get("pid") == info.get("pid"):
                    return "memory"
            if attempt < 2:
                time.sleep(0.3)
        return "lost"

    def _abandon(self, restart: bool) -> None:
        """Stop waiting for the worker: the job ends ``cancelled`` with the last snapshot."""
        job = self.job
        try:
            self.client.cancel(self.future, force=True)
        except Exception:  # noqa: BLE001
            pass
        job._finish("cancelled", job._rec.latest, None)
        if restart and self.started_info is not None:
            threading.Thread(
                target=self._recycle, name=f"treelab-recycle-{job.name}", daemon=True
            ).start()
        else:
            self._cleanup()

    def _recycle(self) -> None:
        """Restart the worker still running the abandoned step (unless it ends by itself)."""
        from distributed import Event

        try:
            if Event(self.key + "-ended", client=self.client).wait(timeout=1.0):
                self._cleanup()
                return
            address = self.started_info["worker"]
            logger.info("job %s: restarting worker %s (abandoned step)", self.job.name, address)
            self.client.restart_workers([address], timeout=60, raise_for_error=False)
            died = True
        except Exception:  # noqa: BLE001 - e.g. a worker without nanny: it frees itself later
            logger.warning("job %s: could not restart its worker", self.job.name, exc_info=True)
            died = False
        self._cleanup(worker_died=died)

    def _cleanup(self, worker_died: bool = False) -> None:
        """Release the job's events and queue on the scheduler.

        The queue counts its users (this client and the worker task); a worker that died
        never released its share, so the client releases it too.
        """
        from distributed import Event

        for name in ("-cancel", "-started", "-ended"):
            try:
                Event(self.key + name, client=self.client).clear()
            except Exception:  # noqa: BLE001
                pass
        for _ in range(2 if worker_died else 1):
            try:
                if self.queue is not None:
                    self.queue.close()
            except Exception:  # noqa: BLE001
                pass
        self.future = None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in str(name))[:40]
