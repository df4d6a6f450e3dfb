"""Background jobs (engine/jobs.py): budget, cancel, concurrency, result semantics, under
both runners (threads of this process, and Dask worker processes), plus the faults only
the Dask runner has: Stop in the middle of a long step, a killed worker, a memory limit."""

import os
import signal
import threading
import time

import numpy as np
import pytest

from engine.jobs import Job, JobSlots


def ticker(ctx, n_steps, step_s=0.02):
    """Counts steps; each step sleeps ``step_s``; returns the count."""
    for i in range(n_steps):
        time.sleep(step_s)
        yield {"i": i, "best": i}
    return {"total": n_steps}


def bad(ctx):
    yield {"i": 0}
    raise ZeroDivisionError("boom")


def fast(ctx, n=5000):
    yield from range(n)
    return "ok"


def long_step(ctx):
    """A step that polls ctx.should_stop() ends promptly on cancel."""
    while not ctx.should_stop():
        time.sleep(0.005)
    yield "stopped-inside"


def overrunning_fit(ctx, seconds=5.0):
    """One quick step, then a step that cannot be interrupted (like a scikit-learn fit)."""
    yield {"fold": 0, "pid": os.getpid()}
    time.sleep(seconds)
    yield {"fold": 1}
    return "finished"


def hog_between_steps(ctx, chunk_mib=40, steps=200, pause=0.02):
    """Grows its memory step by step (the worker's guard stops it between steps)."""
    kept = []
    for i in range(steps):
        kept.append(np.ones(chunk_mib * 2**17))  # float64: chunk_mib MiB, touched
        time.sleep(pause)
        yield {"step": i, "mib": (i + 1) * chunk_mib}
    return len(kept)


def hog_in_one_step(ctx, chunk_mib=40, steps=200):
    """Yields once, then grows its memory inside one step until the nanny stops the worker."""
    yield {"step": 0}
    kept = []
    for _ in range(steps):
        kept.append(np.ones(chunk_mib * 2**17))
        time.sleep(0.03)
    yield {"step": 1, "n": len(kept)}


def echo(ctx, wanted=3):
    """Yields every message it was sent; returns them once ``wanted`` have arrived."""
    got = []
    while len(got) < wanted:
        got += ctx.messages()
        time.sleep(0.02)
        yield {"got": list(got)}
    return got


def not_a_generator(ctx):
    return 42


@pytest.fixture(params=["threads", pytest.param("dask", marks=pytest.mark.slow)])
def runner(request):
    """Each API test runs under both runners (Dask: the session's embedded cluster, whose
    start takes half a minute, so the Dask runs are left out of the quick subset)."""
    if request.param == "dask":
        client = request.getfixturevalue("dask_client")
        # the first job on each worker imports this module there; keep that out of timings
        # (once per worker process: a worker restarted by its nanny imports it again)
        pids = client.run(os.getpid)  # worker address -> process id
        cold = {address for address, pid in pids.items() if pid not in _WARMED_WORKERS}
        for _ in range(10):  # rounds of four jobs until each cold worker has run one
            if not cold:
                break
            for job in [Job(ticker, 1, 0.0, runner="dask").start() for _ in range(4)]:
                job.join(60)
                cold.discard(job.worker)
        _WARMED_WORKERS.update(pids.values())
    return request.param


#: Process ids of the Dask workers that have run this module's first jobs.
_WARMED_WORKERS: set[int] = set()


def test_runs_to_completion_and_returns_value(runner):
    job = Job(ticker, 10, budget=10, runner=runner).start()
    assert job.join(10)
    snap = job.snapshot()
    assert snap.status == "done"
    assert snap.result == {"total": 10}
    assert snap.steps == 10
    assert [h[1]["i"] for h in snap.history] == list(range(10))
    times = [h[0] for h in snap.history]
    assert times == sorted(times)
    assert snap.waiting is None and snap.error_kind is None


def test_budget_honoured_within_half_a_second(runner):
    t0 = time.monotonic()
    job = Job(ticker, 10_000, budget=0.6, runner=runner).start()
    assert job.join(5)
    wall = time.monotonic() - t0
    assert job.status == "timeout"
    assert 0.6 <= job.elapsed < 0.6 + 0.5
    assert wall < 0.6 + 0.5 + (0.5 if runner == "dask" else 0)  # + scheduling, one message
    # Stop keeps the best result: the last snapshot yielded
    assert job.result == job.snapshot().latest
    assert job.result["i"] > 5


