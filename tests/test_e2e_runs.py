"""Browser end-to-end: a Compare run survives a reload, opens from its link in another
browser and on a restarted server (issue 16 point 1), against ``streamlit run app.py``
with its Dask cluster."""

import os
import re
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import ROOT, _free_port
from tests.test_e2e import no_exception, wait_idle

pytestmark = pytest.mark.e2e


@contextmanager
def second_server(log_path):
    """Another ``streamlit run app.py`` process on the same run store folder (the
    environment's ``TREELAB_RUN_STORE``), as the server after a restart: it shares nothing
    with the first but the folder.  Jobs in threads (reopening a run starts none)."""
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TREELAB_JOBS": "threads"}
    command = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py")]
    command += ["--server.headless", "true", "--server.port", str(port)]
    command += ["--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as reply:
                    if reply.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the second server did not start")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def finished_caption(page: Page) -> str:
    """The results caption 'Mean over ... finished in 1.23 s.' (the stored run's time)."""
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="finished in").first
    expect(caption).to_be_visible(timeout=60_000)
    return caption.inner_text()


@pytest.mark.slow
def test_a_compare_run_survives_a_reload_another_browser_and_a_server_restart(
    page: Page, browser: Browser, app_url, tmp_path
):
    page.goto(app_url + "/compare?ds=wine")
    expect(page.get_by_role("heading", name="Compare models")).to_be_visible(timeout=60_000)
    wait_idle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("heading", name="Results")).to_be_visible(timeout=120_000)
    wait_idle(page)
    no_exception(page)
    expect(page).to_have_url(re.compile(r"[?&]run=[A-Za-z0-9_-]{22}"), timeout=10_000)
    run_id = re.search(r"run=([A-Za-z0-9_-]{22})", page.url).group(1)
    kept = page.get_by_test_id("stCaptionContainer").filter(has_text="is kept").first
    expect(kept).to_contain_text(run_id)
    expect(kept).to_contain_text("Runs are kept for")
    before = finished_caption(page)
    page.screenshot(path=tmp_path / "01_run.png", full_page=True)

    page.reload()
    expect(page.get_by_role("heading", name="Results")).to_be_visible(timeout=60_000)
    wait_idle(page)
    no_exception(page)
    assert finished_caption(page) == before  # the stored run, not a new one
    expect(page.get_by_test_id("stAlertContentWarning")).to_have_count(0)
    assert run_id in page.url
    kept = page.get_by_test_id("stCaptionContainer").filter(has_text="is kept").first
    expect(kept).to_contain_text(run_id)
    kept.scroll_into_view_if_needed()
    page.screenshot(path=tmp_path / "02_reloaded.png")

    other = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        elsewhere = other.new_page()
        elsewhere.goto(page.url)
        expect(elsewhere.get_by_role("heading", name="Results")).to_be_visible(timeout=60_000)
        wait_idle(elsewhere)
        no_exception(elsewhere)
        assert finished_caption(elsewhere) == before
        expect(elsewhere.get_by_text("Wine").first).to_be_visible()
        elsewhere.screenshot(path=tmp_path / "03_other_browser.png", full_page=True)
    finally:
        other.close()

    # after a server restart: another server process on the same store folder
    with second_server(tmp_path / "second_server.log") as restarted:
        path = page.url.split("/", 3)[3]  # "compare?ds=wine&run=..."
        page.goto(f"{restarted}/{path}")
        expect(page.get_by_role("heading", name="Results")).to_be_visible(timeout=90_000)
        wait_idle(page)
        no_exception(page)
        assert finished_caption(page) == before
        expect(page.get_by_test_id("stAlertContentWarning")).to_have_count(0)
        page.screenshot(path=tmp_path / "04_restarted_server.png")
    page.goto(app_url + "/" + path)
    expect(page.get_by_role("heading", name="Results")).to_be_visible(timeout=60_000)
    wait_idle(page)

    # another page of the same session: the Compare run's id is not taken for its own
    page.get_by_test_id("stSidebarNav").get_by_text("Split strategies").click()
    expect(page.get_by_role("heading", name="Split strategies")).to_be_visible(timeout=60_000)
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_test_id("stAlertContentWarning")).to_have_count(0)
    assert run_id not in page.url

    page.goto(app_url + "/compare?ds=wine&run=nope")
    expect(page.get_by_test_id("stAlertContentWarning")).to_contain_text(
        "'nope' is not a run id", timeout=60_000
    )
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_role("button", name="Run", exact=True)).to_be_enabled()
    page.screenshot(path=tmp_path / "05_bad_id.png")


@pytest.mark.slow
def test_a_reload_while_a_search_runs_takes_it_back(page: Page, app_url, tmp_path):
    """Reload mid-job (Dask runner): the reloaded page takes the running search back
    (``live=<id>`` in the URL) and, once it ends, draws its result and keeps it
    (``run=<id>``) without anyone pressing Run: a session that lost the job would show no
    result.  (A 10 s search: the reload may take longer on a loaded machine, and the
    result must still come back.)"""
    page.goto(app_url + "/optimal_shape_trees?ds=digits&time=10")
    expect(page.get_by_role("heading", name="Optimal shape trees")).to_be_visible(timeout=60_000)
    wait_idle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page).to_have_url(re.compile(r"[?&]live=[A-Za-z0-9_-]{22}"), timeout=30_000)
    live_id = re.search(r"live=([A-Za-z0-9_-]{22})", page.url).group(1)
    stop = page.get_by_role("button", name="Stop", exact=True)
    expect(stop).to_be_enabled(timeout=30_000)
    page.reload()
    expect(page.get_by_role("heading", name="Optimal shape trees")).to_be_visible(timeout=60_000)
    no_exception(page)
    assert live_id in page.url
    page.screenshot(path=tmp_path / "reloaded_while_running.png", full_page=True)
    expect(page).to_have_url(re.compile(r"[?&]run=[A-Za-z0-9_-]{22}"), timeout=120_000)
    wait_idle(page)
    no_exception(page)
    assert "live=" not in page.url
    kept = page.get_by_test_id("stCaptionContainer").filter(has_text="is kept").first
    expect(kept).to_be_visible(timeout=30_000)
    expect(page.get_by_role("button", name="Run", exact=True)).to_be_enabled()
    page.screenshot(path=tmp_path / "reloaded_mid_search.png", full_page=True)
