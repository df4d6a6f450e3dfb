"""Browser end-to-end: a Compare run survives a reload and opens from its link in another
browser (issue 16 point 1), against ``streamlit run app.py`` with its Dask cluster."""

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.test_e2e import no_exception, wait_idle

pytestmark = pytest.mark.e2e


def finished_caption(page: Page) -> str:
    """The results caption 'Mean over ... finished in 1.23 s.' (the stored run's time)."""
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="finished in").first
    expect(caption).to_be_visible(timeout=60_000)
    return caption.inner_text()


@pytest.mark.slow
def test_a_compare_run_survives_a_reload_and_opens_in_another_browser(
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
    page.screenshot(path=tmp_path / "04_bad_id.png")
