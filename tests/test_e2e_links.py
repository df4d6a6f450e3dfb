"""Browser end-to-end (issue 16 point 2): a link with non-default parameters, a list among
them, opens a method page with its widgets set, a bad item and a bad value are named in
warnings, the URL mirrors the values back, and switching page drops the names of the page
left behind without a warning."""

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from tests.test_e2e import OPEN_TIMEOUT, no_exception, wait_idle

pytestmark = pytest.mark.e2e


def query_of(page: Page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def link_warnings(page: Page):
    return page.get_by_test_id("stAlertContentWarning").filter(has_text="Link parameter")


def slider_value(page: Page, label: str) -> str:
    slider = page.get_by_test_id("stSlider").filter(has_text=label).first
    return slider.get_by_test_id("stSliderThumbValue").inner_text().strip()


@pytest.mark.slow
def test_a_link_sets_a_method_pages_widgets_and_names_bad_values(page: Page, app_url):
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(
        app_url + "/split_strategies?ds=wine&strategies=quantile,random,nope"
        "&criterion=entropy&depth=5&min_leaf=3&cv_depth=4&seed=9"
    )
    expect(page.get_by_role("heading", name="Split strategies")).to_be_visible(timeout=OPEN_TIMEOUT)
    wait_idle(page)
    no_exception(page)
    # the widgets hold the link's values
    chosen = page.get_by_test_id("stMultiSelect").filter(has_text="Strategies").first
    expect(chosen).to_contain_text("quantile")
    expect(chosen).to_contain_text("random")
    expect(chosen).not_to_contain_text("exhaustive")  # a default left out by the link
    expect(page.get_by_role("combobox", name="Impurity")).to_have_value("entropy")
    assert slider_value(page, "Depth of the tree used to pick a node") == "5"
    assert slider_value(page, "Tree depth") == "4"
    min_leaf = page.get_by_test_id("stNumberInput").filter(has_text="Minimum rows per leaf")
    expect(min_leaf.locator("input")).to_have_value("3")
    expect(page.get_by_test_id("stSidebar").get_by_role("spinbutton")).to_have_value("9")
    # the bad item is named with what is used instead, once
    expect(link_warnings(page)).to_have_count(1)
    expect(link_warnings(page)).to_contain_text("'nope'")
    expect(link_warnings(page)).to_contain_text("quantile,random is used instead")
    # the URL is the link to the page as set (the bad item gone)
    expect(page).to_have_url(re.compile(r"strategies=quantile%2Crandom"), timeout=10_000)
    query = query_of(page)
    assert query["criterion"] == "entropy" and query["depth"] == "5" and query["cv_depth"] == "4"

    # another method page from a link with a bad number and a short code for a radio
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(app_url + "/optimal_shape_trees?ds=iris&depth=5&scope=root&baseline=0&time=abc")
    expect(page.get_by_role("heading", name="Optimal shape trees")).to_be_visible(
        timeout=OPEN_TIMEOUT
    )
    wait_idle(page)
    no_exception(page)
    assert slider_value(page, "Maximum depth D") == "5"
    scope = page.get_by_test_id("stRadio").filter(has_text="Candidates of the states").first
    expect(scope.get_by_role("radio", name=re.compile("the root's"))).to_be_checked()
    baseline = page.get_by_test_id("stCheckbox").filter(has_text="Baseline").first
    expect(baseline.get_by_role("checkbox")).not_to_be_checked()
    expect(link_warnings(page)).to_have_count(1)
    expect(link_warnings(page)).to_contain_text("time")
    expect(link_warnings(page)).to_contain_text("20.0 is used instead")
    # the browser mirrors the URL after the run: wait for the bad value to leave it
    expect(page).not_to_have_url(re.compile(r"[?&]time="), timeout=10_000)
    query = query_of(page)
    assert query["scope"] == "root" and query["baseline"] == "0" and "time" not in query

    # switching page: Literati's names are not Compare's, dropped without a warning
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Compare models").click()
    expect(page.get_by_role("heading", name="Compare models")).to_be_visible(timeout=OPEN_TIMEOUT)
    wait_idle(page)
    no_exception(page)
    expect(link_warnings(page)).to_have_count(0)
    expect(page).not_to_have_url(re.compile(r"[?&]scope="), timeout=10_000)
    assert "scope" not in query_of(page)


@pytest.mark.slow
def test_the_home_path_opens_the_start_page(page: Page, app_url):
    """``/home`` gave Streamlit's "Page not found" dialog over the Start page (the default
    page is served at the root only): it opens the Start page, with the link's settings."""
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(app_url + "/home?ds=wine")
    expect(page.get_by_role("heading", name="TreeLab")).to_be_visible(timeout=OPEN_TIMEOUT)
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(page.get_by_test_id("stMain")).to_contain_text("Wine")
    expect(page.get_by_test_id("stSidebarNav").get_by_role("link", name="Start")).to_have_count(1)
