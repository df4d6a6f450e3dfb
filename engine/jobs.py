"""Anytime background jobs for live pages (docs/spec.md section 0.6).

A :class:`Job` drives a *step generator* in a worker thread.  The generator does one short
piece of work (well under 100 ms: a few numba calls, one CV fold, ...) between two
``yield`` statements and yields a progress snapshot (any picklable object, usually a dict).
Between two steps the worker checks a cancel event and a wall-clock budget, so

* ``cancel()`` stops the job within one step;
* the budget is honoured within one step;
* the job's ``result`` is the generator's return value when it finishes, or the last
  snapshot it yielded when it is cancelled or runs out of time ("Stop keeps the best
  result": generators put their incumbent in each snapshot).

Long numba kernels that cannot yield often enough receive the :class:`JobContext` and
poll ``ctx.should_stop()`` (or ``ctx.deadline``, a ``time.monotonic()`` value) inside their
inner loops.

Worker threads never call ``st.*``: a Streamlit page keeps the ``Job`` in
``st.session_state`` and polls ``job.snapshot()`` from an ``st.fragment(run_every=...)``.

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

import threading
import time
import traceback
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

#: Job states. ``done``: the generator returned; ``cancelled``: Stop was pressed;
#: ``timeout``: the budget ran out; ``error``: the step function raised.
STATES = ("pending", "running", "done", "cancelled", "timeout", "error")
FINISHED = frozenset({"done", "cancelled", "timeout", "error"})


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
    ``max_history`` entries (the first and the latest are always kept).
    """

    status: str
    elapsed: float
    steps: int
    latest: Any
    history: list[tuple[float, Any]]
    result: Any
    error: str | None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class Job:
    """Run ``fn(ctx, *args, **kwargs)`` (a generator function) in a worker thread.

    Parameters
    ----------
    fn : callable
        Generator function taking a :class:`JobContext` first.  Each ``yield`` ends one
        step and hands out a progress snapshot; ``return value`` sets :attr:`result`.
    *args, **kwargs
        Passed to ``fn`` after the context.
    budget : float or None
        Wall-clock budget in seconds (``None``: no limit).  Must be positive.
    max_history : int
        Maximum number of snapshots kept (older ones are thinned to every other one
        when the limit is hit, so the history spans the whole run).
    name : str
        Label for displays and the worker thread.

    Raises
    ------
    ValueError
        If ``budget`` is not positive or ``max_history < 2``.
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
        **kwargs,
    ):
        if not callable(fn):
            raise TypeError(f"fn must be a generator function, got {type(fn).__name__}")
        if budget is not None and not budget > 0:
            raise ValueError(f"budget must be a positive number of seconds or None, got {budget!r}")
        if max_history < 2:
            raise ValueError(f"max_history must be >= 2, got {max_history!r}")
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.budget = budget
        self.max_history = int(max_history)
        self.name = name
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._status = "pending"
        self._history: list[tuple[float, Any]] = []
        self._stride = 1  # keep every ``_stride``-th snapshot after thinning
        self._steps = 0
        self._latest: Any = None
        self._result: Any = None
        self._error: str | None = None
        self._t0: float | None = None
        self._t1: float | None = None

    # -- control -------------------------------------------------------------------------
    def start(self) -> Job:
        """Start the worker thread; returns ``self``.  Raises RuntimeError if started twice."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError(f"job {self.name!r} was already started")
            self._t0 = time.monotonic()
            self._status = "running"
            self._thread = threading.Thread(
                target=self._run, name=f"treelab-{self.name}", daemon=True
            )
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Ask the job to stop after its current step (the Stop button)."""
        self._cancel.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the job has finished; True if it did within ``timeout`` seconds."""
        return self._finished.wait(timeout)

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
    def elapsed(self) -> float:
        with self._lock:
            return self._elapsed_locked()

    def _elapsed_locked(self) -> float:
        if self._t0 is None:
            return 0.0
        end = self._t1 if self._t1 is not None else time.monotonic()
        return end - self._t0

    def snapshot(self) -> JobSnapshot:
        """A consistent copy of status, history and result, taken under the lock."""
        with self._lock:
            return JobSnapshot(
                status=self._status,
                elapsed=self._elapsed_locked(),
                steps=self._steps,
                latest=self._latest,
                history=list(self._history),
                result=self._result,
                error=self._error,
            )

    # -- worker --------------------------------------------------------------------------
    def _record(self, item: Any) -> None:
        with self._lock:
            self._steps += 1
            self._latest = item
            if self._steps % self._stride == 0:
                self._history.append((self._elapsed_locked(), item))
                if len(self._history) > self.max_history:
                    # thin: keep every other snapshot, always keeping the first
                    self._history = self._history[::2]
                    self._stride *= 2

    def _run(self) -> None:
        deadline = float("inf") if self.budget is None else self._t0 + self.budget
        ctx = JobContext(deadline=deadline, cancel_event=self._cancel)
        status, result, error = "done", None, None
        gen = None
        try:
            gen = self.fn(ctx, *self.args, **self.kwargs)
            if not hasattr(gen, "__next__"):
                raise TypeError(
                    f"{getattr(self.fn, '__name__', self.fn)!r} must be a generator "
                    "function (use 'yield' for each step)"
                )
            while True:
                if self._cancel.is_set():
                    status = "cancelled"
                    break
                if time.monotonic() >= deadline:
                    status = "timeout"
                    break
                try:
                    item = next(gen)
                except StopIteration as stop:
                    result = stop.value
                    break
                self._record(item)
            if status != "done":
                result = self._latest
        except Exception as exc:  # a step function's failure is reported, never raised
            status = "error"
            error = f"{type(exc).__name__}: {exc}"
            self._traceback = traceback.format_exc()
            result = self._latest
        finally:
            if gen is not None and hasattr(gen, "close"):
                try:
                    gen.close()
                except Exception:  # noqa: BLE001 - closing must not mask the outcome
                    pass
            with self._lock:
                self._status = status
                self._result = result
                self._error = error
                self._t1 = time.monotonic()
                if self._latest is not None and (
                    not self._history or self._history[-1][1] is not self._latest
                ):
                    self._history.append((self._t1 - self._t0, self._latest))
                    if len(self._history) > self.max_history:
                        del self._history[-2]  # keep the bound; first and latest stay
            self._finished.set()

    def __repr__(self) -> str:
        return f"Job({self.name!r}, status={self.status!r}, elapsed={self.elapsed:.2f}s)"
