"""Conditional density page: figure builders, live growth steps, comparison, AppTest, browser."""

import json

import numpy as np
import pytest
from sklearn.datasets import load_iris

from engine.data import DataError, load_bundled, make_dataset
from engine.figures.partition import (
    cells_figure,
    class_proba_figure,
    comparison_figure,
    density_heatmap_figure,
    growth_figure,
    slice_figure,
)
from engine.jobs import Job
from engine.partition import (
    PartitionForestClassifier,
    PartitionForestRegressor,
    PartitionTreeClassifier,
    PartitionTreeRegressor,
)
from engine.partition.explore import (
    comparison_steps,
    density_grid,
    growth_steps,
    section_cells,
    slice_frame,
    split_rows,
)
from engine.teaching.glossary import unlink_terms
from tests.conftest import APPTEST_TIMEOUT as TIMEOUT
from tests.conftest import held_until_stop


def _hetero(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-2, 2, n)
    y = np.sin(x) + (0.1 + 0.5 * np.abs(x)) * rng.randn(n)
    return np.column_stack([x, rng.rand(n)]), y


# -- figure builders -----------------------------------------------------------------------
@pytest.mark.slow
def test_slice_figure_integrates_to_what_the_engine_says():
    X, y = _hetero(400, 0)
    m = PartitionForestRegressor(n_estimators=5, max_leaves=16, random_state=0).fit(X, y)
    s = m.slice(X[0])
    fig = slice_figure([{"label": "row 0", "true_y": y[0], **s}], target="y")
    line = fig.data[0]
    xs, ys = np.asarray(line.x, dtype=float), np.asarray(line.y, dtype=float)
    # the step line goes (e0,h0) (e1,h0) (e1,h1) ...: pairs of points per piece
    area = np.sum((xs[1::2] - xs[0::2]) * ys[0::2])
    assert area == pytest.approx(1.0, abs=1e-9)
    # every drawn height is the engine's density at a y inside that piece
    mids = 0.5 * (xs[1::2] + xs[0::2])
    assert np.allclose(ys[0::2], m.density(np.tile(X[0], (len(mids), 1)), mids), atol=1e-12)
    assert fig.data[1].x[0] == pytest.approx(y[0])  # true y marked
    # an edited x of the same row: one more density, no second true-y line
    fig2 = slice_figure(
        [
            {"label": "row 0", "true_y": y[0], **s},
            {"label": "row 0 (edited)", "true_y": y[0], **m.slice(X[1])},
        ]
    )
    assert [d.name for d in fig2.data].count("true y (row 0)") == 1 and len(fig2.data) == 3
    assert fig.layout.xaxis.title.text == "y"  # the target's name, no "(target units)"
    assert fig.layout.yaxis.title.text == "density (per unit of y)"


def test_class_proba_figure_bars_match_predict_proba():
    X, y = load_iris(return_X_y=True)
    m = PartitionTreeClassifier().fit(X, y)
    probas = [
        {"label": f"row {i}", "proba": m.predict_proba(X[i : i + 1])[0], "true_class": "abc"[y[i]]}
        for i in (0, 75)
    ]
    fig = class_proba_figure(list("abc"), probas)
    assert len(fig.data) == 2
    for bar, p in zip(fig.data, probas, strict=True):
        assert np.allclose(bar.y, p["proba"]) and sum(bar.y) == pytest.approx(1.0)
        assert list(bar.marker.line.width).count(3) == 1  # only the true class outlined


def test_heatmap_shape_and_columns_are_slices():
    X, y = _hetero(300, 1)
    m = PartitionTreeRegressor(max_leaves=24).fit(X, y)
    values = np.linspace(-2, 2, 7)
    y_grid = np.linspace(*m.y_box_, 500)
    z = density_grid(m, X[0], 0, values, y_grid)
    assert z.shape == (500, 7)
    dy = y_grid[1] - y_grid[0]
    assert np.allclose(z.sum(axis=0) * dy, 1.0, atol=0.02)  # each column is a density over y
    xq = X[0].copy()
    xq[0] = values[3]
    s = m.slice(xq)
    k = np.clip(np.searchsorted(s["edges"], y_grid[100]) - 1, 0, len(s["heights"]) - 1)
    assert z[100, 3] == pytest.approx(s["heights"][k])
    fig = density_heatmap_figure(
        values, z, feature="x", target="y", y_grid=y_grid, x_current=X[0, 0]
    )
    assert np.asarray(fig.data[0].z).shape == (500, 7)
    # axis titles are the column names (no "(feature units)" / "(target units)" placeholders)
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("x", "y")
    c = PartitionTreeClassifier().fit(*load_iris(return_X_y=True))
    zc = density_grid(c, load_iris().data[0], 2, np.linspace(1, 7, 9))
    assert zc.shape == (3, 9) and np.allclose(zc.sum(axis=0), 1.0)


