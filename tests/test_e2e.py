"""Browser end-to-end: Debian Chromium (pytest-playwright) against ``streamlit run app.py``.

Flow of a new user: open the app (bundled dataset), pick another dataset, upload a
semicolon / decimal-comma CSV, upload a broken one (error shown, dataset kept), run Compare
with live progress, and look at the results.  Screenshots go to the test's tmp dir.
"""

import re

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

pytestmark = pytest.mark.e2e

SEMICOLON_CSV = (
    "Länge;Breite;Sorte\n"
    + "".join(
        f"{1 + (i % 7) * 0.5:.1f};{2 + (i % 5) * 0.25:.2f};{'ja' if i % 3 else 'nein'}\n"
        for i in range(60)
    )
).replace(".", ",")


#: Milliseconds a page may take to show its heading after ``goto`` or a click on its link
#: (its first run in the server imports its engine parts: slow on a loaded machine).
OPEN_TIMEOUT = 180_000
#: The script of the page in the browser has ended its run.
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
#: What a kernels-ready gate (pages/_engine_gate.py) draws while kernels load: the page's
#: heading, then a progress bar with this text and (a page's gate) this caption, refreshed
#: by a fragment every half second.
GATE_TEXT = re.compile(r"Compiling the .+ kernel groups ready")
GATE_CAPTION = "This page opens by itself when its kernels are ready"


def wait_idle(page: Page, timeout: float = 60_000, gate_timeout: float = 180_000) -> None:
    """Wait until the Streamlit script has finished its run and the page is past its
    kernels-ready gate (conditions in the page, no sleeps).

    A gated page shows its heading at once and ends its run, while the gate's fragment
    reruns until the kernels are loaded (longer on a loaded machine); the page's own
    widgets come with the rerun that removes the gate's progress bar.
    """
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=timeout)
    gate = (
        page.get_by_test_id("stProgress")
        .filter(has_text=GATE_TEXT)
        .or_(page.get_by_text(GATE_CAPTION))
    )
    if gate.count():
        expect(gate).to_have_count(0, timeout=gate_timeout)
        page.wait_for_selector(IDLE, timeout=timeout)


def no_exception(page: Page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)


def choose(page: Page, label: str, option: str) -> None:
    box = page.get_by_test_id("stSelectbox").filter(has_text=label).first
    box.click()
    page.get_by_role("option", name=re.compile(re.escape(option))).first.click()
    wait_idle(page)


def upload(page: Page, path) -> None:
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(path))
    wait_idle(page)


@pytest.mark.slow
def test_new_user_flow(page: Page, app_url, tmp_path):
    page.goto(app_url)  # the app opens on its Start page: text and links, no plot
    expect(page.get_by_role("heading", name="TreeLab").first).to_be_visible(timeout=OPEN_TIMEOUT)
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_text("Iris").first).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(0)
    page.get_by_test_id("stMain").get_by_role("link", name="Data", exact=True).click()
    expect(page.get_by_role("heading", name="Data", exact=True).first).to_be_visible(
        timeout=OPEN_TIMEOUT
    )
    wait_idle(page)
    no_exception(page)
    # the first chart may take seconds: the browser loads plotly.js on first use
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible(timeout=60_000)
    page.screenshot(path=tmp_path / "01_open.png", full_page=True)

    choose(page, "Dataset", "Wine")
    expect(page.get_by_text("178 rows").first).to_be_visible()
    no_exception(page)

    good = tmp_path / "messwerte.csv"
    good.write_bytes(SEMICOLON_CSV.encode("utf-8"))
    upload(page, good)
    expect(page.get_by_text("it is now the active dataset")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("60 rows").first).to_be_visible()
    no_exception(page)
    page.screenshot(path=tmp_path / "02_uploaded.png", full_page=True)

    bad = tmp_path / "leer.csv"
    bad.write_bytes(b"")
    upload(page, bad)
    expect(page.get_by_text("Could not load").first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("60 rows").first).to_be_visible()  # previous dataset kept
    no_exception(page)

    page.goto(app_url + "/compare?ds=breast_cancer")
    expect(page.get_by_role("heading", name="Compare models")).to_be_visible(timeout=OPEN_TIMEOUT)
    wait_idle(page)
    expect(page.get_by_text("569 rows").first).to_be_visible(timeout=120_000)  # kernels
    page.get_by_role("button", name="Run").click()
    # live progress first, then the results
    expect(page.get_by_test_id("stProgress")).to_be_visible(timeout=30_000)
    page.screenshot(path=tmp_path / "03_progress.png", full_page=True)
    expect(page.get_by_role("heading", name="Results")).to_be_visible(timeout=180_000)
    wait_idle(page)
    no_exception(page)
    charts = page.get_by_test_id("stPlotlyChart")
    expect(charts).to_have_count(2)
    n_traces = page.evaluate(
        "() => Array.from(document.querySelectorAll('[data-testid=stPlotlyChart] .js-plotly-plot'))"
        ".map(e => e.data.length)"
    )
    assert n_traces[0] >= 3  # one bar per model and metric panel
    page.screenshot(path=tmp_path / "04_results.png", full_page=True)
    print("screenshots in", tmp_path)


