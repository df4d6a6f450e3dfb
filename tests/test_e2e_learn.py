"""Browser end-to-end of the Learn section (Debian Chromium, pytest-playwright, against
``streamlit run app.py``): play one lesson (answer, reveal, next step) and one challenge
step (pick a feature, split, grade, score table).  Screenshots go to the test's tmp dir."""

import re

import pytest
from playwright.sync_api import Page, expect

from engine.teaching.lessons import LESSONS, compute_step
from tests.test_e2e import no_exception, wait_idle

pytestmark = pytest.mark.e2e


def _open(page: Page, url: str, marker: str) -> None:
    """Open ``url`` and wait until the page (not the kernels' progress) shows ``marker``."""
    page.goto(url)
    wait_idle(page, 120_000)
    expect(page.get_by_text(marker).first).to_be_visible(timeout=600_000)
    wait_idle(page)


def _pick(page: Page, label: str, option: str) -> None:
    box = page.get_by_test_id("stSelectbox").filter(has_text=label).first
    box.click()
    page.keyboard.type(option)
    page.keyboard.press("Enter")
    wait_idle(page)


@pytest.mark.slow
def test_play_a_lesson(page: Page, app_url, tmp_path):
    lesson = LESSONS["cart_split"]
    _open(page, app_url + "/learn", "Predict first")
    no_exception(page)
    expect(page.get_by_role("heading", name=re.compile("Step 1 of 2"))).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(0)  # nothing before the answer
    page.screenshot(path=tmp_path / "lesson_question.png", full_page=True)
    step = lesson.steps[0]
    answer = step.question.answer(compute_step(lesson.id, step.id))
    page.get_by_test_id("stRadio").filter(has_text=step.question.prompt).get_by_text(
        answer, exact=True
    ).click()
    wait_idle(page)
    page.get_by_role("button", name="Check my answer").click()
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_test_id("stAlert").filter(has_text="Right.").first).to_be_visible()
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(1, timeout=60_000)
    expect(page.get_by_text("1 correct of 1 answered")).to_be_visible()
    page.screenshot(path=tmp_path / "lesson_revealed.png", full_page=True)
    page.get_by_role("button", name="Next step").click()
    wait_idle(page)
    expect(page.get_by_role("heading", name=re.compile("Step 2 of 2"))).to_be_visible()
    step = lesson.steps[1]
    answer = step.question.answer(compute_step(lesson.id, step.id))
    wrong = next(o for o in step.question.options(compute_step(lesson.id, step.id)) if o != answer)
    page.get_by_test_id("stRadio").filter(has_text=step.question.prompt).get_by_text(
        wrong, exact=True
    ).click()
    wait_idle(page)
    page.get_by_role("button", name="Check my answer").click()
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_test_id("stAlert").filter(has_text="Not quite").first).to_be_visible()
    expect(page.get_by_text("1 correct of 2 answered")).to_be_visible()
    page.screenshot(path=tmp_path / "lesson_wrong.png", full_page=True)


@pytest.mark.slow
def test_play_a_challenge_step(page: Page, app_url, tmp_path):
    _open(page, app_url + "/learn_challenge?ds=iris", "Split a leaf")
    no_exception(page)
    _pick(page, "Feature", "petal length (cm)")
    expect(page.get_by_text("Threshold on petal length (cm)").first).to_be_visible()
    page.screenshot(path=tmp_path / "challenge_preview.png", full_page=True)
    page.get_by_role("button", name="Split this leaf").click()
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_text(re.compile(r"^1 split, depth 1")).first).to_be_visible()
    page.get_by_label("Your name (for the class's score table)").fill("Ada")
    page.keyboard.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Grade my tree").click()
    wait_idle(page, 120_000)
    no_exception(page)
    expect(page.get_by_text(re.compile("Your tree misclassifies")).first).to_be_visible()
    expect(
        page.get_by_text(re.compile("best possible tree of depth 1 misclassifies"))
    ).to_be_visible()
    expect(page.get_by_role("heading", name="Score table (this session)")).to_be_visible()
    page.screenshot(path=tmp_path / "challenge_graded.png", full_page=True)


@pytest.mark.slow
def test_watch_a_tree_grow(page: Page, app_url, tmp_path):
    """Step twice, back once, play until a step passes by itself, pause; then the
    Partition Tree's first step."""
    _open(page, app_url + "/learn_growth?ds=iris", "Press Step")
    no_exception(page)
    for _ in range(2):
        page.get_by_role("button", name="Step", exact=True).click()
        wait_idle(page)
    expect(page.get_by_text("Step 2 of").first).to_be_visible()
    page.get_by_role("button", name="Back", exact=True).click()
    wait_idle(page)
    expect(page.get_by_text("Step 1 of").first).to_be_visible()
    page.get_by_role("button", name="Play", exact=True).click()
    expect(page.get_by_text("Step 3 of").first).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Pause", exact=True).click()
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_role("button", name="Play", exact=True)).to_be_visible()
    page.screenshot(path=tmp_path / "growth_paused.png", full_page=True)
    _pick(page, "Method", "Partition Tree")
    page.get_by_role("button", name="Step", exact=True).click()
    wait_idle(page)
    no_exception(page)
    expect(page.get_by_text("This leaf splits next").first).to_be_visible()
