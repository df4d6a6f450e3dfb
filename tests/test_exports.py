"""The export row every method page draws through its ResultPanel (issue 16 points 3 and 4).

After a run, each method page and Compare shows "Download report (HTML)" and "Download
figures (PNG)" / "(SVG)".  The report's file -- what the button's callable makes on click --
is one self-contained HTML document with plotly.js inline once and one plotly div per figure
the page recorded (so a figure left out, or plotly.js fetched from a CDN, fails); it names
the page, the dataset, the run's parameters and every recorded table.  The image test
renders one method page's figures (Literati's gap curve with its incumbent slider) to PNG and
SVG through the same callables (skipped without Chromium).
"""

import html
import io
import re
import struct
import zipfile

import pytest
from plotly.offline import get_plotlyjs

from engine import images
from pages._jobs import NO_IMAGES, PAGE_TITLES
from tests.conftest import APPTEST_TIMEOUT as TIMEOUT

pytestmark = pytest.mark.slow


def _finish(app, job_key):
    assert app.session_state[job_key].join(TIMEOUT), f"{job_key} did not finish"
    app.run()
    assert not app.exception, app.exception


def run_optimal_shape_trees(app):
    app.switch_page("pages/optimal_shape_trees.py").run()
    app.slider(key="lit_depth").set_value(3)  # iris: 2 incumbents, proven in well under 1 s
    app.number_input(key="lit_time").set_value(5.0)
    app.button(key="lit_run").click().run()
    _finish(app, "lit_job")


def run_conditional_density(app):
    app.switch_page("pages/conditional_density.py").run()
    app.button(key="pt_run").click().run()
    _finish(app, "pt_job")
    app.button(key="pt_cmp_run").click().run()  # the baselines: the page's table
    _finish(app, "pt_cmp_job")


def run_feature_ranking(app):
    app.switch_page("pages/feature_ranking.py").run()  # explains the row on open
    assert not app.exception, app.exception


def run_conditional_inference(app):
    app.session_state["ci_n_trees"] = 10
    app.switch_page("pages/conditional_inference.py").run()  # fits on open
    _finish(app, "ci_job")


def run_split_strategies(app):
    app.switch_page("pages/split_strategies.py").run()
    app.button(key="ss_run").click().run()
    _finish(app, "ss_job")


def run_compare(app):
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"]).run()
    app.slider(key="cmp_folds").set_value(2)
    app.button(key="cmp_run").click().run()
    _finish(app, "cmp_job")


RUNS = {
    "optimal_shape_trees": run_optimal_shape_trees,
    "conditional_density": run_conditional_density,
    "feature_ranking": run_feature_ranking,
    "conditional_inference": run_conditional_inference,
    "split_strategies": run_split_strategies,
    "compare": run_compare,
}
#: A parameter of each page's run the report must show (name, as in the run's meta).
PARAMETER = {
    "optimal_shape_trees": "time_limit",
    "conditional_density": "tree_params",
    "feature_ranking": "row",
    "conditional_inference": "params",
    "split_strategies": "n_folds",
    "compare": "labels",
}