@pytest.mark.slow
def test_split_strategies_page(page: Page, app_url, tmp_path):
    """Open the Split strategies page, click a tree node, change the strategies, run CV."""
    page.goto(app_url + "/split_strategies?ds=wine")
    expect(page.get_by_role("heading", name="Split strategies")).to_be_visible(timeout=OPEN_TIMEOUT)
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_role("heading", name=re.compile("Candidates at node 0"))).to_be_visible()
    # click a node of the tree (the first chart): its customdata is the node id.  A click
    # that comes before the browser has wired the chart's events would be lost (possible under load):
    # it is repeated once, only while the page still shows node 0 after the click's run
    node = page.get_by_test_id("stPlotlyChart").first.locator(".scatterlayer .trace path.point")
    picked = page.get_by_role("heading", name=re.compile(r"Candidates at node [1-9]"))
    for _ in range(2):
        node.nth(1).click(force=True)
        wait_idle(page)
        try:
            picked.wait_for(timeout=20_000)
            break
        except PlaywrightTimeoutError:
            pass
    expect(picked).to_be_visible(timeout=30_000)
    # drop two strategies from the multiselect
    for name in ("random", "kde_valley"):
        page.get_by_role("button", name=re.compile(f"Remove {name}")).first.click()
        wait_idle(page)
    no_exception(page)
    candidate_traces = (  # "N candidates" or "1 candidate"
        "() => (document.querySelectorAll('[data-testid=stPlotlyChart] .js-plotly-plot')[1]"
        "?.data || []).filter(t => t.name && t.name.includes('candidate')).length"
    )
    # the browser redraws the chart after the script's run has ended: wait for the redraw
    # (a condition, then the same check, whose message shows the count if it never comes)
    try:
        page.wait_for_function(f"({candidate_traces})() === 4", timeout=30_000)
    except PlaywrightTimeoutError:
        pass
    n_traces = page.evaluate(candidate_traces)
    assert n_traces == 4  # exhaustive, quantile, dics_paper, class_centroid
    page.screenshot(path=tmp_path / "split_strategies.png", full_page=True)
    page.get_by_role("button", name="Run").click()
    expect(page.get_by_text("Results for")).to_be_visible(timeout=180_000)
    wait_idle(page)
    no_exception(page)


@pytest.mark.slow  # a browser test: left out of the quick subset
def test_stop_in_the_middle_of_a_fit_through_dask(page: Page, app_url, tmp_path):
    """The default Compare job on digits runs in the server's Dask workers: Stop pressed
    while gradient boosting fits one fold (several seconds, not interruptible) shows the
    finished folds within about a second; a thread runner would wait for the fit."""
    import time

    page.goto(app_url + "/compare?ds=digits")
    expect(page.get_by_role("heading", name="Compare models")).to_be_visible(timeout=OPEN_TIMEOUT)
    wait_idle(page, 120_000)  # the Compare page may wait for its kernels first
    expect(page.get_by_text("1,797 rows").first).to_be_visible(timeout=120_000)
    page.get_by_role("button", name="Run").click()
    # 16 fits (3 models x 5 folds, and the tree's refit: the page refits only the trees it
    # draws) fanned out over the workers in the order tree, forest, boosting: stop once 10
    # are done, while boosting's slow folds are running
    expect(page.get_by_text(re.compile(r"\b1[0-4]/16 fits")).first).to_be_visible(timeout=120_000)
    page.screenshot(path=tmp_path / "stop_01_running.png")
    t0 = time.monotonic()
    page.get_by_role("button", name="Stop").click()
    expect(page.get_by_text("The job was stopped").first).to_be_visible(timeout=10_000)
    latency = time.monotonic() - t0
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_role("heading", name="Results")).to_be_visible()
    page.screenshot(path=tmp_path / "stop_02_stopped.png", full_page=True)
    # Not a speed benchmark (bench/bench_load.py measures Stop latency): a bound that a runner
    # waiting for the running boosting fit (9.2 s on digits in threads, issue 13) exceeds,
    # with room for a loaded 2-core machine (3.2 s seen while kernels compiled beside it).
    assert latency < 6.0, f"Stop took {latency:.1f} s to show the finished folds"


@pytest.mark.slow  # a browser test: left out of the quick subset
def test_messy_csv_parse_report(page: Page, app_url, tmp_path, root):
    """Upload a messy shop export (codes with leading zeros, dates, percentages, dollar
    amounts, mixed yes/no spellings, an order ID and free-text comments): the parse report
    names every change, identifiers are left out with a button that brings them back."""
    page.goto(app_url + "/data")
    expect(page.get_by_role("heading", name="Data", exact=True).first).to_be_visible(
        timeout=OPEN_TIMEOUT
    )
    wait_idle(page)
    upload(page, root / "tests" / "data" / "messy_shop.csv")
    expect(page.get_by_text("it is now the active dataset")).to_be_visible(timeout=30_000)
    no_exception(page)
    expect(page.get_by_text("6 automatic changes while reading")).to_be_visible()
    for line in (
        "Column 'zip': 8 codes with leading zeros such as '04521' were kept as text",
        "Column 'discount': 15 percentages such as '22%' were read as numbers in percent",
        "Column 'total': 16 amounts in $ such as '$1,204.50' were read as numbers",
        "Column 'member': 12 spellings of yes/no",
        "Column 'joined': 16 dates (day/month/year, such as '15/01/2023')",
    ):
        expect(page.get_by_text(line, exact=False).first).to_be_visible()
    expect(page.get_by_text("looks like an identifier (free text").first).to_be_visible()
    expect(page.get_by_text("16 rows x 5 features").first).to_be_visible()  # NaN kept
    page.screenshot(path=tmp_path / "messy_report.png", full_page=True)
    # one click brings the comment column back as a feature
    page.get_by_test_id("stHorizontalBlock").filter(has_text="comment looks like").get_by_role(
        "button", name="Use as a feature"
    ).click()
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_text("16 rows x 6 features").first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("comment looks like an identifier")).to_have_count(0)
    page.screenshot(path=tmp_path / "messy_brought_back.png", full_page=True)
