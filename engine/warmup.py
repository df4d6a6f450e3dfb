"""Kernel groups, which page needs which, and compiling them in the background (issue 13).

Every kernel module registers a *warm-up* (:func:`engine._numba.register_warmup`): a call
of its kernels on tiny inputs with the dtypes of real calls.  Here those warm-ups are
*groups* (:data:`GROUPS`: the package that registers it, a label, the groups whose kernels
its own kernels call), and :data:`PAGE_GROUPS` says which groups each page of the app uses,
directly or in its jobs.  A test (``tests/test_warmup.py``) runs each page with only its
groups warmed and checks that no kernel gained a signature.

:func:`start_background` starts, once per process, a thread that gets every group ready
without delaying the first page:

* with Dask jobs on the embedded cluster, each group compiles in a worker process (a task
  per group; a group waits for the groups its kernels call, so no two processes compile the
  same kernel).  Workers write numba's on-disk cache; this process then only *loads* each
  group from it;
* with ``TREELAB_JOBS=threads`` or an external cluster, one child process
  (``python -m engine.warmup``) compiles the groups into the cache, one after the other,
  and this process loads each as it lands.

:func:`status` tells a page how far its groups are (the app shows it in the page's main
area and opens the page by itself when they are ready).  Groups loaded by a direct
:func:`warm_groups` call (tests, notebooks) count as ready.

Command line: ``python -m engine.warmup`` compiles every group into the cache (the
Dockerfile runs it at build time); ``--groups literati cart`` compiles only those.
"""

from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Group:
    """One warm-up: ``package`` registers it, ``label`` names it for users, ``after`` lists
    the groups whose kernels its kernels call (compiled first)."""

    package: str
    label: str
    after: tuple[str, ...] = ()


#: Warm-up name (as registered) -> group.  Order: a sensible compile order.
GROUPS: dict[str, Group] = {
    "tree.apply": Group("engine.tree", "tree routing"),
    "criteria": Group("engine.criteria", "split criteria"),
    "candidates": Group("engine.cart.candidates", "candidate thresholds"),
    "cart": Group("engine.cart", "CART", ("tree.apply", "criteria", "candidates")),
    "partition.scans": Group("engine.partition", "Partition Tree scans"),
    "partition.estimators": Group(
        "engine.partition", "Partition Tree estimators", ("partition.scans",)
    ),
    "treegrad": Group("engine.treegrad", "TreeGrad"),
    "cit.statistics": Group("engine.cit", "test statistics"),
    "cit.permutation": Group(
        "engine.cit", "permutation tests", ("criteria", "candidates", "cit.statistics")
    ),
    "cit.asymptotic": Group("engine.cit", "asymptotic tests", ("cit.statistics",)),
    "cit.tree": Group(
        "engine.cit", "conditional inference trees", ("cit.permutation", "cit.asymptotic")
    ),
    "literati": Group("engine.literati", "Literati search", ("tree.apply",)),
}

#: Page (its ``url_path`` in app.py) -> (engine name shown while compiling, groups used by
#: the page and its jobs).
PAGE_GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "home": ("home", ()),
    "data": ("data", ()),
    # the Compare page itself only draws trees; each model's groups gate its Run button
    "compare": ("Compare", ("tree.apply",)),
    # the search job also fits its baselines (the greedy shape tree and TreeLab's CART)
    "optimal_shape_trees": (
        "Literati",
        ("tree.apply", "criteria", "candidates", "cart", "literati"),
    ),
    "conditional_density": ("Partition Tree", ("partition.scans", "partition.estimators")),
    "feature_ranking": ("TreeGrad", ("tree.apply", "treegrad")),
    "conditional_inference": (
        "conditional inference",
        (
            "tree.apply",
            "criteria",
            "candidates",
            "cit.statistics",
            "cit.permutation",
            "cit.asymptotic",
            "cit.tree",
        ),
    ),
    "split_strategies": ("DICS", ("tree.apply", "criteria", "candidates", "cart")),
    # the Learn section: the lessons use every method; the challenge CART and Literati;
    # the predictions CART, TreeGrad and the conditional inference tree
    "learn": ("lessons", tuple(GROUPS)),
    "learn_challenge": ("challenge", ("tree.apply", "criteria", "candidates", "cart", "literati")),
    "learn_predict": (
        "prediction",
        ("tree.apply", "criteria", "candidates", "cart", "treegrad", "cit.asymptotic", "cit.tree"),
    ),
    "learn_growth": (
        "step-through growth",
        ("tree.apply", "criteria", "cit.asymptotic", "cit.tree", "partition.estimators"),
    ),
    "glossary": ("glossary", ()),
}

