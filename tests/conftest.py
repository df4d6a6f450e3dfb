"""Shared fixtures: repository paths, a warmed numba cache, a live Streamlit server."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def warm_engine():
    """Compile (or load from cache) every kernel once, before timing-sensitive app tests."""
    from engine._numba import warm_up

    return warm_up()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pytest_collection_modifyitems(config, items):
    """Skip browser tests without Chromium locally; fail them in CI (TREELAB_REQUIRE_BROWSER)."""
    if os.path.exists(CHROMIUM):
        return
    if os.environ.get("TREELAB_REQUIRE_BROWSER"):
        return  # let them run and fail loudly
    skip = pytest.mark.skip(reason=f"browser tests need Debian chromium at {CHROMIUM} "
                                   "(apt-get install chromium)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Use Debian's Chromium (never a downloaded browser) with the flags this machine needs."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM,
            "args": ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--no-first-run", "--disable-quic"]}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1400, "height": 1000},
            "accept_downloads": True}


@pytest.fixture(scope="session")
def app_url(tmp_path_factory, warm_engine):
    """Start ``streamlit run app.py`` on a free localhost port; yield its URL."""
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
             "--server.headless", "true", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env)
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
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
