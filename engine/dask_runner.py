"""The Dask runner of :class:`engine.jobs.Job` (the default runner; docs/spec.md 0.6).

The generator runs in a Dask worker *process* (:mod:`engine.cluster`).  On the worker side,
:func:`_run_on_worker` (the Dask task) drives it with :func:`engine.job_context.drive_steps`
and streams progress back through a Dask queue, at most a few times a second (less often
for big snapshots); it stops between steps when Stop's Dask event is set or the job nears
its worker's memory limit.  On the client side, :class:`DaskRun` submits the task, mirrors
the progress into the :class:`~engine.jobs.Job`, and on Stop waits :data:`CANCEL_GRACE`
for the worker before it abandons the step (the job ends ``cancelled`` with the last
snapshot) and restarts the worker still running it.  A lost worker or cluster ends the job
with status ``error`` and a message saying so.
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
from typing import TYPE_CHECKING, Any

from engine.job_context import JobContext, MemoryStop, ProgressRecorder, drive_steps

if TYPE_CHECKING:
    from engine.jobs import Job

logger = logging.getLogger("engine.jobs")

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
#: Longest wait, in seconds, between two reads of a job's memory by :class:`MemoryGuard`.
MEMORY_CHECK_INTERVAL = 0.1
#: Fraction of the limit above which :class:`MemoryGuard` reads the memory at every step.
MEMORY_WATCH_FRACTION = 0.8


# -- Dask runner: the worker side -------------------------------------------------------------
def _process_rss() -> int:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # noqa: BLE001
        return 0


class MemoryGuard:
    """Stops a job between steps before its worker's nanny restarts the worker for memory.

    :meth:`check` runs after every step.  It reads the process's resident memory at most
    every :data:`MEMORY_CHECK_INTERVAL` seconds (a read costs about 10 us), sooner when the
    growth rate seen between the last two reads would reach the stop line within four
    such waits, and at every step above :data:`MEMORY_WATCH_FRACTION` of the limit: a job
    that grows fast is read often enough to stop at :data:`MEMORY_STOP_FRACTION` (90 %)
    before the nanny's 95 %, as long as one step grows less than the 5 % between them.

    Parameters
    ----------
    limit : int or None
        The worker's memory limit in bytes; ``None`` or 0 turns the guard off.
    read : callable, optional
        Returns the resident memory in bytes (default: this process's, from psutil).
    clock : callable, optional
        Monotonic seconds (default :func:`time.monotonic`).

    Raises
    ------
    MemoryStop
        From :meth:`check`, once the memory is above the stop line.
    """

    def __init__(self, limit: int | None, read=_process_rss, clock=time.monotonic):
        self.limit = limit or 0
        self.read = read
        self.clock = clock
        self.reads = 0
        self._next = 0.0
        self._last: tuple[float, int] | None = None

    def check(self) -> None:
        """Read the memory if it is time to; raise :class:`MemoryStop` above the line."""
        if not self.limit:
            return
        now = self.clock()
        if now < self._next:
            return
        rss = self.read()
        self.reads += 1
        stop_line = MEMORY_STOP_FRACTION * self.limit
        if rss > stop_line:
            raise MemoryStop(
                f"MemoryError: the job used {rss / 2**30:.1f} GiB of its worker's "
                f"{self.limit / 2**30:.1f} GiB limit"
            )
        wait = MEMORY_CHECK_INTERVAL
        if rss > MEMORY_WATCH_FRACTION * self.limit:
            wait = 0.0
        elif self._last is not None:
            then, before = self._last
            rate = (rss - before) / max(now - then, 1e-9)  # bytes per second
            if rate > 0:
                wait = min(wait, (stop_line - rss) / rate / 4)
        self._last = (now, rss)
        self._next = now + wait


class _WorkerState:
    """The recorder of a job running on a worker, with what was already sent to the client."""

    def __init__(self, max_history: int):
        self.lock = threading.Lock()
        self.rec = ProgressRecorder(max_history)
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


def _final_message(state: _WorkerState, status, result, error, kind, tb) -> bytes:
    """The job's last message to the client, pickled: what it has not received yet, the
    outcome (``result`` is the last snapshot unless the job is ``done``) and the elapsed
    time; an ``error`` message when the result cannot be pickled."""
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
    return data


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
    inbox = Queue(key + "-inbox")  # the page's messages (Job.send), plain data
    cancel = Event(key + "-cancel")
    local_cancel = threading.Event()
    local_inbox: deque = deque()
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
            try:
                local_inbox.extend(m for m in inbox.get(batch=True) if isinstance(m, dict))
            except Exception:  # noqa: BLE001 - scheduler busy or gone: retry later
                pass
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
    guard = MemoryGuard(memory_limit)

    def record(item: Any) -> None:
        state.record(item)
        guard.check()

    status, result, error, tb, kind = "error", None, None, None, None
    try:
        fn, args, kwargs = cloudpickle.loads(payload)
        deadline = float("inf") if budget is None else state.t0 + budget
        ctx = JobContext(deadline=deadline, cancel_event=local_cancel, inbox=local_inbox)
        status, result, error, tb = drive_steps(fn, args, kwargs, ctx, record)
        if status == "error":
            kind = "exception"
            if error and error.startswith("MemoryError: the job used"):
                kind, error = "memory", _lost_message("memory", memory_limit)
    except Exception as exc:  # noqa: BLE001 - e.g. the payload cannot be unpickled here
        error, tb, kind = f"{type(exc).__name__}: {exc}", traceback.format_exc(), "exception"
    finally:
        stop_pump.set()
        pump_thread.join(5)
    data = _final_message(state, status, result, error, kind, tb)
    for q in (queue, inbox):
        try:
            q.close()
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


class DaskRun:
    """Client side of a Dask job: submit it, mirror its progress, cancel and recycle."""

    def __init__(self, job: Job):
        self.job = job
        self.key = f"treelab-{_safe(job.name)}-{uuid.uuid4().hex[:12]}"
        self.client = None
        self.future = None
        self.queue = None
        self.inbox = None
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
            self.inbox = Queue(self.key + "-inbox", client=self.client)
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

    def send(self, message: dict) -> None:
        """Put ``message`` (plain data, checked by :meth:`engine.jobs.Job.send`) into the
        job's inbox queue; the worker's pump thread hands it to the generator."""
        try:
            self.inbox.put(message)
        except Exception:  # noqa: BLE001 - the monitor notices a dead cluster itself
            logger.warning("job %s: could not send a message", self.job.name, exc_info=True)

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
            for queue in (self.queue, self.inbox):
                try:
                    if queue is not None:
                        queue.close()
                except Exception:  # noqa: BLE001
                    pass
        self.future = None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in str(name))[:40]
