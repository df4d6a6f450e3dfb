"""The Dask cluster that runs TreeLab's jobs (docs/spec.md section 0.6; issue 13).

:func:`get_client` returns, in this order of preference:

1. the *current* Dask client of the process (a notebook's or a test's ``Client(...)``);
2. a client of the cluster at ``TREELAB_DASK_SCHEDULER`` (``tcp://host:port``), e.g. one
   started by hand with ``dask scheduler`` and ``dask worker`` (see ``docs/deploy.md``);
3. an *embedded* :class:`distributed.LocalCluster`, started on first use and kept for the
   life of the process: one single-threaded worker process per core, each with a memory
   limit, ``NUMBA_NUM_THREADS`` set so that workers x numba threads do not exceed the cores,
   at a lower CPU priority than the web server (``nice`` +10 by default), a scheduler that
   never re-runs a task whose worker died (``allowed-failures = 0``: a job that killed one
   worker by running out of memory would kill the next one too), and no statistical
   profiler in the workers (its call trees grew their memory with every job).

Settings (environment variables, read when the cluster starts):

========================  ==========================================================
``TREELAB_JOBS``           ``dask`` (default): jobs run on Dask; ``threads``: in threads
                           of the calling process (no cluster is started).
``TREELAB_DASK_SCHEDULER`` address of an existing scheduler; empty: embedded cluster.
``TREELAB_WORKERS``        embedded workers (default: the cores available).
``TREELAB_WORKER_MEMORY``  memory limit per embedded worker, e.g. ``2GiB`` (default: 80 %
                           of the RAM divided by the workers, at most 4 GiB).
``TREELAB_WORKER_NICE``    CPU priority offset of the embedded workers (default 10).
========================  ==========================================================
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass

#: Accepted values of ``TREELAB_JOBS``.
RUNNERS = ("dask", "threads")

#: Seconds to wait for the scheduler at ``TREELAB_DASK_SCHEDULER`` to answer.
CONNECT_TIMEOUT = 15.0

_LOCK = threading.RLock()
_EMBEDDED: dict = {}  # "cluster", "client", "settings" once started


def jobs_runner() -> str:
    """The job runner chosen by ``TREELAB_JOBS`` (``"dask"`` when unset).

    Raises
    ------
    ValueError
        When ``TREELAB_JOBS`` is set to anything but ``dask`` or ``threads``.
    """
    value = os.environ.get("TREELAB_JOBS", "").strip().lower() or "dask"
    if value not in RUNNERS:
        raise ValueError(
            f"TREELAB_JOBS must be 'dask' or 'threads', got {os.environ.get('TREELAB_JOBS')!r}"
        )
    return value


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _total_memory() -> int:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # noqa: BLE001 - psutil ships with distributed; be safe anyway
        return 8 * 2**30


@dataclass(frozen=True)
class ClusterSettings:
    """How the embedded cluster is laid out (see :func:`embedded_settings`).

    Attributes
    ----------
    n_workers : int
        Worker processes, each with one thread.
    memory_limit : int
        Bytes per worker; the nanny restarts a worker above 95 % of it.
    numba_threads : int
        ``NUMBA_NUM_THREADS`` of each worker (``n_workers * numba_threads <= cores``).
    nice : int
        CPU priority offset of the worker processes (0: same as the server).
    """

    n_workers: int
    memory_limit: int
    numba_threads: int
    nice: int


def parse_bytes(text: str) -> int:
    """``"2GiB"`` / ``"1.5 GB"`` / ``"500MB"`` / ``"1073741824"`` -> bytes.

    Raises
    ------
    ValueError
        When the text is not a positive size.
    """
    from dask.utils import parse_bytes as dask_parse_bytes

    try:
        value = int(dask_parse_bytes(str(text).strip()))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a memory size: {text!r} (write e.g. 2GiB or 500MB)") from exc
    if value <= 0:
        raise ValueError(f"a memory size must be positive, got {text!r}")
    return value


def format_bytes(n: float) -> str:
    """Bytes as a short human size: ``2147483648`` -> ``'2.0 GiB'``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def embedded_settings() -> ClusterSettings:
    """The embedded cluster's layout from the environment (see the module docstring).

    Raises
    ------
    ValueError
        When ``TREELAB_WORKERS``, ``TREELAB_WORKER_MEMORY`` or ``TREELAB_WORKER_NICE`` is
        not valid.
    """
    cores = available_cores()
    text = os.environ.get("TREELAB_WORKERS", "").strip()
    try:
        n_workers = int(text) if text else cores
    except ValueError:
        raise ValueError(f"TREELAB_WORKERS must be a whole number, got {text!r}") from None
    if n_workers < 1:
        raise ValueError(f"TREELAB_WORKERS must be at least 1, got {n_workers}")
    text = os.environ.get("TREELAB_WORKER_MEMORY", "").strip()
    if text:
        memory = parse_bytes(text)
    else:
        memory = min(4 * 2**30, int(0.8 * _total_memory() / n_workers))
    text = os.environ.get("TREELAB_WORKER_NICE", "").strip()
    try:
        nice = int(text) if text else 10
    except ValueError:
        raise ValueError(f"TREELAB_WORKER_NICE must be a whole number, got {text!r}") from None
    return ClusterSettings(
        n_workers=n_workers,
        memory_limit=memory,
        numba_threads=max(1, cores // n_workers),
        nice=max(0, nice),
    )


#: Scheduler and worker settings of the embedded cluster.  ``allowed-failures = 0``: a task
#: whose worker dies is not re-run (it would die again, and kill another worker); saturation
#: 1.0: no task waits on a busy worker while another one is idle (a job runs for seconds).
#: No statistical profiler on the workers: Dask's samples every running task's stack every
#: 10 ms and keeps one call tree per second for the last 1,000 seconds (twice: overall and
#: per task name), only for the dashboard's Profile tab.  With the Compare page's fits it
#: grew each worker's memory with every job until that history was full, about 17 minutes
#: (docs/benchmarks.md, Load).
EMBEDDED_CONFIG = {
    "distributed.scheduler.allowed-failures": 0,
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.worker.profile.enabled": False,
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": 0.85,
    "distributed.worker.memory.terminate": 0.95,
    "distributed.admin.tick.limit": "10s",
}


_SPAWN_PATCHED = False


def _keep_spawn_off_the_app_script() -> None:
    """Stop new worker processes from re-running a Streamlit page as their ``__main__``.

    ``multiprocessing``'s spawn start method re-imports the parent's ``__main__`` file in the
    child.  Streamlit makes each page script the ``__main__`` module while it runs, so a
    worker spawned from the app (at start-up, or when a worker is restarted) would execute
    ``app.py`` and die.  The patch drops the main-file step in a process that runs
    Streamlit scripts (the server, AppTest); plain scripts keep the usual behaviour.  Jobs
    do not need it: functions defined in a page are pickled by value.
    """
    global _SPAWN_PATCHED
    if _SPAWN_PATCHED:
        return
    import multiprocessing.spawn as spawn

    original = spawn.get_preparation_data

    def get_preparation_data(name):
        data = original(name)
        if "init_main_from_path" in data and "streamlit.runtime.scriptrunner" in sys.modules:
            del data["init_main_from_path"]
        return data

    spawn.get_preparation_data = get_preparation_data
    _SPAWN_PATCHED = True


def _start_embedded(settings: ClusterSettings):
    """Start the LocalCluster and its client (in a thread whose priority the workers inherit)."""
    import dask
    from distributed import Client, LocalCluster

    out: dict = {}
    _keep_spawn_off_the_app_script()

    def target() -> None:
        try:
            if settings.nice and hasattr(os, "setpriority"):
                # Linux: the priority is per thread and inherited by the threads and the
                # processes it starts, i.e. the cluster's event loop and the worker processes
                # (the server's own threads keep theirs).
                try:
                    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), settings.nice)
                except OSError:
                    pass
            with dask.config.set(EMBEDDED_CONFIG):
                cluster = LocalCluster(
                    n_workers=settings.n_workers,
                    threads_per_worker=1,
                    processes=True,
                    memory_limit=settings.memory_limit,
                    dashboard_address=":0",
                    silence_logs=logging.ERROR,
                    env={"NUMBA_NUM_THREADS": str(settings.numba_threads)},
                )
                out["client"] = Client(cluster, set_as_default=False)
                out["client"].register_plugin(_worker_plugin())
            out["cluster"] = cluster
        except BaseException as exc:  # noqa: BLE001 - reported to the caller below
            out["error"] = exc

    thread = threading.Thread(target=target, name="treelab-cluster-start", daemon=True)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["cluster"], out["client"]