#: Compare-page model key -> groups its fits use (models not listed need none).
MODEL_GROUPS: dict[str, tuple[str, ...]] = {
    "treelab_cart": ("tree.apply", "criteria", "candidates", "cart"),
    "treelab_cit": PAGE_GROUPS["conditional_inference"][1],
    "treelab_cif": PAGE_GROUPS["conditional_inference"][1],
    "treelab_literati": ("tree.apply", "literati"),
    "treelab_greedy_shape": ("tree.apply", "literati"),
    "treelab_partition_tree": PAGE_GROUPS["conditional_density"][1],
    "treelab_partition_forest": PAGE_GROUPS["conditional_density"][1],
}


def page_groups(page: str, models=()) -> list[str]:
    """Groups a page needs (with prerequisites), plus those of the Compare ``models`` keys."""
    names = list(PAGE_GROUPS.get(page, ("", ()))[1])
    for key in models:
        names.extend(MODEL_GROUPS.get(key, ()))
    return closure(names)


def closure(names) -> list[str]:
    """``names`` with every group they come after, in :data:`GROUPS` order.

    Raises
    ------
    KeyError
        For a name that is not a group.
    """
    wanted: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name not in GROUPS:
            raise KeyError(f"unknown kernel group {name!r}; groups: {list(GROUPS)}")
        if name not in wanted:
            wanted.add(name)
            stack.extend(GROUPS[name].after)
    return [g for g in GROUPS if g in wanted]


def in_order(names) -> list[str]:
    """``names`` in the given order, each preceded by the groups it comes after."""
    out: list[str] = []
    for name in names:
        for dep in closure([name]):
            if dep not in out:
                out.append(dep)
    return out


# -- per-process state -----------------------------------------------------------------------
_LOCK = threading.RLock()
#: group -> "waiting" | "compiling" | "loading" | "ready" | "failed"
_STATE: dict[str, str] = {}
_STARTED_AT: dict[str, float] = {}
_ERRORS: dict[str, str] = {}
_BACKGROUND: dict = {}


def _set(group: str, state: str) -> None:
    with _LOCK:
        _STATE[group] = state
        if state in ("compiling", "loading"):
            _STARTED_AT.setdefault(group, time.monotonic())


def state(group: str) -> str:
    """The group's state in this process (``"waiting"`` before anything started)."""
    with _LOCK:
        return _STATE.get(group, "waiting")


def ready(groups) -> bool:
    """True when every group in ``groups`` is loaded in this process."""
    with _LOCK:
        return all(_STATE.get(g) == "ready" for g in groups)


@dataclass(frozen=True)
class Progress:
    """How far a page's groups are: ``done`` of ``total`` ready, ``current`` the label of a
    group being compiled or loaded now (or None), ``seconds`` since the first one began,
    ``failed`` a message when a group could not be prepared (the page then runs anyway and
    numba compiles on first use)."""

    done: int
    total: int
    current: str | None
    seconds: float
    failed: str | None = None

    @property
    def ready(self) -> bool:
        return self.done >= self.total or self.failed is not None


