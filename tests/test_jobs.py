"""Background jobs (engine/jobs.py): budget, cancel, concurrency, result semantics."""

import threading
import time

import numpy as np
import pytest

from engine.jobs import Job


def ticker(ctx, n_steps, step_s=0.02):
    """Counts steps; each step sleeps ``step_s``; returns the count."""
    for i in range(n_steps):
        time.sleep(step_s)
        yield {"i": i, "best": i}
    return {"total": n_steps}


def test_runs_to_completion_and_returns_value():
    job = Job(ticker, 10, budget=10).start()
    assert job.join(5)
    snap = job.snapshot()
    assert snap.status == "done"
    assert snap.result == {"total": 10}
    assert snap.steps == 10
    assert [h[1]["i"] for h in snap.history] == list(range(10))
    times = [h[0] for h in snap.history]
    assert times == sorted(times)


def test_budget_honoured_within_half_a_second():
    t0 = time.monotonic()
    job = Job(ticker, 10_000, budget=0.6).start()
    assert job.join(5)
    wall = time.monotonic() - t0
    assert job.status == "timeout"
    assert 0.6 <= job.elapsed < 0.6 + 0.5
    assert wall < 0.6 + 0.5
    # Stop keeps the best result: the last snapshot yielded
    assert job.result == job.snapshot().latest
    assert job.result["i"] > 5


def test_cancel_stops_within_half_a_second():
    job = Job(ticker, 10_000, budget=None).start()
    time.sleep(0.3)
    t_cancel = time.monotonic()
    job.cancel()
    assert job.join(2)
    assert time.monotonic() - t_cancel < 0.5
    assert job.status == "cancelled"
    assert job.result["i"] >= 1


def test_two_jobs_at_once_both_finish():
    a = Job(ticker, 20, budget=10, name="a").start()
    b = Job(ticker, 30, budget=10, name="b").start()
    assert a.join(5) and b.join(5)
    assert (a.status, b.status) == ("done", "done")
    assert (a.result["total"], b.result["total"]) == (20, 30)


def test_two_numba_jobs_at_once_do_not_block_each_other():
    """nogil kernels let two workers progress together (no GIL-held stall)."""
    from engine._numba import njit

    @njit
    def spin(n):
        s = 0.0
        for i in range(n):
            s += np.sqrt(i + 1.0)
        return s

    spin(10)

    def work(ctx):
        for _ in range(5):
            yield spin(2_000_000)
        return True

    jobs = [Job(work, budget=30, name=f"n{i}").start() for i in range(2)]
    assert all(j.join(30) for j in jobs)
    assert [j.status for j in jobs] == ["done", "done"]


def test_error_in_step_is_reported_not_raised():
    def bad(ctx):
        yield {"i": 0}
        raise ZeroDivisionError("boom")

    job = Job(bad, budget=5).start()
    assert job.join(5)
    assert job.status == "error"
    assert "ZeroDivisionError: boom" in job.error
    assert job.result == {"i": 0}


def test_history_is_downsampled_but_spans_the_run():
    def fast(ctx):
        yield from range(5000)
        return "ok"

    job = Job(fast, budget=10, max_history=100).start()
    assert job.join(10)
    hist = job.snapshot().history
    assert len(hist) <= 100
    assert hist[0][1] == 0 and hist[-1][1] == 4999
    values = [h[1] for h in hist]
    assert values == sorted(values)


def test_context_should_stop_inside_a_long_step():
    """A step that polls ctx.should_stop() ends promptly on cancel."""

    def long_step(ctx):
        while not ctx.should_stop():
            time.sleep(0.005)
        yield "stopped-inside"

    job = Job(long_step, budget=None).start()
    time.sleep(0.1)
    job.cancel()
    assert job.join(1)
    assert job.status == "cancelled"


@pytest.mark.parametrize(
    "kwargs, exc",
    [({"budget": 0}, ValueError), ({"budget": -1}, ValueError), ({"max_history": 1}, ValueError)],
)
def test_bad_parameters(kwargs, exc):
    with pytest.raises(exc):
        Job(ticker, 1, **kwargs)


def test_not_a_generator_is_an_error_status():
    job = Job(lambda ctx: 42, budget=1).start()
    assert job.join(2)
    assert job.status == "error" and "generator" in job.error


def test_start_twice_raises():
    job = Job(ticker, 1).start()
    with pytest.raises(RuntimeError):
        job.start()
    job.join(2)


@pytest.mark.slow
def test_snapshot_reads_do_not_race_with_worker():
    job = Job(ticker, 200, 0.001, budget=10).start()
    seen = []

    def reader():
        while not job.finished:
            s = job.snapshot()
            seen.append(len(s.history))

    t = threading.Thread(target=reader)
    t.start()
    job.join(10)
    t.join(5)
    assert seen == sorted(seen)


@pytest.mark.parametrize("max_history", [2, 3, 4, 10])
def test_history_never_exceeds_max_history(max_history):
    """Whatever the number of steps, the history keeps the bound, the first and the latest."""
    for n_steps in range(1, 60):

        def steps(ctx, n=n_steps):
            yield from range(n)
            return "ok"

        job = Job(steps, budget=10, max_history=max_history).start()
        assert job.join(10)
        hist = job.snapshot().history
        assert len(hist) <= max_history, (n_steps, len(hist))
        assert hist[0][1] == 0 and hist[-1][1] == n_steps - 1
