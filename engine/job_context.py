"""What runs a job's step generator, in whichever process runs it (:mod:`engine.jobs`).

:class:`JobContext` is what the generator reads (the Stop flag and the deadline),
:func:`drive_steps` runs it step by step until it returns, is stopped, runs out of time or
raises, and :class:`ProgressRecorder` keeps its latest snapshot and a downsampled history.
Both runners use them: the thread runner in :mod:`engine.jobs`, the Dask runner on a
worker (:mod:`engine.dask_runner`).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class JobContext:
    """What a step generator may read while it runs.

    Attributes
    ----------
    deadline : float
        ``time.monotonic()`` value after which the job must stop (``inf`` without budget).
    cancel_event : threading.Event
        Set when the user presses Stop.
    inbox : collections.deque
        Messages the page sent to the running job (:meth:`engine.jobs.Job.send`), oldest
        first; read them with :meth:`messages`.
    """

    deadline: float
    cancel_event: threading.Event = field(default_factory=threading.Event)
    inbox: deque = field(default_factory=deque)

    def messages(self) -> list[dict]:
        """The messages sent to the job since the last call, oldest first (each a dict of
        plain values, as :meth:`engine.jobs.Job.send` checked it); empty when none."""
        out = []
        while True:
            try:
                out.append(self.inbox.popleft())
            except IndexError:
                return out

    def should_stop(self) -> bool:
        """True when the job was cancelled or its budget is spent."""
        return self.cancel_event.is_set() or time.monotonic() >= self.deadline

    def time_left(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self.deadline - time.monotonic())


class ProgressRecorder:
    """The latest snapshot and downsampled history of one run (held by the process running it).

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


def drive_steps(fn, args, kwargs, ctx: JobContext, record: Callable[[Any], None]):
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
    except MemoryStop as exc:
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


class MemoryStop(Exception):
    """Raised between steps on a worker when the job nears the worker's memory limit
    (:func:`drive_steps` turns it into an ``error`` status)."""


#: Seconds of forest fitting a step aims at (:func:`fit_in_steps`): Stop is seen between
#: two steps, so a Stop during a forest's fit waits about this long.
FOREST_STEP_SECONDS = 0.5


def fit_in_steps(estimator, X, y, *, step_seconds: float | None = None, **fit_params):
    """Generator: fit ``estimator`` on ``X``, ``y`` in steps a job can stop between.

    A scikit-learn forest (``RandomForest*``, ``ExtraTrees*``) is grown a chunk of trees
    at a time with ``warm_start``: one tree first, then as many trees as fit in about
    ``step_seconds`` (default :data:`FOREST_STEP_SECONDS`) at the pace so far.  scikit-learn draws each new tree's seed as if
    the earlier ones had been grown in the same call, so the forest is the one a single
    ``fit`` with the same integer ``random_state`` grows (tested tree by tree in
    tests/test_jobs.py); an out-of-bag score is computed once, with the last chunk.
    The estimator's ``warm_start``, ``oob_score`` and ``n_estimators`` are as given
    afterwards, and a forest fitted before starts afresh.  Yields ``(trees grown,
    n_estimators)`` after each chunk but the last; returns the fitted estimator.  Any
    other estimator is fitted in one step (nothing is yielded).
    """
    from sklearn.ensemble._forest import BaseForest

    if not isinstance(estimator, BaseForest) or int(estimator.n_estimators) <= 1:
        return estimator.fit(X, y, **fit_params)
    if step_seconds is None:
        step_seconds = FOREST_STEP_SECONDS
    total = int(estimator.n_estimators)
    warm, oob = estimator.warm_start, estimator.oob_score
    grown, chunk, t0 = 0, 1, time.perf_counter()
    try:
        while grown < total:
            upto = min(total, grown + chunk)
            estimator.set_params(
                n_estimators=upto,
                warm_start=grown > 0,  # the first chunk starts a new forest
                oob_score=oob if upto == total else False,
            )
            estimator.fit(X, y, **fit_params)
            grown = upto
            if grown < total:
                per_tree = (time.perf_counter() - t0) / grown
                chunk = max(1, int(step_seconds / max(per_tree, 1e-9)))
                yield grown, total
    finally:
        estimator.set_params(n_estimators=total, warm_start=warm, oob_score=oob)
    return estimator


def relay(steps, progress: Callable[[Any], Any]):
    """Generator: run the generator ``steps`` inside a job's step generator, yielding
    ``progress(item)`` (the job's snapshot) for each ``item`` it yields (e.g. the
    ``(grown, total)`` trees of :func:`fit_in_steps`); returns its return value, so a
    caller writes ``value = yield from relay(steps, progress)``."""
    while True:
        try:
            item = next(steps)
        except StopIteration as stop:
            return stop.value
        yield progress(item)


def run_to_end(steps):
    """Run a generator (e.g. :func:`fit_in_steps`) to its end, where no job waits to
    stop it (a Dask task, a notebook); returns its return value."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value