def test_cancel_stops_within_half_a_second(runner):
    job = Job(ticker, 10_000, budget=None, runner=runner).start()
    time.sleep(0.5)
    t_cancel = time.monotonic()
    job.cancel()
    assert job.join(2)
    assert time.monotonic() - t_cancel < 0.5
    assert job.status == "cancelled"
    assert job.result["i"] >= 1


def test_two_jobs_at_once_both_finish(runner):
    a = Job(ticker, 20, budget=10, name="a", runner=runner).start()
    b = Job(ticker, 30, budget=10, name="b", runner=runner).start()
    assert a.join(10) and b.join(10)
    assert (a.status, b.status) == ("done", "done")
    assert (a.result["total"], b.result["total"]) == (20, 30)


def test_two_numba_jobs_at_once_do_not_block_each_other():
    """nogil kernels let two worker threads progress together (no GIL-held stall)."""
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

    jobs = [Job(work, budget=30, name=f"n{i}", runner="threads").start() for i in range(2)]
    assert all(j.join(30) for j in jobs)
    assert [j.status for j in jobs] == ["done", "done"]


def test_error_in_step_is_reported_not_raised(runner):
    job = Job(bad, budget=5, runner=runner).start()
    assert job.join(10)
    assert job.status == "error"
    assert job.error_kind == "exception"
    assert "ZeroDivisionError: boom" in job.error
    assert "ZeroDivisionError" in job.traceback
    assert job.result == {"i": 0}


def test_history_is_downsampled_but_spans_the_run(runner):
    job = Job(fast, budget=10, max_history=100, runner=runner).start()
    assert job.join(10)
    hist = job.snapshot().history
    assert len(hist) <= 100
    assert hist[0][1] == 0 and hist[-1][1] == 4999
    values = [h[1] for h in hist]
    assert values == sorted(values)
    assert job.snapshot().steps == 5000


def test_context_should_stop_inside_a_long_step(runner):
    job = Job(long_step, budget=None, runner=runner).start()
    time.sleep(0.3)
    job.cancel()
    assert job.join(1)
    assert job.status == "cancelled"


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"budget": 0}, ValueError),
        ({"budget": -1}, ValueError),
        ({"max_history": 1}, ValueError),
        ({"runner": "processes"}, ValueError),
    ],
)
def test_bad_parameters(kwargs, exc):
    with pytest.raises(exc):
        Job(ticker, 1, **kwargs)


def test_not_a_generator_is_an_error_status(runner):
    job = Job(not_a_generator, budget=1, runner=runner).start()
    assert job.join(10)
    assert job.status == "error" and "generator" in job.error


def test_start_twice_raises(runner):
    job = Job(ticker, 1, runner=runner).start()
    with pytest.raises(RuntimeError):
        job.start()
    job.join(10)


@pytest.mark.slow
def test_snapshot_reads_do_not_race_with_worker(runner):
    job = Job(ticker, 200, 0.001, budget=10, runner=runner).start()
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
    assert len(job.snapshot().history) == 200


@pytest.mark.parametrize("max_history", [2, 3, 4, 10])
def test_history_never_exceeds_max_history(max_history):
    """Whatever the number of steps, the history keeps the bound, the first and the latest."""
    for n_steps in range(1, 60):
        job = Job(fast, n_steps, budget=10, max_history=max_history, runner="threads").start()
        assert job.join(10)
        hist = job.snapshot().history
        assert len(hist) <= max_history, (n_steps, len(hist))
        assert hist[0][1] == 0 and hist[-1][1] == n_steps - 1


@pytest.mark.parametrize("max_history", [2, 3, 10])
def test_dask_history_equals_the_thread_runners(dask_client, max_history):
    """The history the client rebuilds from the worker's messages is the thread runner's."""
    for n_steps in (1, 2, 3, 7, 59, 600):
        jobs = {
            r: Job(fast, n_steps, budget=10, max_history=max_history, runner=r).start()
            for r in ("threads", "dask")
        }
        assert all(j.join(20) for j in jobs.values())
        hist = {r: [item for _, item in j.snapshot().history] for r, j in jobs.items()}
        assert hist["dask"] == hist["threads"], n_steps


