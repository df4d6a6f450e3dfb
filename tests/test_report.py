"""engine.report: the self-contained HTML report (issue 16 point 3).

The browser test opens a report of real method figures (a threshold scan with animation
frames and a slider, a tree, a Partition Tree's growth curve, TreeGrad attributions, a
Literati gap curve) from ``file://`` with every non-file request aborted, checks that each
figure draws, that a slider frame replays, and that the console stays clean.
"""

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.offline import get_plotlyjs
from sklearn.datasets import load_iris

from engine.report import MAX_TABLE_ROWS, build_report, report_filename


def _small_figure(title="Small"):
    return go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], name="line"), layout={"title": title})


def test_plotly_js_is_inline_exactly_once_and_nothing_is_fetched():
    page = build_report(
        "Compare -- iris",
        {"name": "iris", "rows": 150},
        {"folds": 5, "models": ["a", "b"]},
        {"summary": pd.DataFrame({"model": ["a"], "accuracy": [0.9]})},
        [_small_figure("one"), ("second", _small_figure("two"))],
        ["a note"],
    )
    assert page.startswith("<!DOCTYPE html>")
    assert page.count(get_plotlyjs()) == 1
    assert page.count("Plotly.newPlot(") == 2
    # no external resource: no src/href pointing anywhere, no script loaded by URL
    assert not re.search(r"""<(?:script|link|img|iframe)[^>]+(?:src|href)\s*=""", page)
    assert "cdn.plot.ly" not in page.replace(get_plotlyjs(), "")
    for text in (
        "iris",
        "150",
        "folds",
        "[&quot;a&quot;, &quot;b&quot;]",
        "accuracy",
        "a note",
        "one",
        "second",
    ):
        assert text in page, text


def test_user_text_is_escaped_and_tables_are_bounded():
    evil = "<script>alert(1)</script>"
    big = pd.DataFrame({"x": np.arange(MAX_TABLE_ROWS + 5), evil: 0})
    page = build_report(evil, {evil: evil}, {"p": evil}, [(evil, big)], [], [evil])
    assert evil not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f"First {MAX_TABLE_ROWS:,} of {MAX_TABLE_ROWS + 5:,} rows" in page
    assert page.count("</tr>") == MAX_TABLE_ROWS + 1  # header + the rows kept
    with pytest.raises(TypeError, match="table 'bad' must be a pandas DataFrame"):
        build_report("t", {}, {}, {"bad": [1, 2]}, [])
    with pytest.raises(TypeError, match="figure 'bad' must be a plotly Figure"):
        build_report("t", {}, {}, {}, {"bad": {"data": []}})
    assert report_filename("Compare -- iris / <run>") == "treelab-compare-iris-run.html"


def test_the_snippet_is_shown_as_escaped_code():
    code = 'from engine import x\nprint(x < 3 and "<b>")\n'
    page = build_report("t", {}, {"depth": 3}, [], [], code=code)
    assert "<h2>Reproduce in Python</h2>" in page
    assert "print(x &lt; 3 and &quot;&lt;b&gt;&quot;)" in page and "<b>" not in page
    assert "Reproduce in Python" not in build_report("t", {}, {}, [], [])


def _method_figures():
    """Real figures of four methods, built from their engine results."""
    from sklearn.ensemble import GradientBoostingClassifier

    from engine.cart.estimator import CARTClassifier
    from engine.cart.profile import split_profile
    from engine.figures.literati import gap_figure
    from engine.figures.partition import growth_figure
    from engine.figures.splits import threshold_scan_figure
    from engine.figures.tree import tree_figure
    from engine.figures.treegrad import attribution_figure
    from engine.literati.estimator import LiteratiClassifier
    from engine.partition.estimators import PartitionTreeRegressor
    from engine.tree import from_sklearn
    from engine.treegrad import explain

    X, y = load_iris(return_X_y=True)
    profile = split_profile(
        X, y, 2, ["exhaustive", "quantile"], task="classification", n_classes=3, random_state=0
    )
    scan = threshold_scan_figure(profile, class_names=["setosa", "versicolor", "virginica"])
    assert scan.frames and scan.layout.sliders  # the replayable figure
    tree = tree_figure(CARTClassifier(max_depth=4).fit(X, y).tree_)
    growth_model = PartitionTreeRegressor(max_leaves=10).fit(X[:, :3], X[:, 3])
    growth = growth_figure(growth_model.trace_)
    gb = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    attributions = attribution_figure(
        explain.explain(from_sklearn(gb), X[3], 2, explain.MethodParams(steps=5)).scores,
        ["sepal length", "sepal width", "petal length", "petal width"],
    )
    search = LiteratiClassifier(max_depth=2, time_limit=1.0).start(X, y)
    while not search.step(max_seconds=0.2):
        pass
    gap = gap_figure(search.trace())
    return {
        "Threshold scan (split strategies)": scan,
        "CART tree": tree,
        "Partition Tree growth": growth,
        "TreeGrad attributions": attributions,
        "Literati gap": gap,
    }


@pytest.mark.slow
@pytest.mark.e2e
def test_the_report_draws_offline_in_chromium(page, tmp_path):
    figures = _method_figures()
    report = build_report(
        "TreeLab report test",
        {"name": "iris", "rows": 150, "features": 4},
        {"max_depth": 4},
        {"numbers": pd.DataFrame({"a": [1.5, 2.5]})},
        figures,
        ["offline check"],
    )
    path = tmp_path / "report.html"
    path.write_text(report, encoding="utf-8")
    errors, blocked = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(path.as_uri())
    for i in range(len(figures)):
        div = page.locator(f"#figure-{i}")
        div.locator(".plot-container svg.main-svg").first.wait_for(timeout=30_000)
        assert div.locator(".plot-container").count() == 1
        assert div.locator("g.trace, g.scatterlayer .trace, g.barlayer .trace").count() > 0, i
    # the threshold scan's slider is drawn and its frames replay
    scan = page.locator("#figure-0")
    assert scan.locator("g.slider-container").count() == 1
    name = figures["Threshold scan (split strategies)"].frames[-1].name
    moved = page.evaluate(
        """async (name) => {
            const gd = document.getElementById('figure-0');
            await Plotly.animate(gd, [name], {frame: {duration: 0}, transition: {duration: 0}});
            return gd.layout.sliders[0].active;
        }""",
        name,
    )
    assert moved == len(figures["Threshold scan (split strategies)"].frames) - 1
    page.screenshot(path=tmp_path / "report.png", full_page=True)
    assert errors == [], errors
    assert blocked == [], blocked  # nothing even tried to go to the network