def test_cells_figure_draws_one_rectangle_per_cell_and_section_partitions_the_plane():
    X, y = _hetero(400, 2)
    m = PartitionTreeRegressor(max_leaves=20).fit(X, y)
    cells = m.cells()
    fig = cells_figure(
        cells,
        X[:, 0],
        y,
        feature_index=0,
        feature="x",
        target="y",
        y_box=m.y_box_,
        x_current=X[5, 0],
    )
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rects) == len(cells) == m.partition_tree_.n_leaves
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("x", "y")
    assert sorted((r.y0, r.y1) for r in rects) == sorted((c["y_low"], c["y_high"]) for c in cells)
    assert sum(s.type == "line" for s in fig.layout.shapes) == 1  # the current x
    sec = section_cells(cells, X[5], 0)
    # the section's cells tile [x range] x [y box]: their areas add up to the rectangle
    lo, hi = X[:, 0].min(), X[:, 0].max()
    area = sum(
        (min(c["x_high"][0], hi) - max(c["x_low"][0], lo)) * (c["y_high"] - c["y_low"])
        for c in sec
        if min(c["x_high"][0], hi) > max(c["x_low"][0], lo)
    )
    assert area == pytest.approx((hi - lo) * (m.y_box_[1] - m.y_box_[0]), rel=1e-9)
    # and for the current x_0 they are exactly the cells of its slice
    at_x = [c for c in sec if c["x_low"][0] < X[5, 0] <= c["x_high"][0]]
    edges = sorted({c["y_low"] for c in at_x} | {c["y_high"] for c in at_x})
    assert np.allclose(edges, m.slice(X[5])["edges"])


def test_cells_figure_categorical_feature_and_target():
    df, _, entry = load_bundled("penguins")
    ds = make_dataset(df, entry["target"], missing="drop")
    j = int(np.flatnonzero(ds.is_categorical)[0])
    m = PartitionTreeClassifier(max_leaves=12, categorical_features=ds.is_categorical)
    m.fit(ds.X, ds.y)
    cells = [{**c, "classes": [ds.classes_[int(k)] for k in c["classes"]]} for c in m.cells()]
    fig = cells_figure(
        cells,
        ds.X[:, j],
        ds.y,
        feature_index=j,
        feature="island",
        target="species",
        classes=list(ds.classes_),
        categories=ds.categories[j],
        x_current=1,
    )
    expected = sum(
        len(c["classes"]) * len(c["x_categories"].get(j, ds.categories[j])) for c in cells
    )
    assert sum(s.type == "rect" for s in fig.layout.shapes) == expected
    assert list(fig.layout.xaxis.ticktext) == ds.categories[j]


@pytest.mark.slow
def test_growth_and_comparison_figures():
    fig = growth_figure([(1, 1.0, 1.1), (2, 0.9, np.nan), (3, 0.8, 0.95)])
    assert list(fig.data[0].y) == [1.0, 0.9, 0.8]
    assert list(fig.data[1].x) == [1, 3]  # NaN validation points skipped
    assert fig.data[2].x[0] == 3  # best validation starred
    import pandas as pd

    t = pd.DataFrame(
        {
            "model": ["a (TreeLab)", "b"],
            "test_nll": [0.5, 0.7],
            "n_out_of_support": [0, 0],
            "fit_seconds": [0.1, 0.2],
        }
    )
    fig = comparison_figure(t, task="regression")
    assert list(fig.data[0].y) == ["b", "a (TreeLab)"]


def test_slice_frame_rows():
    s = {"label": "r", "edges": np.array([0.0, 1.0, 3.0]), "heights": np.array([0.5, 0.25])}
    c = {"label": "q", "classes": ["a", "b"], "proba": np.array([0.3, 0.7])}
    f = slice_frame([s, c], target="t")
    assert len(f) == 4 and list(f["t_low"].iloc[:2]) == [0.0, 1.0]


