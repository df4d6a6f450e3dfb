"""Shared fixtures: repository paths, a warmed numba cache, a live Streamlit server, Dask.

Jobs run in threads in this test process unless a test asks for Dask (``TREELAB_JOBS`` is set
to ``threads`` here; the fixtures ``dask_client`` and ``small_memory_client`` give the Dask
path, and the live server of ``app_url`` runs its jobs on its own embedded Dask cluster).
"""

import functools
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"

# In-process tests (AppTest, engine) run jobs in threads for speed; Dask tests say so.
os.environ.setdefault("TREELAB_JOBS", "threads")
# Pages keep finished runs in the run store: the tests' runs go to a folder of their own,
# not the user's ~/.cache/treelab/runs (tests of the store itself use their tmp_path).
# Under pytest-xdist every worker gets its own folder (a worker inherits the environment of
# the controller, which set the variable when it loaded this file): a worker's evictions
# and listings never see another worker's runs.
os.environ.setdefault("TREELAB_RUN_STORE", tempfile.mkdtemp(prefix="treelab-test-runs-"))
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if XDIST_WORKER and not os.environ.get("TREELAB_TEST_RUN_STORE_OF_WORKER"):
    os.environ["TREELAB_RUN_STORE"] = os.path.join(os.environ["TREELAB_RUN_STORE"], XDIST_WORKER)
    os.environ["TREELAB_TEST_RUN_STORE_OF_WORKER"] = XDIST_WORKER


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def warm_engine():
    """Compile (or load from cache) every kernel once, before timing-sensitive app tests."""
    from engine.warmup import warm_up

    return warm_up()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Fixtures that start a Dask cluster, a live server or a browser (seconds to tens of
#: seconds each): a test that uses one is marked ``slow`` (left out of the quick subset).
SLOW_FIXTURES = frozenset(
    {"dask_client", "small_memory_cluster", "external_scheduler", "app_url", "page", "browser"}
)

#: Under pytest-xdist (``-n``, ``--dist loadgroup``) the tests that start a cluster, a server
#: or a browser run on one worker, in the order collected: one live server, one Chromium and
#: one embedded Dask cluster in the whole run, not one per worker (each is started once per
#: process).  Those are the tests that use a fixture of :data:`SLOW_FIXTURES` (not a
#: parameter that has a fixture's name, such as tests/test_warmup.py's ``page``) and the
#: tests run with ``runner="dask"``, which start the embedded cluster on their first job.
HEAVY_GROUP = "servers"


def _starts_servers(item) -> bool:
    params = getattr(getattr(item, "callspec", None), "params", {})
    fixtures = set(getattr(item, "fixturenames", ())) - set(params)
    return bool(SLOW_FIXTURES & fixtures) or params.get("runner") == "dask"


class _XdistGroupInNodeId:
    """pytest-xdist's ``loadgroup`` sends tests to workers by the ``@group`` suffix of their
    node id, which its worker adds by setting ``item._nodeid``; pytest 9.2 derives
    ``item.nodeid`` from ``item._id`` instead, so the suffix never shows and every test of
    the group is scheduled alone.  This adds it where it is missing (after xdist's hook)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        from _pytest.nodeid import NodeId

        for item in items:
            names = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group")})
            suffix = "@" + "_".join(names)
            if names and not item.nodeid.endswith(suffix):
                item._id = NodeId.parse(item.nodeid + suffix)


def pytest_configure(config):
    if XDIST_WORKER is not None and config.getvalue("dist") == "no":  # an xdist worker
        config.pluginmanager.register(_XdistGroupInNodeId(), "treelab-xdist-group-in-node-id")


def _module_fixture_group(item) -> str | None:
    """The test's module path when the test uses a module- or class-scoped fixture defined in
    its module (computed once per worker that runs such a test: their tests share a worker,
    so it is computed once, as without xdist); else ``None``."""
    module = getattr(item, "module", None)
    info = getattr(item, "_fixtureinfo", None)
    if module is None or info is None:
        return None
    for name in item.fixturenames:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            defined_in = getattr(getattr(fixturedef, "func", None), "__module__", None)
            if fixturedef.scope in ("module", "class") and defined_in == module.__name__:
                return item.nodeid.split("::")[0]
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark tests that start a cluster, a server or a browser ``slow`` (before ``-m``
    selects); skip browser tests without Chromium locally, fail them in CI
    (TREELAB_REQUIRE_BROWSER)."""
    grouped = XDIST_WORKER is not None and config.pluginmanager.hasplugin("xdist")
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if SLOW_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slow)
        if grouped and not item.get_closest_marker("xdist_group"):
            group = HEAVY_GROUP if _starts_servers(item) else _module_fixture_group(item)
            if group:
                item.add_marker(pytest.mark.xdist_group(group))
    if os.path.exists(CHROMIUM):
        return
    if os.environ.get("TREELAB_REQUIRE_BROWSER"):
        return  # let them run and fail loudly
    skip = pytest.mark.skip(
        reason=f"browser tests need Debian chromium at {CHROMIUM} (apt-get install chromium)"
    )
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Use Debian's Chromium (never a downloaded browser) with the flags this machine needs."""
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {
        **browser_context_args,
        "viewport": {"width": 1400, "height": 1000},
        "accept_downloads": True,
    }