# -- per-session slots -----------------------------------------------------------------------
def test_slots_queue_the_third_job_and_start_it_when_one_finishes(runner):
    slots = JobSlots(max_running=2)
    a = slots.start(Job(ticker, 15, 0.02, runner=runner))
    b = slots.start(Job(ticker, 10_000, 0.02, budget=None, runner=runner))
    c = slots.start(Job(ticker, 3, 0.0, runner=runner))
    d = slots.start(Job(ticker, 3, 0.0, runner=runner))
    assert c.status == "queued" and c.queue_position == 1
    assert d.queue_position == 2 and d.snapshot().waiting == "session"
    assert d.snapshot().queue_position == 2
    d.cancel()  # leaves the line at once
    assert d.finished and d.status == "cancelled" and d.result is None
    assert a.join(10) and a.status == "done"
    assert c.join(10) and c.status == "done"  # started when a finished
    assert c.queue_position is None
    assert slots.running == 1 and slots.queued == 0
    b.cancel()
    assert b.join(5)
    assert slots.running == 0


def test_running_jobs_counts_the_started_unfinished_jobs_of_this_process():
    from engine.jobs import _RUNNING, running_jobs

    slots = JobSlots(max_running=1)
    a = slots.start(Job(ticker, 10_000, 0.02, budget=None, runner="threads"))
    b = slots.start(Job(ticker, 3, 0.0, runner="threads"))  # waits in line: not running
    c = Job(ticker, 10_000, 0.02, budget=None, runner="threads").start()
    assert b.status == "queued"
    # other tests' jobs may still be ending: check this test's own jobs in the registry
    assert a in _RUNNING and c in _RUNNING and b not in _RUNNING
    assert running_jobs() >= 2
    c.cancel()
    assert c.join(5)
    assert c not in _RUNNING and a in _RUNNING
    a.cancel()  # b starts, runs its 3 steps and ends
    assert a.join(5) and b.join(10)
    assert not {a, b, c} & set(_RUNNING)


def test_live_views_poll_less_often_when_the_server_runs_many_jobs():
    from engine.jobs import poll_interval

    assert [poll_interval(n) for n in (0, 1, 4)] == [0.5, 0.5, 0.5]
    assert poll_interval(8) == 1.0 and poll_interval(20) == 2.5
    assert poll_interval(1000) == 3.0
    # 20 sessions each watching its job: about 8 polls a second, not 40
    assert 20 / poll_interval(20) == 8.0


def test_slots_reject_zero():
    with pytest.raises(ValueError):
        JobSlots(0)


# -- Dask faults -------------------------------------------------------------------------
def _worker_pids(client):
    """Pids of the workers that answer now (one being replaced may drop its connection
    while asked: it is left out rather than failing the poll)."""
    return set(client.run(os.getpid, on_error="ignore").values())


def test_stop_in_the_middle_of_a_long_step_returns_within_a_second(dask_client):
    """Stop during a 5 s step: join returns in about 1 s, cancelled, with the last snapshot;
    the worker that was running the abandoned step is replaced by a fresh process."""
    pids_before = _worker_pids(dask_client)
    job = Job(overrunning_fit, 5.0, budget=None, runner="dask").start()
    deadline = time.monotonic() + 30
    while job.snapshot().latest is None:
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    time.sleep(0.3)  # now inside the long step
    t0 = time.monotonic()
    job.cancel()
    assert job.join(3)
    stop_latency = time.monotonic() - t0
    assert stop_latency < 1.2, stop_latency
    assert job.status == "cancelled"
    busy_pid = job.result["pid"]
    assert job.result["fold"] == 0  # the last snapshot that arrived
    assert busy_pid in pids_before
    # the abandoned worker is restarted (its replacement gets a new pid); the other stays
    deadline = time.monotonic() + 60
    while True:
        pids = _worker_pids(dask_client)
        if busy_pid not in pids and len(pids) == len(pids_before):
            break
        assert time.monotonic() < deadline, (pids_before, pids)
        time.sleep(0.5)
    assert pids - {busy_pid} >= pids_before - {busy_pid}
    # and the cluster keeps working
    after = Job(ticker, 3, 0.0, runner="dask").start()
    assert after.join(60) and after.status == "done"