# -- live growth and comparison ------------------------------------------------------------
def test_tree_fit_steps_equal_fit_and_stop_keeps_a_valid_tree():
    X, y = _hetero(300, 3)
    ref = PartitionTreeRegressor(max_leaves=16).fit(X[:200], y[:200])
    m = PartitionTreeRegressor(max_leaves=16, select_size="last")  # the grown tree
    job = Job(growth_steps, m, X[:200], y[:200], X[200:], y[200:], val_every=3).start()
    assert job.join(60) and job.status == "done"
    assert np.array_equal(m.predict(X), ref.predict(X))
    vals = [v for _, _, v in m.trace_]
    assert np.isfinite(vals[0]) and np.isfinite(vals[-1]) and np.isnan(vals[1])
    assert vals[-1] == pytest.approx(m.nll(X[200:], y[200:])[0])
    # closing the generator early (Stop) leaves a smaller, consistent tree
    m2 = PartitionTreeRegressor(max_leaves=16)
    steps = m2.fit_steps(X[:200], y[:200])
    for _ in range(5):
        next(steps)
    steps.close()
    assert m2.partition_tree_.n_leaves == 5 and len(m2.trace_) == 5
    s = m2.slice(X[0])
    assert np.sum(s["heights"] * np.diff(s["edges"])) == pytest.approx(1.0, abs=1e-9)


def test_stop_keeps_the_forest_grown_so_far():
    import time

    X, y = _hetero(400, 8)
    m = PartitionForestRegressor(n_estimators=500, max_leaves=16, random_state=0)
    job = Job(growth_steps, m, X[:300], y[:300], X[300:], y[300:]).start()
    while job.snapshot().latest is None:
        time.sleep(0.01)
    job.cancel()
    assert job.join(30) and job.status == "cancelled"
    kept = job.result["model"]
    k = len(kept.trees_)
    assert 1 <= k < 500 and len(kept.trace_) == k
    # the bootstrap samples are drawn tree by tree from one seeded stream, so the first k
    # trees of the stopped forest are those of a k-tree forest
    ref = PartitionForestRegressor(n_estimators=k, max_leaves=16, random_state=0)
    ref.fit(X[:300], y[:300])
    assert np.allclose(kept.predict(X), ref.predict(X))


@pytest.mark.parametrize("cls", [PartitionForestRegressor, PartitionForestClassifier])
def test_forest_fit_steps_equal_fit_and_running_nll_is_exact(cls):
    if cls is PartitionForestClassifier:
        X, y = load_iris(return_X_y=True)
    else:
        X, y = _hetero(240, 4)
    tr, va = np.arange(0, len(y), 2), np.arange(1, len(y), 2)
    kw = dict(n_estimators=4, max_leaves=12, random_state=3)
    ref = cls(**kw).fit(X[tr], y[tr])
    m = cls(**kw)
    steps = list(m.fit_steps(X[tr], y[tr], X[va], y[va]))
    assert [s["n_trees"] for s in steps] == [1, 2, 3, 4]
    assert np.array_equal(m.predict(X), ref.predict(X))
    assert steps[-1]["val_nll"] == pytest.approx(ref.nll(X[va], y[va])[0], abs=1e-12)
    assert steps[-1]["train_nll"] == pytest.approx(ref.nll(X[tr], y[tr])[0], abs=1e-12)