#: Set when the background imports of :func:`_import_engine_in_background` have ended in
#: this worker process (or were never started here).
_IMPORTS_DONE = threading.Event()
_IMPORTS_DONE.set()
#: Longest a task waits for those imports (seconds); afterwards it imports by itself.
IMPORT_WAIT = 180.0


def wait_for_worker_imports(timeout: float = IMPORT_WAIT) -> bool:
    """Block a worker task until the worker's background imports have ended (at most
    ``timeout`` seconds); returns True when they have.

    Two threads importing scikit-learn at once can see a partially initialised module
    (``ImportError: cannot import name 'clone' from partially initialized module
    'sklearn.base'``), so a job or warm-up task waits for the background import instead of
    racing it.  Returns at once outside a worker that started them."""
    return _IMPORTS_DONE.wait(timeout)


def _import_engine_in_background() -> None:
    """Import the engine's methods (scikit-learn, numba) in a worker that just started, so
    that its first job does not wait for them (tasks wait for this to end:
    :func:`wait_for_worker_imports`)."""
    _IMPORTS_DONE.clear()

    def work() -> None:
        try:
            from engine.compare import load_methods

            load_methods()
        except Exception:  # noqa: BLE001 - the job imports what it needs anyway
            pass
        finally:
            _IMPORTS_DONE.set()

    threading.Thread(target=work, name="treelab-worker-imports", daemon=True).start()