def status(groups) -> Progress:
    """Progress of ``groups`` (plus the groups they come after) in this process."""
    names = closure(groups)
    with _LOCK:
        done = sum(_STATE.get(g) == "ready" for g in names)
        busy = [g for g in names if _STATE.get(g) in ("compiling", "loading")]
        started = [_STARTED_AT[g] for g in names if g in _STARTED_AT]
        failed = next((_ERRORS[g] for g in names if g in _ERRORS), None)
    return Progress(
        done=done,
        total=len(names),
        current=GROUPS[busy[0]].label if busy else None,
        seconds=time.monotonic() - min(started) if started else 0.0,
        failed=failed,
    )


def page_status(page: str) -> tuple[str, Progress]:
    """(engine name, progress) of an app page (``url_path``); unknown pages need nothing."""
    engine_name, groups = PAGE_GROUPS.get(page, (page, ()))
    return engine_name, status(groups)


# -- warming in this process -------------------------------------------------------------------
def _registered() -> dict:
    from engine import _numba

    return dict(_numba._WARMUPS)


def _marker(name: str):
    """Path of the file saying group ``name`` is in numba's cache for the current sources."""
    from pathlib import Path

    from engine import _cache_dir, _numba

    if _numba.CACHE_DIR is None:
        raise OSError("no writable numba cache folder")
    folder = Path(_numba.CACHE_DIR)
    return folder / _cache_dir.STAMP_NAME, folder / f"treelab-warm-{name}"


def in_cache(name: str) -> bool:
    """True when group ``name`` was compiled into numba's cache for the current sources
    (a marker written by :func:`warm_groups`; the cache folder is keyed on the sources: engine/_cache_dir.py)."""
    try:
        stamp, marker = _marker(name)
        return marker.read_text() == stamp.read_text()
    except OSError:
        return False


def _mark_cached(name: str) -> None:
    try:
        stamp, marker = _marker(name)
        marker.write_text(stamp.read_text())
    except OSError:
        pass


def warm_groups(names, progress=None) -> dict[str, float]:
    """Compile (or load from numba's cache) the named groups and their prerequisites here.

    Returns seconds per group run now (groups already ready are skipped).  ``progress``
    (optional) is called with each group's name before it runs.

    Raises
    ------
    KeyError
        For an unknown group, or a group whose package registered no warm-up.
    """
    timings: dict[str, float] = {}
    for name in closure(names):
        with _LOCK:
            if _STATE.get(name) == "ready":
                continue
        importlib.import_module(GROUPS[name].package)
        warmups = _registered()
        if name not in warmups:
            raise KeyError(f"{GROUPS[name].package} registered no warm-up named {name!r}")
        if progress is not None:
            progress(name)
        _set(name, "loading" if state(name) != "compiling" else "compiling")
        t0 = time.perf_counter()
        warmups[name]()
        timings[name] = time.perf_counter() - t0
        _mark_cached(name)
        _set(name, "ready")
    return timings