@pytest.mark.slow
def test_comparison_rows_and_split():
    X, y = _hetero(500, 5)
    tr, va, te, note = split_rows(len(y), seed=1)
    assert note is None
    assert len(set(tr) | set(va) | set(te)) == 500 and len(te) == 100
    job = Job(
        comparison_steps,
        X[tr],
        y[tr],
        X[te],
        y[te],
        task="regression",
        tree_params={"max_leaves": 24},
        forest_params={"n_estimators": 5},
    ).start()
    assert job.join(120) and job.status == "done", job.error
    rows = {r["model"]: r for r in job.result["rows"]}
    assert len(rows) == 6
    tree = PartitionTreeRegressor(max_leaves=24, random_state=0).fit(X[tr], y[tr])
    assert rows["Partition Tree (TreeLab)"]["test_nll"] == pytest.approx(tree.nll(X[te], y[te])[0])
    from scipy.stats import norm

    const = -norm.logpdf(y[te], y[tr].mean(), y[tr].std()).mean()
    assert rows["Gaussian (constant)"]["test_nll"] == pytest.approx(const)
    # CRPS, pinball and PIT beside the NLL: the Gaussian's closed form (scoringrules) and the
    # tree's piecewise-uniform one
    import scoringrules
    from sklearn.metrics import mean_pinball_loss

    crps_const = scoringrules.crps_normal(y[te], y[tr].mean(), y[tr].std()).mean()
    assert rows["Gaussian (constant)"]["crps"] == pytest.approx(crps_const, rel=1e-10)
    from engine.partition.scoring import DEFAULT_LEVELS

    pin = np.mean(
        [
            mean_pinball_loss(y[te], norm.ppf(t, y[tr].mean(), y[tr].std()) + 0 * y[te], alpha=t)
            for t in DEFAULT_LEVELS
        ]
    )
    assert rows["Gaussian (constant)"]["pinball"] == pytest.approx(pin, rel=1e-10)
    from engine.partition.scoring import conditional_densities, crps, pit

    dens = conditional_densities(tree, X[te])
    assert rows["Partition Tree (TreeLab)"]["crps"] == pytest.approx(crps(dens, y[te]).mean())
    np.testing.assert_allclose(rows["Partition Tree (TreeLab)"]["pit"], pit(dens, y[te]))
    assert 0 <= rows["Partition Tree (TreeLab)"]["pit_ks"] <= 1
    # the heteroscedastic model of this data beats the homoscedastic ones
    het = rows["Heteroscedastic Gaussian (RF mean, RF variance)"]["test_nll"]
    assert het < rows["Random forest + Gaussian residuals"]["test_nll"]
    with pytest.raises(DataError):
        split_rows(10)


# -- AppTest -------------------------------------------------------------------------------
PAGE = "pages/conditional_density.py"


