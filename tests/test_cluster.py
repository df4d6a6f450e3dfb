"""engine/cluster.py: the embedded cluster's layout, and jobs on an existing Dask cluster
started by hand (a ``dask scheduler`` and a ``dask worker`` subprocess on loopback)."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine import cluster
from engine.jobs import Job

ROOT = Path(__file__).resolve().parent.parent


def test_embedded_layout_never_oversubscribes_the_cores(monkeypatch):
    for workers in ("1", "2", "3", ""):
        monkeypatch.setenv("TREELAB_WORKERS", workers)
        s = cluster.embedded_settings()
        assert s.n_workers * s.numba_threads <= max(cluster.available_cores(), s.n_workers)
        assert s.numba_threads >= 1
    monkeypatch.setenv("TREELAB_WORKERS", "1")
    assert cluster.embedded_settings().numba_threads == cluster.available_cores()


def test_memory_setting_is_parsed_and_bad_values_say_how_to_fix_them(monkeypatch):
    monkeypatch.setenv("TREELAB_WORKER_MEMORY", "1.5GiB")
    assert cluster.embedded_settings().memory_limit == int(1.5 * 2**30)
    monkeypatch.delenv("TREELAB_WORKER_MEMORY")
    assert 0 < cluster.embedded_settings().memory_limit <= 4 * 2**30
    for name, value, words in (
        ("TREELAB_WORKER_MEMORY", "lots", "write e.g. 2GiB"),
        ("TREELAB_WORKERS", "two", "whole number"),
        ("TREELAB_WORKERS", "0", "at least 1"),
    ):
        monkeypatch.setenv(name, value)
        with pytest.raises(ValueError, match=words):
            cluster.embedded_settings()
        monkeypatch.delenv(name)


def test_runner_setting(monkeypatch):
    monkeypatch.setenv("TREELAB_JOBS", "threads")
    assert cluster.jobs_runner() == "threads"
    monkeypatch.delenv("TREELAB_JOBS")
    assert cluster.jobs_runner() == "dask"
    monkeypatch.setenv("TREELAB_JOBS", "celery")
    with pytest.raises(ValueError, match="'dask' or 'threads'"):
        cluster.jobs_runner()


def test_the_embedded_client_is_started_once_per_process(dask_client):
    assert cluster.get_client() is dask_client
    info = dask_client.scheduler_info()["workers"]
    assert len(info) == cluster.embedded_settings().n_workers
    assert {w["nthreads"] for w in info.values()} == {1}
    threads = dask_client.run(lambda: os.environ.get("NUMBA_NUM_THREADS"))
    assert set(threads.values()) == {str(cluster.embedded_settings().numba_threads)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def external_scheduler(tmp_path):
    """``dask scheduler`` + ``dask worker`` (with its nanny) as subprocesses on loopback."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_NUM_THREADS": "1"}
    log = open(tmp_path / "dask.log", "w")
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port)]
        + ["--no-dashboard"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    address = f"tcp://127.0.0.1:{port}"
    worker = subprocess.Popen(
        [sys.executable, "-m", "dask", "worker", address, "--nthreads", "1"]
        + ["--memory-limit", "2GiB", "--no-dashboard"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield address
    for proc in (worker, scheduler):
        proc.terminate()
    for proc in (worker, scheduler):
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
    log.close()


def test_jobs_run_on_an_existing_cluster_by_address(external_scheduler, monkeypatch):
    """TREELAB_DASK_SCHEDULER: the same Job API on a cluster started by hand; the result of
    a real comparison equals the thread runner's, and Stop mid-step still returns fast."""
    from types import SimpleNamespace

    from sklearn.datasets import load_iris

    from engine.compare import cross_validate_steps, plan_comparison

    monkeypatch.setattr(cluster, "_EMBEDDED", {})
    monkeypatch.setenv("TREELAB_DASK_SCHEDULER", external_scheduler)
    X, y = load_iris(return_X_y=True)
    ds = SimpleNamespace(
        X=np.ascontiguousarray(X), y=y.astype(np.int64), task="classification", n_classes=3
    )
    plan = plan_comparison(ds, {"sklearn_tree": {"max_depth": 3}}, n_splits=3, random_state=1)
    deadline = time.monotonic() + 60
    while True:  # the worker may still be connecting
        client = cluster.get_client()
        if client.scheduler_info()["workers"]:
            break
        assert time.monotonic() < deadline, "the external worker never joined"
        time.sleep(0.3)
    assert client.scheduler.address == external_scheduler
    remote = Job(cross_validate_steps, plan, budget=120, runner="dask").start()
    local = Job(cross_validate_steps, plan, budget=120, runner="threads").start()
    assert remote.join(120) and local.join(120)
    assert remote.status == "done", remote.error
    worker_address = next(iter(client.scheduler_info()["workers"]))
    assert remote.worker == worker_address
    a = remote.result.folds.drop(columns=["fit_seconds"], errors="ignore")
    b = local.result.folds.drop(columns=["fit_seconds"], errors="ignore")
    assert a.round(12).equals(b.round(12))
    # Stop in the middle of a long step on the external worker (it has a nanny to restart)
    from tests.test_jobs import overrunning_fit

    slow = Job(overrunning_fit, 5.0, budget=None, runner="dask").start()
    while slow.snapshot().latest is None:
        assert time.monotonic() < deadline + 60
        time.sleep(0.05)
    t0 = time.monotonic()
    slow.cancel()
    assert slow.join(3) and time.monotonic() - t0 < 1.2
    assert slow.status == "cancelled" and slow.result["fold"] == 0
    client.close()


def test_worker_tasks_wait_for_the_background_imports():
    """A job or warm-up task in a worker waits until the worker's background import of the
    engine has ended, so two threads never import scikit-learn at once."""
    import sys

    from engine import cluster

    cluster._import_engine_in_background()
    assert cluster.wait_for_worker_imports(timeout=300)
    assert cluster._IMPORTS_DONE.is_set()
    assert hasattr(sys.modules["sklearn.base"], "clone")  # fully initialised


def _scheduler_leftovers(dask_scheduler=None):
    """The names of TreeLab jobs' tasks, queues, events and variables the scheduler holds."""

    def ours(names):
        return sorted(str(name) for name in names if "treelab-" in str(name))

    extensions = dask_scheduler.extensions
    return {
        "tasks": ours(dask_scheduler.tasks),
        "queues": ours(extensions["queues"].queues),
        "events": ours(extensions["events"]._events),
        "variables": ours(extensions["variables"].variables),
    }


def _worker_leftovers(dask_worker=None):
    """What a worker holds after its jobs: results, task states, profiler call trees."""
    return {
        "data": len(dask_worker.data),
        "tasks": len(dask_worker.state.tasks),
        "profiles": len(dask_worker.profile_history) + len(dask_worker.profile_keys_history),
    }


def test_finished_jobs_leave_nothing_on_the_embedded_cluster(dask_client):
    """Memory flat over a soak (issue 13): once jobs have ended -- done, stopped between two
    steps, failed, or a Compare job whose fits ran as tasks of their own -- the scheduler
    holds no task, queue or event of theirs and no worker holds a result, a task or a
    profile.  Dask's statistical profiler kept one call tree per second of each worker's
    last 1,000 s (per task name too): the workers' memory grew with every Compare job
    (docs/benchmarks.md, Load); the embedded cluster turns it off."""
    from sklearn.datasets import load_iris

    from engine.compare import cross_validate_steps, plan_comparison
    from tests.test_jobs import bad, ticker

    X, y = load_iris(return_X_y=True)
    ds = type("Data", (), {})()
    ds.X, ds.y, ds.task, ds.n_classes = (
        np.ascontiguousarray(X),
        y.astype(np.int64),
        "classification",
        3,
    )
    plan = plan_comparison(ds, {"sklearn_tree": {"max_depth": 3}}, n_splits=3, random_state=1)
    compare = Job(cross_validate_steps, plan, budget=120, runner="dask").start()
    done = Job(ticker, 3, 0.0, runner="dask").start()
    failed = Job(bad, runner="dask").start()
    stopped = Job(ticker, 100_000, 0.01, budget=None, runner="dask").start()
    deadline = time.monotonic() + 60
    while stopped.snapshot().steps < 3:
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    stopped.cancel()
    for job in (compare, done, failed, stopped):
        assert job.join(120), job
    assert [j.status for j in (compare, done, failed, stopped)] == [
        "done",
        "done",
        "error",
        "cancelled",
    ]
    assert len(compare.result.folds) == 3
    empty = {"tasks": [], "queues": [], "events": [], "variables": []}
    deadline = time.monotonic() + 20
    while (left := dask_client.run_on_scheduler(_scheduler_leftovers)) != empty:
        assert time.monotonic() < deadline, left  # the scheduler forgets released tasks soon
        time.sleep(0.2)
    held = dask_client.run(_worker_leftovers)
    assert all(h == {"data": 0, "tasks": 0, "profiles": 0} for h in held.values()), held