@pytest.fixture(scope="session")
def dask_client():
    """The engine's embedded Dask cluster (one single-threaded worker process per core),
    started once per test session and closed at its end."""
    from engine import cluster

    client = cluster.get_client()
    yield client
    cluster.shutdown()


@pytest.fixture(scope="session")
def small_memory_cluster():
    """A one-worker Dask cluster with a 700 MiB memory limit, for the memory-limit tests."""
    import dask
    from distributed import Client, LocalCluster

    from engine.cluster import EMBEDDED_CONFIG

    with dask.config.set(EMBEDDED_CONFIG):
        cluster = LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,
            memory_limit="700MiB",
            dashboard_address=":0",
        )
        client = Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


#: Milliseconds the live server's first session may take to draw the Start page.
FIRST_RUN_TIMEOUT = 300_000


@pytest.fixture(scope="session")
def app_url(tmp_path_factory, warm_engine, browser):
    """Start ``streamlit run app.py`` on a free localhost port; yield its URL.

    The server runs as a user's would: jobs on its embedded Dask cluster (``TREELAB_JOBS``
    unset), kernels loaded from the numba cache that ``warm_engine`` filled.  One browser
    session opens the Start page before the URL is yielded: the server's first run of
    ``app.py`` (its imports, the cluster's start; a minute or more on a loaded machine)
    is waited for here, so a test's own waits cover only its pages.
    """
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TREELAB_JOBS", None)
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                str(ROOT / "app.py"),
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--browser.gatherUsageStats",
                "false",
                "--server.fileWatcherType",
                "none",
            ],
            cwd=ROOT,
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("streamlit did not start:\n" + log.read_text()[-3000:])
        time.sleep(0.3)
    first = browser.new_page()
    try:
        first.goto(url)
        first.get_by_role("heading", name="TreeLab").first.wait_for(timeout=FIRST_RUN_TIMEOUT)
    finally:
        first.close()
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@functools.cache
def navigation_pages_manager():
    """A ``PagesManager`` for AppTest that keeps the app in navigation mode.

    AppTest resets ``PagesManager.uses_pages_directory`` before every run, so an app with
    a ``pages/`` folder re-enters legacy mode and reruns only the page script, skipping the
    ``st.navigation`` entry point.  The real server sets the flag once per process when
    ``st.navigation`` is first called; this keeps AppTest in the same (navigation) mode.
    Made on first use: importing Streamlit (a second or two) is left to the tests that
    need it, so a run of engine tests alone does not pay for it.
    """
    from streamlit.runtime.pages_manager import PagesManager

    class _NavigationPagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            PagesManager.uses_pages_directory = False
            super().__init__(*args, **kwargs)

    return _NavigationPagesManager


def drive(gen):
    """Run a job step generator to the end (no Job thread); return (snapshots, result):
    what it yielded, in order, and what it returned."""
    snaps = []
    while True:
        try:
            snaps.append(next(gen))
        except StopIteration as stop:
            return snaps, stop.value


def held_until_stop(steps):
    """The job step generator function ``steps`` made to wait for Stop before it starts: a
    job that runs until the user stops it."""

    def held(ctx, *args, **kwargs):
        while not ctx.cancel_event.wait(0.01):
            pass
        return (yield from steps(ctx, *args, **kwargs))

    return held


#: Seconds an AppTest run may take (the first run of a page may compile numba kernels).
APPTEST_TIMEOUT = 120


@pytest.fixture
def app(warm_engine, monkeypatch):
    """The whole app (``app.py`` with navigation) in AppTest, run once, on the Data page
    (the app opens on the Start page; ``start_page`` runs that one).
    Switch page with ``app.switch_page("pages/<page>.py").run()``."""
    from streamlit.testing.v1 import AppTest
    from streamlit.testing.v1 import app_test as app_test_module

    monkeypatch.setattr(app_test_module, "PagesManager", navigation_pages_manager())
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APPTEST_TIMEOUT)
    at.switch_page("pages/data.py")
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture(autouse=True)
def _cancel_jobs_left_running():
    """Cancel the jobs a test leaves running, and wait a little for them to end.

    A test that fails before it joins its jobs, or an AppTest page whose job nobody waits
    for, would otherwise keep the job (a slot of its session's line, a Dask worker, the
    CPU) into the tests after it: one failure under load became sixteen in a row when a
    1,000-second job kept the embedded cluster busy.  Jobs that were already running when
    the test started (started by a wider-scoped fixture) are left alone.  With
    ``TREELAB_TEST_REPORT_LEFT_JOBS`` set to a file path, each test that left jobs is
    appended to it (name and count), to find tests that leave work behind.
    """
    jobs = sys.modules.get("engine.jobs")
    before = set(jobs._RUNNING) if jobs is not None else set()
    yield
    jobs = sys.modules.get("engine.jobs")
    if jobs is None:
        return
    with jobs._RUNNING_LOCK:
        left = [job for job in jobs._RUNNING if job not in before and not job.finished]
    if not left:
        return
    for job in left:
        job.cancel()
    for job in left:
        job.join(5)
    report = os.environ.get("TREELAB_TEST_REPORT_LEFT_JOBS")
    if report:
        with open(report, "a") as out:
            out.write(f"{os.environ.get('PYTEST_CURRENT_TEST', '?')}\t{len(left)}\n")