def test_a_killed_worker_ends_the_job_with_a_clear_message(dask_client):
    job = Job(ticker, 10_000, 0.02, budget=None, runner="dask").start()
    deadline = time.monotonic() + 30
    while job.snapshot().steps < 5:
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    pid = dask_client.run(os.getpid, workers=[job.worker])[job.worker]
    os.kill(pid, signal.SIGKILL)
    assert job.join(30)
    assert job.status == "error"
    assert job.error_kind == "lost"
    assert "worker process running this job stopped" in job.error
    assert job.result["i"] >= 4  # what finished is kept
    # a new worker takes its place and other jobs run
    other = Job(ticker, 3, 0.0, runner="dask").start()
    assert other.join(60) and other.status == "done"


def test_memory_guard_stops_a_job_between_steps(small_memory_cluster):
    with small_memory_cluster.as_current():
        pids = _worker_pids(small_memory_cluster)
        # The guard reads the worker's memory at most every 0.1 s; the nanny restarts the
        # worker at 95 % of the limit, 35 MiB above the guard's 90 %.  40 MiB steps every
        # 0.02 s grew 200 MiB between two reads and sometimes reached the nanny first (the
        # worker restarted: its pid list read empty).  4 MiB steps grow at most about 24 MiB
        # between reads, within that margin, so a restart here is the guard's fault.
        job = Job(hog_between_steps, 4, 300, budget=60, runner="dask").start()
        assert job.join(60)
    assert job.status == "error" and job.error_kind == "memory", job.error
    assert "needed more than 700.0 MiB" in job.error
    assert job.result["mib"] >= 40  # the steps that finished
    assert _worker_pids(small_memory_cluster) == pids  # stopped in time: the worker lives


def test_memory_guard_stops_a_fast_growing_job_before_the_nanny(small_memory_cluster):
    """20 MiB steps with no pause (about 2 GB/s): with a read every 0.1 s the job grew about
    200 MiB between reads, past the nanny's 95 %, and the worker was restarted; the guard
    now reads at every step near the limit and stops the job with its worker alive."""
    with small_memory_cluster.as_current():
        pids = _worker_pids(small_memory_cluster)
        job = Job(hog_between_steps, 20, 300, 0.0, budget=60, runner="dask").start()
        assert job.join(60)
    assert job.status == "error" and job.error_kind == "memory", job.error
    assert _worker_pids(small_memory_cluster) == pids  # stopped in time: the worker lives


def _simulate_guard(limit, start, step_bytes, step_seconds, steps=10_000):
    """Run a MemoryGuard over a job that grows ``step_bytes`` every ``step_seconds``;
    returns (memory when stopped or None, reads)."""
    from engine.dask_runner import MemoryGuard
    from engine.job_context import MemoryStop

    clock = [0.0]
    memory = [start]
    guard = MemoryGuard(limit, read=lambda: memory[0], clock=lambda: clock[0])
    for _ in range(steps):
        memory[0] += step_bytes
        clock[0] += step_seconds
        try:
            guard.check()
        except MemoryStop:
            return memory[0], guard.reads
    return None, guard.reads


@pytest.mark.parametrize("step_mib", [1, 5, 20, 30])
def test_memory_guard_stops_within_one_step_of_the_line(step_mib):
    """Whatever the growth rate, the guard stops the job at the first step past 90 % of the
    limit, so below the nanny's 95 % when a step grows less than 5 % of the limit (35 MiB
    of 700).  A read every 0.1 s stopped a 20 MiB-per-10-ms job up to 200 MiB past 90 %."""
    limit = 700 * 2**20
    stopped, reads = _simulate_guard(limit, 100 * 2**20, step_mib * 2**20, 0.01)
    assert stopped is not None
    assert 0.9 * limit < stopped <= 0.9 * limit + step_mib * 2**20
    assert stopped < 0.95 * limit


def test_memory_guard_reads_rarely_while_far_from_the_limit():
    """Slow growth far below the line: about one read per 0.1 s, not one per step."""
    limit = 700 * 2**20
    stopped, reads = _simulate_guard(limit, 100 * 2**20, 1024, 0.001, steps=10_000)
    assert stopped is None  # 10 MiB in 10 s: nowhere near the line
    assert 95 <= reads <= 101  # 10 s of steps of 1 ms, a read every 0.1 s