def warm_up(progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Compile (or load from numba's cache) every registered warm-up group in this process;
    return seconds spent per group.

    ``progress`` (optional) is called with each group's name before it runs.  Groups already
    warm in this process are skipped.
    """
    return warm_groups(list(GROUPS), progress)


def mark_all_ready() -> None:
    """Record that every group is loaded (after :func:`warm_up`)."""
    with _LOCK:
        for name in GROUPS:
            _STATE[name] = "ready"


def engine_dispatchers() -> dict[str, object]:
    """Every numba dispatcher defined in an imported ``engine`` module, by qualified name."""
    from numba.core.dispatcher import Dispatcher

    found: dict[str, object] = {}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("engine") or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, Dispatcher):
                fn = value.py_func
                found[f"{fn.__module__}.{fn.__qualname__}"] = value
    return found


def signatures() -> dict[str, set[str]]:
    """Compiled signatures of every engine dispatcher: qualified name -> set of strings."""
    return {
        name: {str(sig) for sig in dispatcher.signatures}
        for name, dispatcher in engine_dispatchers().items()
    }


# -- background ------------------------------------------------------------------------------
def _compile_in_worker(name: str, *_after) -> dict:
    """Dask task: compile one group in a worker (writes numba's cache)."""
    from engine.cluster import wait_for_worker_imports

    wait_for_worker_imports()  # never race the worker's own import of scikit-learn
    t0 = time.perf_counter()
    warm_groups([name])
    return {"group": name, "seconds": time.perf_counter() - t0, "pid": os.getpid()}


def _load_here(name: str) -> None:
    try:
        warm_groups([name])
    except Exception as exc:  # noqa: BLE001 - reported on the page; numba compiles lazily
        logger.exception("warm-up of %s failed", name)
        with _LOCK:
            _ERRORS[name] = f"{type(exc).__name__}: {exc}"
            _STATE[name] = "failed"


#: Groups asked for by pages being opened, most recent first (prepared before the others).
_REQUESTS: list[str] = []


def request(groups) -> None:
    """Prepare ``groups`` (and their prerequisites) before the other pending groups: a page
    whose kernels are not ready calls this, so a user waiting on it is served first."""
    with _LOCK:
        for name in reversed(closure(groups)):
            if name in _REQUESTS:
                _REQUESTS.remove(name)
            _REQUESTS.insert(0, name)


def _next(pending: list[str], running: set[str]) -> str | None:
    """The pending group to prepare next: requested ones first, then :data:`GROUPS` order,
    and only one whose prerequisites are all done."""
    with _LOCK:
        rank = {g: i for i, g in enumerate(_REQUESTS)}
        blocked = set(pending) | running
        ready_now = [g for g in pending if not (set(GROUPS[g].after) & blocked)]
        if not ready_now:
            return None
        order = list(GROUPS)
        return min(ready_now, key=lambda g: (rank.get(g, len(rank)), order.index(g)))


def _by_request(names: list[str]) -> list[str]:
    """``names`` in preparation order (requested first), each after its prerequisites."""
    out, left = [], list(names)
    while left:
        name = _next(left, set()) or left[0]
        left.remove(name)
        out.append(name)
    return out


def _background_dask(pending: list[str], client) -> None:
    from distributed import as_completed

    workers = max(1, len(client.scheduler_info()["workers"]))
    pending = list(pending)
    running: dict[str, object] = {}
    by_key: dict[str, str] = {}
    completed = as_completed([], loop=client.loop)

    def submit_more() -> None:
        while len(running) < workers:
            name = _next(pending, set(running))
            if name is None:
                return
            pending.remove(name)
            future = client.submit(
                _compile_in_worker,
                name,
                key=f"treelab-warmup-{name}-{os.getpid()}-{time.time_ns()}",
                pure=False,
            )
            running[name] = future
            by_key[future.key] = name
            completed.add(future)
            _set(name, "compiling")

    submit_more()
    while running:
        future = next(completed)
        name = by_key.pop(future.key)
        running.pop(name, None)
        try:
            future.result()
        except Exception:  # noqa: BLE001 - compile here instead
            logger.warning("warm-up of %s failed on a worker; compiling here", name)
        _set(name, "loading")
        # dependants may start now; they compile while this process loads ``name``
        pending_after = [g for g in pending if name in GROUPS[g].after]
        for other in pending_after:
            _set(other, "waiting")
        _load_here(name)
        submit_more()


def _background_subprocess(pending: list[str]) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NUMBA_NUM_THREADS": "1"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    cmd = [sys.executable, "-m", "engine.warmup", "--serve"]
    preexec = None
    if hasattr(os, "nice"):

        def preexec():  # lower priority than the web server
            try:
                os.nice(10)
            except OSError:
                pass

    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=preexec,
    )
    _BACKGROUND["process"] = proc
    pending = list(pending)
    try:
        while pending:
            name = _next(pending, set())
            if name is None:
                break
            pending.remove(name)
            _set(name, "compiling")
            proc.stdin.write(name + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line.startswith(f"compiled {name}"):
                raise RuntimeError(f"the compiler process stopped at {name}: {line!r}")
            _set(name, "loading")
            _load_here(name)
    finally:
        try:
            proc.stdin.close()
            proc.wait(30)
        except Exception:  # noqa: BLE001
            proc.kill()
    for name in pending:  # whatever the child did not compile is compiled here
        _set(name, "compiling")
        _load_here(name)


def start_background(first: tuple[str, ...] = (), groups=None, delay: float = 0.0) -> bool:
    """Start preparing every group not ready yet, once per process; returns True if started.

    ``first``: groups to prepare before the others (e.g. those of the page being opened);
    ``groups``: prepare only these (and their prerequisites; default: all); ``delay``:
    seconds to wait first (the app lets the browser fetch the first page's scripts before
    imports and compilers compete with it for the CPU).  Runs in a daemon thread; never
    raises (a failure falls back to compiling here).
    """
    with _LOCK:
        if _BACKGROUND.get("thread") is not None:
            return False
        wanted = list(GROUPS) if groups is None else closure(groups)
        pending = [g for g in wanted if _STATE.get(g) != "ready"]
        if not pending:
            _BACKGROUND["thread"] = "nothing to do"
            return False
        for name in pending:
            _STATE.setdefault(name, "waiting")
    if first:
        request(first)

    def run() -> None:
        if delay > 0:
            time.sleep(delay)
        # groups already in numba's cache need no compiler: load them here at once, in
        # another thread, while the workers (or the child) compile the rest
        cached = [g for g in pending if in_cache(g)]
        rest = [g for g in pending if g not in cached]
        if cached:
            threading.Thread(
                target=lambda: [_load_here(g) for g in _by_request(cached)],
                name="treelab-warmup-load",
                daemon=True,
            ).start()
        if not rest:
            return
        try:
            from engine.cluster import get_client, is_local_cluster, jobs_runner

            use_dask = jobs_runner() == "dask"
            if use_dask:
                client = get_client()
                use_dask = is_local_cluster(client) or client.scheduler_info().get(
                    "address", ""
                ).startswith(("tcp://127.", "tcp://localhost", "inproc"))
            if use_dask:
                _background_dask(rest, client)
            else:
                _background_subprocess(rest)
        except Exception:  # noqa: BLE001 - last resort: compile in this process
            logger.exception("background warm-up failed; compiling in the server process")
            for name in rest:
                if state(name) != "ready":
                    _set(name, "compiling")
                    _load_here(name)

    thread = threading.Thread(target=run, name="treelab-warmup", daemon=True)
    with _LOCK:
        _BACKGROUND["thread"] = thread
    thread.start()
    return True


def main(argv=None) -> int:
    """``python -m engine.warmup [--groups NAME ...] [--report]``: compile into the cache."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", nargs="*", default=list(GROUPS), help="groups to compile")
    parser.add_argument(
        "--report", action="store_true", help="print 'compiled NAME SECONDS' per group"
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="read group names from stdin, one a line; answer 'compiled NAME SECONDS'",
    )
    args = parser.parse_args(argv)
    if args.serve:
        for line in sys.stdin:
            name = line.strip()
            if not name:
                continue
            t0 = time.perf_counter()
            warm_groups([name])
            print(f"compiled {name} {time.perf_counter() - t0:.2f}", flush=True)
        return 0
    total = time.perf_counter()
    for name in in_order(args.groups):
        t0 = time.perf_counter()
        warm_groups([name])
        print(f"compiled {name} {time.perf_counter() - t0:.2f}", flush=True)
    if not args.report:
        print(f"all {len(in_order(args.groups))} groups in {time.perf_counter() - total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
