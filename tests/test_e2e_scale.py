"""Browser: a large upload gets the sidebar's subsample offer; once chosen, the page's
dataset line and a method page's result say which rows they are on (issue 20 point 4).
30,000 rows stand in for 200,000 (above the offer's 20,000 rows, quick to upload)."""

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import Page, expect

from tests.test_e2e import no_exception, upload, wait_idle

pytestmark = pytest.mark.e2e


@pytest.mark.slow
def test_large_upload_subsample_caption(page: Page, app_url, tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(30_000, 8)).round(3), columns=[f"x{j}" for j in range(8)])
    frame["label"] = np.where(frame["x0"] + rng.normal(size=30_000) > 0.5, "yes", "no")
    path = tmp_path / "large.csv"
    frame.to_csv(path, index=False)

    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(app_url + "/data")
    expect(page.get_by_role("heading", name="Data", exact=True).first).to_be_visible(timeout=60_000)
    wait_idle(page)
    upload(page, path)
    expect(page.get_by_text("30,000 rows x 8 features").first).to_be_visible(timeout=60_000)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_text("Large data")).to_be_visible()
    sidebar.get_by_text("Use a seeded stratified subsample").click()
    wait_idle(page)
    note = "on a seeded stratified subsample of 20,000 of 30,000 rows (seed 0)"
    expect(page.get_by_text(note).first).to_be_visible(timeout=30_000)
    assert "sub=20000" in page.url
    no_exception(page)
    page.screenshot(path=tmp_path / "scale_data.png", full_page=True)

    # in the same session (a new page load would start a session without the upload)
    page.get_by_test_id("stSidebarNav").get_by_text("Split strategies").click()
    wait_idle(page, timeout=120_000)
    expect(page.get_by_text(note).first).to_be_visible(timeout=60_000)
    no_exception(page)
    page.screenshot(path=tmp_path / "scale_split_strategies.png", full_page=True)