def _worker_plugin():
    from distributed.diagnostics.plugin import WorkerPlugin

    class TreeLabWorkerSetup(WorkerPlugin):
        """Runs in every worker of the embedded cluster, restarted ones too."""

        name = "treelab-worker-setup"

        def setup(self, worker) -> None:
            _import_engine_in_background()

    return TreeLabWorkerSetup()


class ClusterError(RuntimeError):
    """The Dask cluster could not be reached or started (the message says why)."""


def get_client():
    """The Dask client jobs run on (current client, ``TREELAB_DASK_SCHEDULER``, or embedded).

    Returns
    -------
    distributed.Client

    Raises
    ------
    ClusterError
        When the scheduler at ``TREELAB_DASK_SCHEDULER`` cannot be reached or the embedded
        cluster cannot start.
    """
    from distributed import Client

    try:
        return Client.current(allow_global=True)
    except ValueError:
        pass
    with _LOCK:
        client = _EMBEDDED.get("client")
        if client is not None and client.status in ("running", "connecting"):
            return client
        address = os.environ.get("TREELAB_DASK_SCHEDULER", "").strip()
        if address:
            try:
                client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
            except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, ...
                raise ClusterError(
                    f"cannot reach the Dask scheduler at {address} (TREELAB_DASK_SCHEDULER): {exc}"
                ) from exc
            _EMBEDDED.update(client=client, cluster=None, address=address)
            return client
        try:
            settings = embedded_settings()
            cluster, client = _start_embedded(settings)
        except Exception as exc:  # noqa: BLE001
            raise ClusterError(f"cannot start the embedded Dask cluster: {exc}") from exc
        _EMBEDDED.update(client=client, cluster=cluster, settings=settings, address=None)
        import atexit

        atexit.register(shutdown)  # close the workers before the interpreter winds down
        return client


def embedded_cluster():
    """The embedded :class:`distributed.LocalCluster` if this process started one, else None."""
    return _EMBEDDED.get("cluster")


def is_local_cluster(client) -> bool:
    """True when ``client``'s workers share this machine's numba cache (embedded cluster)."""
    return client is _EMBEDDED.get("client") and _EMBEDDED.get("cluster") is not None


def shutdown() -> None:
    """Close the embedded cluster (tests; the process exit does it too)."""
    with _LOCK:
        client, cluster = _EMBEDDED.get("client"), _EMBEDDED.get("cluster")
        _EMBEDDED.clear()
    for thing in (client, cluster):
        if thing is not None:
            try:
                thing.close()
            except Exception:  # noqa: BLE001 - best effort at shutdown
                pass


def worker_memory_limit(client, address: str) -> int | None:
    """The memory limit in bytes of the worker at ``address`` (None when unknown)."""
    try:
        info = client.scheduler_info(n_workers=-1)["workers"].get(address)
    except Exception:  # noqa: BLE001
        return None
    limit = (info or {}).get("memory_limit")
    return int(limit) if limit else None