def _grow(at, **widgets):
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    for key, value in widgets.items():
        at.number_input(key=key).set_value(value)
    at.button(key="pt_run").click().run()
    assert at.session_state["pt_job"].join(TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


def _figure(at, key_part):
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec["layout"].get("title", {}).get("text", "")
        if key_part in title:
            return spec
    raise AssertionError(f"no figure titled with {key_part!r}")


def _arr(v):
    """A plotly JSON array (a list or a typed array ``{'dtype', 'bdata'}``) as numpy."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return a.reshape(v["shape"]) if "shape" in v and isinstance(v["shape"], list) else a
    return np.asarray(v)


def _test_rows(at):
    meta = at.session_state["pt_job_meta"]
    return meta["X"][meta["test"]], meta["y"][meta["test"]]


def _compare(at):
    at.button(key="pt_cmp_run").click().run()
    assert at.session_state["pt_cmp_job"].join(TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at.dataframe[-1].value


@pytest.mark.slow
def test_page_regression_grow_slider_and_comparison(app):
    app.selectbox(key="ds").set_value("heteroscedastic").run()
    _grow(app, pt_max_leaves_regression=24)
    assert app.title[0].value == "Conditional density (Partition Tree)"
    model = app.session_state["pt_job"].result["model"]
    # grown to 24 leaves, kept at the best validation size (shown in the Leaves metric)
    t = np.asarray(model.trace_)
    assert model.n_leaves_grown_ == 24 == len(t)
    assert model.partition_tree_.n_leaves == int(t[np.nanargmin(t[:, 2]), 0])
    kept = model.partition_tree_.n_leaves
    assert app.metric[0].value == (str(kept) if kept == 24 else f"{kept} of 24")
    # CRPS / pinball / PIT beside the NLL, and the PIT histogram of the test rows
    from engine.partition.scoring import conditional_densities, crps, pit

    dens = conditional_densities(model, _test_rows(app)[0])
    labels = {m.label: m.value for m in app.metric}
    assert float(labels["Test CRPS"]) == pytest.approx(
        crps(dens, _test_rows(app)[1]).mean(), rel=1e-3
    )
    pit_fig = _figure(app, "PIT histogram")
    counts, _ = np.histogram(pit(dens, _test_rows(app)[1]), bins=np.linspace(0, 1, 11))
    np.testing.assert_allclose(_arr(pit_fig["data"][0]["y"]), counts / counts.sum() * 10)
    before = _arr(_figure(app, "Conditional density")["data"][0]["y"])
    # move the first feature slider: the slice redraws with the engine's density there
    x_key = "pt_x0_view"
    new = float(app.slider(key=x_key).min)
    app.slider(key=x_key).set_value(new).run()
    assert not app.exception
    after = _figure(app, "Conditional density")["data"][0]
    assert not np.array_equal(_arr(after["y"]), before)
    xq = np.array([app.session_state[f"pt_x{j}_view"] for j in range(model.n_features_in_)])
    s = model.slice(xq)
    assert np.allclose(_arr(after["y"])[0::2], s["heights"])
    assert "edited" in after["name"]
    app.button(key="pt_pin_btn").click().run()
    assert len(_figure(app, "Conditional density")["data"]) >= 3  # current + pin (+ true y)
    assert len(app.session_state["_pt_pins"]) == 1
    table = _compare(app)
    assert {"model", "test_nll", "n_out_of_support", "fit_seconds"} <= set(table.columns)
    assert {"crps", "pinball", "pit_ks"} <= set(table.columns)
    assert len(_figure(app, "PIT histograms on the test rows")["data"]) == 6 + 1  # + uniform
    assert len(table) == 6 and (table["n_out_of_support"] >= 0).all()
    assert table.loc[table["model"] == "Partition Tree (TreeLab)", "test_nll"].iloc[
        0
    ] == pytest.approx(model.nll(*_test_rows(app))[0], abs=1e-4)
    # growing again starts a fresh view: no pins, sliders back on a test row
    app.button(key="pt_run").click().run()
    assert app.session_state["pt_job"].join(TIMEOUT)
    app.run()
    assert not app.exception
    assert app.session_state["_pt_pins"] == []
    assert not any(
        "edited" in d.get("name", "") for d in _figure(app, "Conditional density")["data"]
    )


@pytest.mark.slow
def test_page_classification_with_categorical_features_and_forest(app):
    app.selectbox(key="ds").set_value("penguins").run()
    app.switch_page(PAGE).run()
    app.radio(key="pt_kind").set_value("forest").run()
    _grow(app, pt_n_estimators=5)
    model = app.session_state["pt_job"].result["model"]
    assert len(model.trees_) == 5
    bars = _figure(app, "Class probabilities")["data"]
    assert _arr(bars[0]["y"]).sum() == pytest.approx(1.0)
    # a categorical feature is a selectbox with labels; changing it redraws the bars
    island = next(
        j for j, n in enumerate(app.session_state["pt_job_meta"]["feature_names"]) if n == "island"
    )
    box = app.selectbox(key=f"pt_x{island}_view")
    box.set_value((box.value + 1) % 3).run()
    assert not app.exception
    app.selectbox(key="pt_feature_view").set_value(island).run()
    assert not app.exception
    heat = _figure(app, "p(species | island)")["data"][0]
    assert len(heat["x"]) == 3 and len(heat["y"]) == 3
    table = _compare(app)
    assert len(table) == 4 and (table["accuracy"] > 0.8).all()
    # draw the last tree, then grow a smaller forest: the view follows the new model
    app.number_input(key="pt_tree_view").set_value(4).run()
    assert not app.exception
    app.number_input(key="pt_n_estimators").set_value(2)
    app.button(key="pt_run").click().run()
    assert app.session_state["pt_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert app.number_input(key="pt_tree_view").value == 0
    # another dataset: the penguins model stays on show, and the page says so
    assert not any("another dataset" in i.value for i in app.info)
    app.selectbox(key="ds").set_value("iris").run()
    assert not app.exception, app.exception
    assert any("another dataset" in i.value for i in app.info)
    assert any("Palmer penguins" in unlink_terms(c.value) for c in app.caption)


@pytest.mark.slow
def test_page_parameters_come_back_when_streamlit_dropped_them(app):
    # Switching page while the growth's fragment polls made Streamlit drop the panel's
    # widget values (seen in the browser: Forest, depth and budget back at their defaults).
    app.switch_page(PAGE).run()
    app.radio(key="pt_kind").set_value("forest").run()
    app.number_input(key="pt_max_depth").set_value(3).run()
    app.number_input(key="pt_n_estimators").set_value(7).run()
    app.switch_page("pages/data.py").run()
    for key in ("pt_kind", "pt_max_depth", "pt_n_estimators"):
        del app.session_state[key]  # what Streamlit's stale-widget cleanup did
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    assert app.radio(key="pt_kind").value == "forest"
    assert app.number_input(key="pt_max_depth").value == 3
    assert app.number_input(key="pt_n_estimators").value == 7


@pytest.mark.slow
def test_page_what_if_view_survives_a_page_switch(app):
    # Streamlit forgets *_view widgets on another page: the sliders came back at their
    # minimum while the row stayed, so the page showed a density for an x nobody chose.
    app.selectbox(key="ds").set_value("iris").run()
    _grow(app, pt_max_leaves_classification=8)
    X = app.session_state["pt_job_meta"]["X"]
    rows = app.selectbox(key="pt_row_view").options
    app.selectbox(key="pt_row_view").set_value(int(rows[3].split()[1])).run()
    row = app.selectbox(key="pt_row_view").value
    app.slider(key="pt_x2_view").set_value(6.5).run()
    want = [app.slider(key=f"pt_x{j}_view").value for j in range(4)]
    assert want[2] == 6.5 and want[:2] == list(X[row, :2])
    app.switch_page("pages/data.py").run()
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    assert app.selectbox(key="pt_row_view").value == row
    assert [app.slider(key=f"pt_x{j}_view").value for j in range(4)] == want
    # a new model starts from its first test row's values again
    app.button(key="pt_run").click().run()
    assert app.session_state["pt_job"].join(TIMEOUT)
    app.run()
    first = app.selectbox(key="pt_row_view").value
    assert [app.slider(key=f"pt_x{j}_view").value for j in range(4)] == list(X[first])


@pytest.mark.slow
def test_page_bad_parameters_and_tiny_upload(app):
    csv = "a,b,t\n" + "".join(f"{i},{i % 3},{i * 0.5}\n" for i in range(12))
    app.file_uploader(key="uploader").set_value(("tiny.csv", csv.encode(), "text/csv")).run()
    app.switch_page(PAGE).run()
    assert not app.exception
    assert any("at least 20" in e.value for e in app.error)


@pytest.mark.slow
def test_page_new_model_tells_the_browser_its_row_and_feature(app, monkeypatch):
    # A new model reset the row / feature / overlay pickers by deleting their state: the script
    # used the new first test row and most important feature, but the browser, which had not
    # drawn them while the model grew, kept showing the old labels ("row 2 (y = -0.95)" over
    # the slices of row 3) until the next click.  The reset must *set* the values, which
    # Streamlit sends to the browser (set_value).
    import threading

    import engine.partition.service as service

    app.selectbox(key="ds").set_value("iris").run()
    _grow(app, pt_max_leaves_classification=8)
    rows = app.selectbox(key="pt_row_view").options
    app.selectbox(key="pt_row_view").set_value(int(rows[3].split()[1])).run()
    app.multiselect(key="pt_overlay_view").set_value([int(rows[4].split()[1])]).run()
    app.number_input(key="seed").set_value(5).run()
    # hold the growth until the Grow click's rerun has drawn the live view (as in a browser,
    # the result widgets are then not on the page), so the next run draws them anew
    go = threading.Event()
    steps = service.growth_steps

    def held(*args, **kwargs):
        go.wait(TIMEOUT)
        return (yield from steps(*args, **kwargs))

    monkeypatch.setattr(service, "growth_steps", held)
    app.button(key="pt_run").click().run()
    assert not app.exception, app.exception
    job = app.session_state["pt_job"]
    assert not job.finished
    assert "pt_row_view" not in [b.key for b in app.get("selectbox")]
    go.set()
    assert job.join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    meta = app.session_state["pt_job_meta"]
    model = job.result["model"]
    first_feature = int(np.argsort(-np.asarray(model.feature_importances_), kind="stable")[0])
    row_box, feature_box = app.selectbox(key="pt_row_view"), app.selectbox(key="pt_feature_view")
    assert row_box.value == meta["test"][0] and row_box.proto.set_value
    assert feature_box.value == first_feature and feature_box.proto.set_value
    overlay = app.multiselect(key="pt_overlay_view")
    assert overlay.value == [] and overlay.proto.set_value
    assert any(f"for row {meta['test'][0]}:" in unlink_terms(c.value) for c in app.caption)


@pytest.mark.slow
def test_page_says_when_the_density_floor_decides_the_nll(app):
    # A target in units of 1e12 has densities of about 1e-13 per unit of y, below the default
    # floor 1e-9: every test row was floored, the test NLL was exactly -log(1e-9) = 20.7233
    # for the Partition Tree and every baseline, and "out of support" said 1.
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=100), rng.normal(size=100)
    csv = "a,b,y\n" + "".join(
        f"{u},{v},{1e12 * (u + w)}\n" for u, v, w in zip(a, b, rng.normal(size=100), strict=True)
    )
    app.file_uploader(key="uploader").set_value(("huge.csv", csv.encode(), "text/csv")).run()
    _grow(app)
    meta = app.session_state["pt_job_meta"]
    model = app.session_state["pt_job"].result["model"]
    te = meta["test"]
    d = model.density(meta["X"][te], meta["y"][te])
    n_floored = int(np.sum(d < meta["floor"]))
    assert n_floored == len(te)  # the situation the page must explain
    text = " ".join(w.value for w in app.warning)
    assert f"{n_floored} of the {len(te)} test rows" in text
    assert "smaller density floor" in text
    metric = {m.label: m.value for m in app.metric}
    assert metric["Test rows at the floor"] == str(n_floored)
    table = _compare(app)  # every model's NLL is the floor's: said under the table
    assert np.allclose(table["test_nll"], -np.log(meta["floor"]))
    assert any(
        w.value.startswith("Every test row of Partition Tree (TreeLab), ")
        and "does not rank the models" in w.value
        for w in app.warning
    )
    # a dataset on a unit scale: no such warning
    app.selectbox(key="ds").set_value("diabetes").run()
    _grow(app)
    assert not any("density floor" in w.value for w in app.warning)


@pytest.mark.slow
def test_page_running_growth_can_be_stopped_from_a_dataset_it_cannot_use(app, monkeypatch):
    # A growth running while the user picked a dataset the page refuses (< 20 rows) went on
    # out of sight, with no Stop button, until its budget (up to an hour).
    import engine.partition.service as service

    monkeypatch.setattr(service, "growth_steps", held_until_stop(service.growth_steps))
    app.selectbox(key="ds").set_value("iris").run()
    app.switch_page(PAGE).run()
    app.button(key="pt_run").click().run()
    job = app.session_state["pt_job"]
    csv = "a,b,t\n" + "".join(f"{i},{i % 3},{i * 0.5}\n" for i in range(12))
    app.switch_page("pages/data.py").run()
    app.file_uploader(key="uploader").set_value(("tiny.csv", csv.encode(), "text/csv")).run()
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    assert any("at least 20" in e.value for e in app.error)
    assert not job.finished
    assert any("growth is still running on **Iris**" in i.value for i in app.info)
    app.button(key="pt_stop").click().run()
    assert job.join(TIMEOUT) and job.status == "cancelled"
    assert not any("still running" in i.value for i in app.info)


# -- browser -------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.e2e
def test_browser_grow_and_move_a_feature_slider(page, app_url, tmp_path):
    from playwright.sync_api import expect

    from tests.test_e2e import no_exception, wait_idle

    page.set_viewport_size({"width": 1400, "height": 2600})
    page.goto(app_url + "/conditional_density?ds=heteroscedastic")
    expect(page.get_by_role("heading", name="Conditional density (Partition Tree)")).to_be_visible(
        timeout=90_000
    )
    wait_idle(page)
    page.get_by_role("button", name="Grow").click()
    expect(page.get_by_text("Test rows out of support", exact=True)).to_be_visible(timeout=60_000)
    wait_idle(page)
    no_exception(page)
    chart = page.get_by_test_id("stPlotlyChart").filter(has_text="Conditional density p(y")
    line = chart.locator("g.scatterlayer g.trace path.js-line").first
    expect(line).to_be_attached(timeout=30_000)
    before = line.get_attribute("d")
    page.screenshot(path=tmp_path / "pt_before.png")
    sliders = (
        page.get_by_test_id("stExpander").filter(has_text="Feature values").get_by_role("slider")
    )
    sliders.first.focus()
    page.keyboard.press("Home")  # x to its minimum
    wait_idle(page)
    expect(chart.get_by_text("(edited x)").first).to_be_visible(timeout=30_000)
    expect(line).not_to_have_attribute("d", before, timeout=30_000)
    no_exception(page)
    page.screenshot(path=tmp_path / "pt_after.png")