def test_memory_limit_inside_one_step_kills_only_that_worker(small_memory_cluster):
    with small_memory_cluster.as_current():
        job = Job(hog_in_one_step, budget=60, runner="dask").start()
        assert job.join(60)
        assert job.status == "error" and job.error_kind == "memory", job.error
        assert "needed more than 700.0 MiB" in job.error
        assert job.result == {"step": 0}
        # the nanny restarted the worker; the next job runs (and was not re-run itself)
        after = Job(ticker, 3, 0.0, runner="dask").start()
        assert after.join(60) and after.status == "done", after.error


def test_no_cluster_is_an_error_status_not_an_exception(monkeypatch):
    from engine import cluster

    monkeypatch.setattr(cluster, "_EMBEDDED", {})
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 2.0)
    monkeypatch.setenv("TREELAB_DASK_SCHEDULER", "tcp://127.0.0.1:9")  # nothing listens
    job = Job(ticker, 3, runner="dask").start()
    assert job.join(30)
    assert job.status == "error" and job.error_kind == "cluster"
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in job.error


@pytest.mark.slow
def test_messages_reach_the_running_generator_in_order(runner):
    """Job.send: a deque with threads, a Dask queue read by the worker's pump with Dask;
    plain values only, in the order sent."""
    job = Job(echo, 3, budget=30, runner=runner).start()
    sent = [{"type": "a", "n": 1}, {"type": "b", "x": 0.5, "flag": True}, {"path": None}]
    for message in sent:
        job.send(message)
    assert job.join(30), job.status
    assert job.status == "done" and job.result == sent
    with pytest.raises(TypeError, match="dict of str keys"):
        job.send(["not", "a", "dict"])
    job.send({"late": 1})  # a finished job drops it


# -- scikit-learn forests a chunk of trees per step (Stop between chunks) -------------------


def _same_trees(a, b):
    """Every tree of two fitted forests: the same features, thresholds and leaf values."""
    assert len(a.estimators_) == len(b.estimators_)
    for one, other in zip(a.estimators_, b.estimators_, strict=True):
        np.testing.assert_array_equal(one.tree_.feature, other.tree_.feature)
        np.testing.assert_array_equal(one.tree_.threshold, other.tree_.threshold)
        np.testing.assert_array_equal(one.tree_.value, other.tree_.value)


@pytest.mark.parametrize("kind", ["RandomForestClassifier", "ExtraTreesRegressor", "oob"])
def test_a_forest_grown_in_chunks_is_the_forest_of_one_fit(kind):
    """fit_in_steps grows the forest a chunk at a time with warm_start; scikit-learn seeds
    each new tree as in one call, so every tree, the predictions and the out-of-bag score
    equal a single fit's with the same random_state; the parameters are restored."""
    from sklearn import ensemble
    from sklearn.datasets import make_classification, make_regression

    from engine.job_context import fit_in_steps, run_to_end

    if kind == "RandomForestClassifier":
        X, y = make_classification(300, 6, random_state=0)
        make = lambda: ensemble.RandomForestClassifier(n_estimators=12, random_state=7)  # noqa: E731
    elif kind == "ExtraTreesRegressor":
        X, y = make_regression(300, 6, random_state=0)
        make = lambda: ensemble.ExtraTreesRegressor(n_estimators=12, random_state=7)  # noqa: E731
    else:
        X, y = make_regression(300, 6, random_state=1)
        make = lambda: ensemble.RandomForestRegressor(  # noqa: E731
            n_estimators=12, oob_score=True, max_features=0.5, random_state=7
        )
    once = make().fit(X, y)
    chunked = make()
    steps = fit_in_steps(chunked, X, y, step_seconds=0.0)  # one tree per step
    yielded = []
    while True:
        try:
            yielded.append(next(steps))
        except StopIteration as stop:
            assert stop.value is chunked
            break
    assert yielded == [(k, 12) for k in range(1, 12)]  # between chunks, not after the last
    _same_trees(chunked, once)
    out = chunked.predict(X[:50])
    np.testing.assert_array_equal(out, once.predict(X[:50]))
    if kind == "oob":
        assert chunked.oob_score_ == once.oob_score_
        np.testing.assert_array_equal(chunked.oob_prediction_, once.oob_prediction_)
    params = chunked.get_params()
    assert params["warm_start"] is False and params["n_estimators"] == 12
    assert params["oob_score"] is (kind == "oob")
    # fitted again (a refit of the same object): a new forest, not 12 more trees
    run_to_end(fit_in_steps(chunked, X, y, step_seconds=0.0))
    _same_trees(chunked, once)