def on_click(make_file):
    """What the download button's callable returns when clicked: Streamlit runs it in a
    worker thread of its own, outside the session's script run (no st.session_state)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(make_file).result(timeout=TIMEOUT)


def export_buttons(app, page):
    buttons = {b.key: b for b in app.get("download_button")}
    keys = [f"{page}_report_dl", f"{page}_png_dl", f"{page}_svg_dl"]
    assert all(k in buttons for k in keys), sorted(buttons)
    labels = [buttons[k].proto.label for k in keys]
    assert labels == [
        "Download report (HTML)",
        "Download figures (PNG)",
        "Download figures (SVG)",
    ]
    return [buttons[k] for k in keys]


@pytest.mark.parametrize("page", list(RUNS))
def test_every_method_page_offers_a_self_contained_report_of_what_it_drew(app, page):
    RUNS[page](app)
    report_button, png_button, _ = export_buttons(app, page)
    assert not report_button.proto.disabled
    assert png_button.proto.disabled == (not images.available())
    panel = app.session_state["_result_panels"][page]
    assert len(panel.figures) >= 2 and panel.tables, (list(panel.figures), list(panel.tables))
    page_html = on_click(panel.export_files[f"{page}_report_dl"])
    assert page_html.startswith("<!DOCTYPE html>")
    assert page_html.count(get_plotlyjs()) == 1
    # no resource by URL: nothing to fetch when opened offline
    assert not re.search(r"""<(?:script|link|img|iframe)[^>]+(?:src|href)\s*=""", page_html)
    assert page_html.count('class="plotly-graph-div"') == len(panel.figures)
    assert page_html.count("Plotly.newPlot(") == len(panel.figures)
    for caption, _ in panel.report_figures():
        assert f"<h3>{html.escape(caption, quote=True)}</h3>" in page_html, caption
    for name in panel.tables:
        assert f"<h3>{html.escape(name, quote=True)}</h3>" in page_html, name
    dataset = panel.meta["caption"].split(" -- ")[0].replace("*", "")
    title = f"{PAGE_TITLES[page]} -- {dataset}"
    assert f"<title>{html.escape(title, quote=True)}</title>" in page_html
    assert f"<dt>{PARAMETER[page]}</dt>" in page_html
    assert "<dt>_" not in page_html  # bookkeeping of the page is not a parameter
    # the page's "Reproduce in Python" snippet, as shown, after the parameters
    assert panel.code and "import " in panel.code
    code_block = f'<code class="language-python">{html.escape(panel.code, quote=True)}</code>'
    assert code_block in page_html
    assert page_html.index("<h2>Parameters</h2>") < page_html.index("<h2>Reproduce in Python")
    if page == "optimal_shape_trees":  # the page's widgets, read when the panel was drawn
        assert "<dt>page setting depth</dt><dd>3</dd>" in page_html
    if page == "optimal_shape_trees":  # the gap curve replays the incumbents in the report
        gap = panel.figures["lit_gap_fig"]
        main = app.session_state["_lit_results"][1]["models"]["main"]
        assert len(gap.frames) == len(main.incumbents_) >= 2
        assert "Plotly.addFrames(" in page_html


def test_without_a_browser_the_image_buttons_say_why(app, monkeypatch):
    monkeypatch.setattr(images, "available", lambda: False)
    run_feature_ranking(app)
    report_button, png_button, svg_button = export_buttons(app, "feature_ranking")
    assert png_button.proto.disabled and svg_button.proto.disabled
    assert not report_button.proto.disabled
    assert png_button.proto.help == NO_IMAGES
    assert any(c.value == NO_IMAGES for c in app.caption)
    assert not app.exception
    # the file itself, if asked for anyway, explains instead of failing
    panel = app.session_state["_result_panels"]["feature_ranking"]
    monkeypatch.setattr(images, "browser_path", lambda: "/nonexistent/chromium")
    archive = zipfile.ZipFile(io.BytesIO(panel.images_zip("png")))
    assert archive.namelist() == ["problems.txt"]
    assert archive.read("problems.txt").startswith(b"No image could be made: ")


def test_a_download_that_fails_unexpectedly_says_why_instead_of_raising(app, monkeypatch):
    """The export callables run after the click, where an exception would reach the browser
    as a traceback: a report or image failure of any kind gives a file saying why."""
    import engine.report

    run_feature_ranking(app)
    panel = app.session_state["_result_panels"]["feature_ranking"]

    def broken(*args, **kwargs):
        raise RuntimeError("figure 3 has no data")

    monkeypatch.setattr(engine.report, "build_report", broken)
    monkeypatch.setattr(images, "figures_zip", broken)
    page = panel.export_files["feature_ranking_report_dl"]()
    assert "The report could not be made" in page and "RuntimeError: figure 3 has no data" in page
    archive = zipfile.ZipFile(io.BytesIO(panel.export_files["feature_ranking_png_dl"]()))
    assert archive.namelist() == ["problems.txt"]
    assert b"figure 3 has no data" in archive.read("problems.txt")


@pytest.mark.skipif(not images.available(), reason="needs Chromium (apt-get install chromium)")
def test_a_method_pages_figures_as_png_and_svg(app):
    """Literati's figures through the page's own image buttons: one image per recorded
    figure, in the order drawn, of the figure's size (PNG at scale 2)."""
    run_optimal_shape_trees(app)
    panel = app.session_state["_result_panels"]["optimal_shape_trees"]
    keys = list(panel.figures)
    gap_at = keys.index("lit_gap_fig")
    gap = panel.figures["lit_gap_fig"]
    pngs = zipfile.ZipFile(io.BytesIO(on_click(panel.export_files["optimal_shape_trees_png_dl"])))
    names = pngs.namelist()
    assert len(names) == len(keys) and "problems.txt" not in names
    assert all(n.startswith(f"{i + 1:02d}-") and n.endswith(".png") for i, n in enumerate(names))
    data = pngs.read(names[gap_at])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (2 * images.DEFAULT_WIDTH, 2 * gap.layout.height)
    svgs = zipfile.ZipFile(io.BytesIO(on_click(panel.export_files["optimal_shape_trees_svg_dl"])))
    svg = svgs.read(svgs.namelist()[gap_at]).decode("utf-8")
    assert svg.startswith("<svg") and f'height="{gap.layout.height}"' in svg[:400]
    # the SVG draws the gap figure's state: its slider at the last incumbent
    n = len(gap.frames)
    assert n >= 2 and f"Incumbent #{n}</text>" in svg
