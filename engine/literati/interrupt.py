"""Interrupting long numba kernel calls of Literati's search (issue 18 point 1b).

A numba kernel cannot be stopped from Python while it runs (it holds no GIL and checks no
signals), so a search whose time limit falls inside a long kernel call used to overrun it
by that call, and Stop waited for it.  The long kernels (the counting solvers of the root
scope, :func:`engine.literati._counting_kernels.solve_depth3_counting` and
:func:`~engine.literati._counting_kernels.solve_depth2_counting`) take a small shared int64
array, the *stop flag*, that they poll between units of work (one root shape or one bin of a
triple histogram at depth 3; one root feature or 4,096 rows of a pair histogram at depth 2)
and return early when it is non-zero.  :class:`KernelStop` owns that flag for
one search: :meth:`KernelStop.watch` arms it around one call, and one watcher thread per
process raises it when the call's deadline passes or the search's cancel event is set;
:meth:`KernelStop.stop` raises it from any thread at once.  What an interrupted call
reports is only what it finished (complete trees of their values and bounds of finished
sub-problems), and the caller concludes no bound from the unfinished part.
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager

import numpy as np

from engine._numba import PARALLEL_LOCK

#: Seconds between two looks at a cancel event while a kernel call is armed with one.
POLL_SECONDS = 0.05


class KernelStop:
    """The stop flag of one search's kernel calls.

    Attributes: ``flag`` int64 ``(1,)``, passed to the kernels (non-zero: return early);
    ``cancel_event`` (a :class:`threading.Event` or None): when it is set during an armed
    call the flag is raised within :data:`POLL_SECONDS`; ``stopped``: :meth:`stop` was
    called (every later call is interrupted at once); ``interrupts``: calls interrupted
    so far; ``skipped``: the last :meth:`call` gave up before calling its kernel.
    """

    def __init__(self, cancel_event: threading.Event | None = None):
        self.flag = np.zeros(1, dtype=np.int64)
        self.cancel_event = cancel_event
        self.stopped = False
        self.interrupts = 0
        self.skipped = False

    def __getstate__(self) -> dict:
        """Pickled without the cancel event (a job's, tied again by ``stop_on``)."""
        return {**self.__dict__, "cancel_event": None}

    def stop(self) -> None:
        """Interrupt the running call (if any) and every later one; thread-safe."""
        self.stopped = True
        self.flag[0] = 1

    def cancelled(self) -> bool:
        """True when :meth:`stop` was called or the cancel event is set."""
        return self.stopped or (self.cancel_event is not None and self.cancel_event.is_set())

    @contextmanager
    def watch(self, deadline: float):
        """Arm the flag for one kernel call made inside the ``with`` block: it starts at 0
        (1 when the deadline, a ``time.perf_counter()`` value, has already passed or the
        search is cancelled) and is raised when ``deadline`` passes or the search is
        cancelled during the call.  Afterwards :attr:`interrupted` tells whether the call
        may have been cut short."""
        if self.cancelled() or time.perf_counter() >= deadline:
            self.flag[0] = 1
        else:
            self.flag[0] = 0
            if self.stopped:  # stop() ran between the check and the reset
                self.flag[0] = 1
        if self.flag[0] != 0:
            yield self
            self.interrupts += 1
            return
        if deadline == math.inf and self.cancel_event is None:
            yield self  # only stop() can raise it (at once, from its own thread)
            if self.flag[0] != 0:
                self.interrupts += 1
            return
        _WATCHER.arm(self, deadline)
        try:
            yield self
        finally:
            _WATCHER.disarm(self)
        if self.flag[0] != 0:
            self.interrupts += 1

    def call(self, kernel, *args):
        """Call the ``parallel=True`` kernel ``kernel(*args)`` under
        :data:`engine._numba.PARALLEL_LOCK` (as :func:`engine._numba.call_parallel`) inside
        :meth:`watch`.  While another search (another session's job in the same process)
        holds the lock for a long call, wait for it in steps of :data:`POLL_SECONDS` and
        give up as soon as this call's flag is raised (its deadline or Stop): then
        :attr:`skipped` is True, the kernel was not called, its output arrays are untouched
        and None is returned.  Otherwise returns the kernel's return value."""
        self.skipped = False
        while not PARALLEL_LOCK.acquire(timeout=POLL_SECONDS):
            if self.flag[0] != 0:
                self.skipped = True
                return None
        try:
            if self.flag[0] != 0:
                self.skipped = True
                return None
            return kernel(*args)
        finally:
            PARALLEL_LOCK.release()

    @property
    def interrupted(self) -> bool:
        """True when the flag was raised for the last call (its result is partial)."""
        return bool(self.flag[0] != 0)


class _Watcher:
    """One daemon thread per process that raises the flags of armed calls at their
    deadlines (and polls their cancel events); idle while nothing is armed."""

    def __init__(self):
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[KernelStop, float]] = {}
        self._thread: threading.Thread | None = None

    def arm(self, stop: KernelStop, deadline: float) -> None:
        with self._cond:
            self._armed[id(stop)] = (stop, float(deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="literati-kernel-watch", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def disarm(self, stop: KernelStop) -> None:
        with self._cond:  # after this the watcher no longer touches the flag
            self._armed.pop(id(stop), None)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.perf_counter()
                wait = None
                for key, (stop, deadline) in list(self._armed.items()):
                    if now >= deadline or stop.cancelled():
                        stop.flag[0] = 1
                        del self._armed[key]
                        continue
                    w = deadline - now
                    if stop.cancel_event is not None:
                        w = min(w, POLL_SECONDS)
                    if w == math.inf:
                        continue  # only stop() raises it
                    wait = w if wait is None else min(wait, w)
                self._cond.wait(wait)


_WATCHER = _Watcher()
