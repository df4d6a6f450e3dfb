"""Interrupting Literati's long kernel calls (``engine/literati/interrupt.py``, the stop
flag of ``solve_depth3_counting``): an interrupted call returns early and reports only
trees that score their value and subset bounds that are lower bounds; the search honours
its time limit inside a kernel call and a Stop from another thread ends a running step;
and nothing changes when no call is interrupted (the other ``test_literati*`` files)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from engine.literati import LiteratiClassifier
from engine.literati import _counting_kernels as counting_kernels
from engine.literati import _kernels as kernels
from engine.literati.interrupt import KernelStop
from tests.test_literati import _machine_stretch, tree_objective
from tests.test_literati_counting_kernels import _check_rows


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return np.ascontiguousarray(X), y.astype(np.int64)


def _depth3_call(X, y, k_max, lam, start, delay=None):
    """One depth-3 kernel call on all rows and every root feature (B_0 = 8), its flag
    raised by a timer ``delay`` seconds after the start (None: never): ``(seconds,
    results, res_bps, floors, bins, off, vals)``."""
    XT = np.ascontiguousarray(X.T)
    n, p = X.shape
    rows = np.arange(n, dtype=np.int64)
    off, vals, _ = kernels.state_candidates(XT, y, kernels.sort_orders(XT, rows), 2, 8)
    bins = counting_kernels.bin_rows(XT, off, vals)
    results = np.full((p, counting_kernels.D3_RESULT), np.inf)
    res_bps = np.zeros((p, 7, k_max), dtype=np.int64)
    floors = np.full((p, counting_kernels.floor_width(off)), -np.inf)
    flag = np.zeros(1, dtype=np.int64)
    timer = None
    if delay is not None:
        timer = threading.Timer(delay, flag.__setitem__, (0, 1))
        timer.start()
    t0 = time.perf_counter()
    counting_kernels.solve_depth3_counting(
        bins, y, rows, off, 2, k_max, lam, lam, float(start), np.arange(p), results, res_bps,
        floors, flag,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    if timer is not None:
        timer.cancel()
    return seconds, results, res_bps, floors, bins, off, vals


@pytest.mark.slow
def test_an_interrupted_depth3_call_returns_early_with_sound_results(cancer):
    """breast_cancer, K_max = 2, no budget: the call without interruption takes seconds;
    the same call with its flag raised after 20 ms returns early (less time, fewer subset
    bounds recorded), every
    tree it reports scores its value and is not below the full call's optimum, and every
    subset bound (floor) it recorded is at most the exact depth-2 optimum of its rows."""
    X, y = cancer
    lam = 0.005 * X.shape[0]
    full_s, full, _, full_floors, *_ = _depth3_call(X, y, 2, lam, np.inf)
    optimum = float(full[:, 0].min())
    assert optimum == pytest.approx(37.07)
    cut_s, results, res_bps, floors, bins, off, vals = _depth3_call(
        X, y, 2, lam, np.inf, delay=0.02
    )
    # less work done (fewer subset bounds recorded) in less time (a loose ratio: the
    # timer thread itself waits for a core on a loaded machine)
    assert np.isfinite(floors).sum() < np.isfinite(full_floors).sum()
    assert cut_s < 0.6 * full_s, (cut_s, full_s)
    _check_rows(results, res_bps, off, vals, X, y, lam, lam, optimum, np.inf)
    checked = 0
    rng = np.random.default_rng(0)
    finite = np.argwhere(np.isfinite(floors))
    for j, mask in finite[rng.permutation(len(finite))[:40]]:
        inside = ((int(mask) >> bins[:, j].astype(np.int64)) & 1).astype(bool)
        rows = np.flatnonzero(inside).astype(np.int64)
        if rows.size == 0:
            assert floors[j, mask] <= 1e-9
            continue
        exact, _ = counting_kernels.solve_depth2_counting(
            bins, y, rows, off, vals, 2, 2, lam, lam, float(rows.size),
            np.full(3, -1, np.int64), np.zeros(3, np.int64), np.zeros((3, 2)),
            np.zeros(1, np.int64),
        )  # fmt: skip
        exact = min(float(exact), float(rows.size - np.bincount(y[rows]).max()))
        assert floors[j, mask] <= exact + 1e-9, (j, mask, floors[j, mask], exact)
        checked += 1
    assert checked > 0


def test_a_raised_flag_stops_the_call_before_any_work(cancer):
    X, y = cancer
    XT = np.ascontiguousarray(X.T)
    n, p = X.shape
    rows = np.arange(n, dtype=np.int64)
    off, vals, _ = kernels.state_candidates(XT, y, kernels.sort_orders(XT, rows), 2, 8)
    bins = counting_kernels.bin_rows(XT, off, vals)
    results = np.full((p, counting_kernels.D3_RESULT), np.inf)
    floors = np.full((p, counting_kernels.floor_width(off)), -np.inf)
    counting_kernels.solve_depth3_counting(
        bins, y, rows, off, 2, 2, 2.845, 2.845, np.inf, np.arange(p), results,
        np.zeros((p, 7, 2), np.int64), floors, np.ones(1, np.int64),
    )  # fmt: skip
    assert np.isinf(results[:, 0]).all() and np.isneginf(floors).all()


@pytest.mark.slow
def test_kernel_stop_raises_the_flag_at_the_deadline_and_on_cancel():
    stop = KernelStop()
    with stop.watch(time.perf_counter() + 0.05):
        assert stop.flag[0] == 0
        time.sleep(0.3 * _machine_stretch(0.05))
        assert stop.flag[0] == 1  # the deadline passed during the call
    assert stop.interrupted and stop.interrupts == 1
    with stop.watch(time.perf_counter() + 60):
        pass
    assert not stop.interrupted and stop.interrupts == 1  # disarmed: never raised
    event = threading.Event()
    stop.cancel_event = event
    with stop.watch(time.perf_counter() + 60):
        event.set()
        time.sleep(0.5 * _machine_stretch(0.05))
        assert stop.flag[0] == 1  # the cancel event is polled
    with stop.watch(time.perf_counter() + 60):
        assert stop.flag[0] == 1  # cancelled: every later call is interrupted at once


@pytest.mark.slow
def test_a_call_waiting_for_another_searchs_kernel_gives_up_at_its_deadline():
    """Two searches in one process (two sessions' jobs on the thread runner) share
    ``PARALLEL_LOCK``: a call whose deadline passes while another search's kernel holds
    the lock is skipped (nothing called, ``skipped``), instead of waiting for that call."""
    from engine._numba import PARALLEL_LOCK

    held, release = threading.Event(), threading.Event()

    def other_search():
        with PARALLEL_LOCK:
            held.set()
            release.wait(60)

    thread = threading.Thread(target=other_search)
    thread.start()
    try:
        assert held.wait(10)
        stop, calls = KernelStop(), []
        started = time.perf_counter()
        with stop.watch(started + 0.2) as guard:
            assert guard.call(lambda: calls.append(1) or "ran") is None
        waited = time.perf_counter() - started
        assert guard.skipped and guard.interrupted and calls == []
        assert waited < 0.2 + 2.0 * _machine_stretch(0.05), waited  # not the other's 60 s
        # Stop (no deadline) ends the wait too
        event = threading.Event()
        stop = KernelStop(event)
        threading.Timer(0.1, event.set).start()
        with stop.watch(float("inf")) as guard:
            assert guard.call(lambda: calls.append(2)) is None
        assert guard.skipped and calls == []
    finally:
        release.set()
        thread.join(10)
    stop = KernelStop()
    with stop.watch(time.perf_counter() + 60) as guard:  # the lock is free: called
        assert guard.call(lambda: "ran") == "ran"
    assert not guard.skipped and not guard.interrupted


def test_a_pickled_kernel_stop_leaves_its_cancel_event_out():
    import pickle

    stop = KernelStop(threading.Event())
    copy = pickle.loads(pickle.dumps(stop))
    assert copy.cancel_event is None and stop.cancel_event is not None
    assert copy.flag.dtype == np.int64 and copy.flag.shape == (1,)


def _root4(kmax, limit):
    return LiteratiClassifier(
        max_depth=4,
        max_breakpoints=kmax,
        candidate_leaves=(8, 4),
        candidate_scope="root",
        time_limit=limit,
    )


@pytest.mark.slow
def test_depth3_root_call_is_cut_at_the_time_limit(cancer):
    """breast_cancer at D = 3, K_max = 2, root scope: the root is one long depth-3 call.
    With a 0.2 s limit the fit ends in a fraction of the proof's time with a tree of its
    objective; without a limit it is proven, 37.07, as before."""
    X, y = cancer
    kw = dict(max_depth=3, max_breakpoints=2, candidate_scope="root")
    LiteratiClassifier(**kw, time_limit=0.05).fit(X[:200], y[:200])  # kernels loaded
    t0 = time.perf_counter()
    full = LiteratiClassifier(**kw, time_limit=120).fit(X, y)
    full_s = time.perf_counter() - t0
    assert full.proven_optimal_ and full.objective_ == pytest.approx(37.07)
    t0 = time.perf_counter()
    cut = LiteratiClassifier(**kw, time_limit=0.2).fit(X, y)
    cut_s = time.perf_counter() - t0
    assert cut_s < 0.5 * full_s, (cut_s, full_s)
    assert not cut.proven_optimal_ and cut.trace_.event.iloc[-1] == "time_limit"
    assert tree_objective(cut, X, y)[0] == pytest.approx(cut.objective_)
    assert cut.objective_ >= full.objective_ - 1e-9


@pytest.mark.slow
def test_time_limit_is_honoured_at_depth_4_with_two_breakpoints(cancer):
    X, y = cancer
    limit = 2.0
    _root4(2, 0.3).fit(X[:200], y[:200])  # load every kernel first
    before = _machine_stretch()
    t0 = time.perf_counter()
    est = _root4(2, limit).fit(X, y)
    wall = time.perf_counter() - t0
    stretch = max(before, _machine_stretch())
    assert wall <= (1.1 * limit + 0.3) * stretch, f"{wall:.2f} s (machine stretch {stretch:.1f})"
    assert not est.proven_optimal_ and est.trace_.event.iloc[-1] == "time_limit"
    assert tree_objective(est, X, y)[0] == pytest.approx(est.objective_)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["interrupt", "cancel_event"])
def test_stop_from_another_thread_ends_a_running_step(cancer, how):
    """A step asked to run 60 s ends soon after ``interrupt()`` (or the job's cancel
    event) from another thread, ``stopped``, with the incumbent kept."""
    X, y = cancer
    _root4(2, 0.3).fit(X[:200], y[:200])
    search = _root4(2, 120).start(X, y)
    event = threading.Event()
    if how == "cancel_event":
        search.stop_on(event)
    ended = []
    worker = threading.Thread(target=lambda: ended.append(search.step(max_seconds=60)))
    worker.start()
    stretch = _machine_stretch(0.05)
    time.sleep(1.0)
    asked = time.perf_counter()
    if how == "interrupt":
        search.interrupt()
    else:
        event.set()
    worker.join(timeout=30)
    waited = time.perf_counter() - asked
    assert ended == [True] and waited < 0.5 * stretch + 0.1, (waited, stretch)
    assert search.stopped and search.trace().event.iloc[-1] == "stopped"
    est = search.finish()
    assert tree_objective(est, X, y)[0] == pytest.approx(est.objective_)


@pytest.mark.slow
def test_the_job_service_ties_the_search_to_the_jobs_stop(cancer):
    """literati_steps hands the job's cancel event to the search (``stop_on``): once Stop
    is pressed, the next step ends ``stopped`` (interrupting a kernel call if one runs)
    and keeps the incumbent, instead of searching on until the job is torn down."""
    from engine.job_context import JobContext
    from engine.literati.service import literati_steps

    X, y = cancer
    ctx = JobContext(deadline=float("inf"))
    steps = literati_steps(ctx, [("main", _root4(2, 120))], X, y)
    first = next(steps)
    assert first["snap"]["event"] != "stopped"
    ctx.cancel_event.set()
    after = next(steps)
    assert after["snap"]["event"] == "stopped"
    model = after["models"]["main"]
    assert tree_objective(model, X, y)[0] == pytest.approx(model.objective_)


def test_a_raised_flag_stops_the_depth2_call_and_keeps_the_incumbent(cancer):
    """The depth-2 counting solver with its flag raised returns the incumbent it was given
    (its arrays untouched); with the flag down it finds the depth-2 optimum (38.38)."""
    X, y = cancer
    XT = np.ascontiguousarray(X.T)
    rows = np.arange(X.shape[0], dtype=np.int64)
    off, vals, _ = kernels.state_candidates(XT, y, kernels.sort_orders(XT, rows), 2, 8)
    bins = counting_kernels.bin_rows(XT, off, vals)
    leaf = float(rows.size - np.bincount(y).max())
    for flag, expected in ((1, leaf), (0, 38.38)):
        feats = np.full(3, -1, np.int64)
        value, _ = counting_kernels.solve_depth2_counting(
            bins, y, rows, off, vals, 2, 2, 2.845, 2.845, leaf, feats,
            np.zeros(3, np.int64), np.zeros((3, 2)), np.full(1, flag, np.int64),
        )  # fmt: skip
        assert value == pytest.approx(expected)
        assert (feats[0] >= 0) == (flag == 0)


def test_depth2_root_past_its_deadline_keeps_a_tree_of_its_value(cancer):
    """A two-level root (one depth-2 counting call) whose time limit has passed when the
    call starts is interrupted at once: not proven, a tree scoring its objective."""
    X, y = cancer
    est = LiteratiClassifier(max_depth=2, candidate_scope="root", time_limit=1e-6).fit(X, y)
    assert not est.proven_optimal_ and est.trace_.event.iloc[-1] == "time_limit"
    assert tree_objective(est, X, y)[0] == pytest.approx(est.objective_)
    full = LiteratiClassifier(max_depth=2, candidate_scope="root", time_limit=60).fit(X, y)
    assert full.proven_optimal_ and full.objective_ == pytest.approx(38.38)