def _forest_plan(n_rows, n_trees):
    import pandas as pd
    from sklearn.datasets import make_classification

    from engine.compare import plan_comparison
    from engine.data import make_dataset

    X, y = make_classification(n_rows, 20, n_informative=8, random_state=0)
    frame = {f"x{j}": X[:, j] for j in range(X.shape[1])}
    ds = make_dataset(pd.DataFrame({**frame, "label": y}), target="label")
    return plan_comparison(
        ds, {"sklearn_forest": {"n_estimators": n_trees, "max_depth": 0}}, n_splits=2
    )


@pytest.mark.slow
def test_stop_during_a_forest_fit_returns_within_a_chunk_under_the_thread_runner():
    """A Compare job fitting a 300-tree forest on 20,000 rows (a minute or more in one
    fit): Stop, once the forest is growing, ends the thread-runner job within about one
    chunk (half a second of trees; a few seconds under load), keeping the folds done."""
    from engine.compare import cross_validate_steps

    job = Job(cross_validate_steps, _forest_plan(20_000, 300), budget=None, runner="threads")
    job.start()
    t0 = time.monotonic()
    while "trees" not in str((job.snapshot().latest or {}).get("message", "")):
        assert not job.finished and time.monotonic() - t0 < 120, job.snapshot().latest
        time.sleep(0.05)
    pressed = time.monotonic()
    job.cancel()
    assert job.join(30)
    lag = time.monotonic() - pressed
    assert job.status == "cancelled"
    assert lag < 5.0, f"Stop took {lag:.1f} s"


@pytest.mark.slow
def test_the_pages_forests_grow_in_chunks_and_equal_one_fit(monkeypatch):
    """The Conditional inference page's random forest (fit_rankings_steps) and the
    Conditional density page's (comparison_steps) grow a chunk of trees per job step, and
    what they report is what one fit of the same forest gives."""
    from sklearn.datasets import load_wine
    from sklearn.ensemble import RandomForestClassifier

    import engine.job_context
    from engine.cit.service import fit_rankings_steps
    from engine.partition.explore import comparison_steps

    X, y = load_wine(return_X_y=True)
    # one tree per step, whatever the machine's pace
    monkeypatch.setattr(engine.job_context, "FOREST_STEP_SECONDS", 0.0)
    once = RandomForestClassifier(n_estimators=8, random_state=5, n_jobs=1).fit(X, y)
    steps = fit_rankings_steps(
        None, X, y, "classification", {}, n_estimators=8, random_state=5, methods=("Random forest",)
    )
    messages = []
    while True:
        try:
            messages.append(next(steps)["message"])
        except StopIteration as stop:
            result = stop.value
            break
    assert [m for m in messages if "trees" in m] == [
        f"fitting Random forest: {k}/8 trees..." for k in range(1, 8)
    ]
    imp = once.feature_importances_ / once.feature_importances_.sum()
    np.testing.assert_allclose(result["importances"]["Random forest"], imp, rtol=0, atol=1e-15)
    # Conditional density: the classification baselines' forest (100 trees)
    train, test = np.arange(0, 178, 2), np.arange(1, 178, 2)
    steps = comparison_steps(
        None,
        X[train],
        y[train],
        X[test],
        y[test],
        task="classification",
        n_classes=3,
        tree_params={"max_leaves": 4},
        forest_params={"max_leaves": 4, "n_estimators": 2},
        seed=3,
    )
    messages = []
    while True:
        try:
            messages.append(next(steps)["message"])
        except StopIteration as stop:
            rows = stop.value["rows"]
            break
    assert sum("Random forest predict_proba (scikit-learn): " in m for m in messages) == 99
    forest = RandomForestClassifier(n_estimators=100, random_state=3).fit(X[train], y[train])
    p = forest.predict_proba(X[test])[np.arange(len(test)), y[test]]
    row = next(r for r in rows if r["model"].startswith("Random forest"))
    assert row["test_nll"] == pytest.approx(float(np.mean(-np.log(np.maximum(p, 1e-9)))))
    assert row["accuracy"] == float(np.mean(forest.predict(X[test]) == y[test]))
