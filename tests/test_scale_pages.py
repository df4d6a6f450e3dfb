"""Pages on a large upload (issue 20 point 4): the sidebar's seeded stratified subsample,
the caption every result carries while it is on, its link parameters, and a page's offer
when its method would exceed its budget.  The thresholds are lowered so that a few
thousand rows stand in for 200,000 (one slow test uses the real size)."""

import numpy as np
import pandas as pd
import pytest

import engine.scale
import pages._scale
from tests.conftest import APPTEST_TIMEOUT as TIMEOUT


def csv_bytes(n: int, seed: int = 0) -> bytes:
    """``n`` rows of 5 features and a three-class target (shares 60 / 30 / 10 %)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 5)).round(3), columns=[f"x{j}" for j in range(5)])
    frame["label"] = rng.choice(["common", "middle", "rare"], size=n, p=[0.6, 0.3, 0.1])
    return frame.to_csv(index=False).encode()


def dataset_line(at) -> str:
    return next(m.value for m in at.markdown if "rows x" in m.value)


def upload(at, n: int, name: str = "big.csv"):
    at.file_uploader(key="uploader").set_value((name, csv_bytes(n), "text/csv")).run()
    assert not at.exception, at.exception
    return at


@pytest.mark.slow  # whole-page runs
def test_sidebar_subsample_is_offered_chosen_and_said_everywhere(app, monkeypatch):
    monkeypatch.setattr(pages._scale, "SUBSAMPLE_FROM_ROWS", 2_000)
    upload(app, 3_000)
    toggle = app.toggle(key="subsample")
    assert toggle.value is False  # offered, never on by itself
    assert "3,000 rows x 5 features; target" in dataset_line(app)
    toggle.set_value(True).run()
    app.number_input(key="subsample_rows").set_value(1_000).run()
    line = dataset_line(app)
    assert "1,000 rows x 5 features" in line
    assert "on a seeded stratified subsample of 1,000 of 3,000 rows (seed 0)" in line
    assert dict(app.query_params)["sub"] in ("1000", ["1000"])
    # another seed, other rows; off again: every row, no note
    app.number_input(key="subsample_seed").set_value(7).run()
    assert "(seed 7)" in dataset_line(app)
    app.toggle(key="subsample").set_value(False).run()
    assert "3,000 rows x 5 features; target" in dataset_line(app)
    assert "subsample" not in dataset_line(app)
    assert "sub" not in dict(app.query_params)
    assert not app.exception


@pytest.mark.slow  # whole-page runs
def test_small_tables_get_no_offer(app):
    upload(app, 300, "small.csv")
    assert not [t for t in app.toggle if t.key == "subsample"]


@pytest.mark.slow  # whole-page runs and a fit
def test_a_page_offers_the_subsample_and_its_result_says_so(app, monkeypatch):
    """A steep cost curve makes 3,000 rows exceed the Conditional inference fit's budget:
    the page names the estimate and offers the subsample; once used, the fit's result
    panel, its report notes and the run's meta say which rows it ran on."""
    monkeypatch.setattr(pages._scale, "SUBSAMPLE_FROM_ROWS", 2_000)
    steep = engine.scale.CostCurve("cit", "a steep test curve", 1e-2, 1.5, 200_000)
    monkeypatch.setitem(engine.scale.CURVES, "cit", steep)
    upload(app, 3_000)
    app.switch_page("pages/conditional_inference.py").run()
    assert not app.exception, app.exception
    offer = [i.value for i in app.info if "time budget" in i.value]
    assert offer and "3,000 rows x 5 features" in offer[0]
    button = next(b for b in app.button if b.key == "ci_subsample_btn")
    rows = engine.scale.rows_within("cit", 600.0 / (1 + 50), 5)
    assert button.label == f"Use a subsample of {min(rows, 3_000):,} rows"
    button.click().run()
    assert app.toggle(key="subsample").value is True
    assert app.number_input(key="subsample_rows").value == min(rows, 3_000)
    app.button(key="ci_run").click().run()
    job = app.session_state["ci_job"]
    assert job.join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    note = f"on a seeded stratified subsample of {min(rows, 3_000):,} of 3,000 rows (seed 0)"
    assert any(note in c.value for c in app.caption)
    meta = app.session_state["ci_job_meta"]
    assert meta["subsample"] == {
        "rows": min(rows, 3_000),
        "of": 3_000,
        "seed": 0,
        "strata": "class",
    }
    assert meta["recipe"]["subsample"]["rows"] == min(rows, 3_000)


@pytest.mark.slow  # whole-page runs
def test_feature_ranking_waits_for_a_choice_before_a_long_in_page_fit(app, monkeypatch):
    """The Feature ranking page fits its model while it draws: beyond 10 s (a steep curve
    here) it fits nothing until the user takes the subsample or fits on every row."""
    monkeypatch.setattr(pages._scale, "SUBSAMPLE_FROM_ROWS", 2_000)
    steep = engine.scale.CostCurve("sklearn_tree", "a steep test curve", 1e-3, 1.5, 200_000)
    monkeypatch.setitem(engine.scale.CURVES, "sklearn_tree", steep)
    upload(app, 3_000)
    app.switch_page("pages/feature_ranking.py").run()
    assert not app.exception, app.exception
    assert any("time budget of 10 s" in i.value for i in app.info)
    anyway = app.checkbox(key="tg_fit_anyway")
    assert anyway.value is False
    assert not app.get("plotly_chart")  # nothing fitted, nothing drawn
    anyway.check().run()
    assert not app.exception, app.exception
    assert app.get("plotly_chart")
    assert not any("subsample of" in c.value for c in app.caption)


@pytest.mark.slow  # a 200,000-row upload (about half a minute)
def test_a_200000_row_upload_gets_the_offer_with_the_measured_curves(app):
    """At the row cap, with the real cost curves: the sidebar offers the subsample, and the
    Feature ranking page, whose default model is fitted while it draws, fits nothing on
    all rows without asking."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        rng.normal(size=(200_000, 30)).round(2), columns=[f"x{j}" for j in range(30)]
    )
    frame["label"] = np.where(frame["x0"] + frame["x1"] > 0, "yes", "no")
    at = app
    at.file_uploader(key="uploader").set_value(
        ("cap.csv", frame.to_csv(index=False).encode(), "text/csv")
    ).run()
    assert not at.exception, at.exception
    assert "200,000 rows x 30 features; target" in dataset_line(at)
    assert at.toggle(key="subsample").value is False
    at.switch_page("pages/feature_ranking.py").run()
    assert not at.exception, at.exception
    offer = next(i.value for i in at.info if "time budget of 10 s" in i.value)
    # timed at the rows it fits: the training share (test share 0.25 by default)
    assert "150,000 training rows (of 200,000) x 30 features" in offer
    fit_rows = engine.scale.rows_within("sklearn_tree", 10.0 / (6 / 8), 30)
    rows = int(fit_rows / 0.75) // 1_000 * 1_000
    assert any(b.label == f"Use a subsample of {rows:,} rows" for b in at.button)
    assert not at.get("plotly_chart")


@pytest.mark.slow  # whole-page runs
def test_compare_estimates_the_whole_job_from_the_curves(app, monkeypatch):
    """The Compare page times every model on every fold's training rows plus the refits
    (steep curves make 3,000 rows take minutes), says what that counts, and offers the
    subsample whose whole job fits the budget."""
    import engine.compare_estimate
    from engine.compare_estimate import estimate_comparison
    from engine.scale import format_seconds

    for method in ("sklearn_tree", "cart"):
        steep = engine.scale.CostCurve(method, "a steep test curve", 1e-4, 1.2, 200_000)
        monkeypatch.setitem(engine.scale.CURVES, method, steep)
    # the page scales scikit-learn's fits by a probe fit on the table (test_scale checks it)
    monkeypatch.setattr(engine.compare_estimate, "measured_speed", lambda X, y, task: 0.9)
    upload(app, 3_000)
    app.switch_page("pages/compare.py").run()
    assert not app.exception, app.exception
    chosen = app.multiselect(key="cmp_models").value
    folds = app.slider(key="cmp_folds").value
    budget = app.number_input(key="cmp_budget").value
    # the scikit-learn fits are scaled by a probe fit on this table (measured_speed)
    (speed,) = app.session_state["_table_speed"].values()
    assert speed == 0.9
    # the page refits only the single trees it draws (refit="trees")
    options = dict(n_splits=folds, task="classification", n_classes=3, speed=speed, refit="trees")
    want = estimate_comparison(dict.fromkeys(chosen, {}), 3_000, 5, **options)
    every = estimate_comparison(dict.fromkeys(chosen, {}), 3_000, 5, **{**options, "refit": True})
    n_trees = sum(engine.compare_estimate.REGISTRY[key].tree_figure for key in chosen)
    assert 1 <= n_trees < len(chosen)  # the defaults: a tree and ensembles
    assert want.fold_seconds == pytest.approx(every.fold_seconds)
    assert want.refit_seconds < every.refit_seconds
    unscaled = estimate_comparison(dict.fromkeys(chosen, {}), 3_000, 5, **{**options, "speed": 1})
    assert want.seconds == pytest.approx(unscaled.seconds * speed)  # all three are scikit-learn's
    assert want.seconds > budget  # the offer is drawn
    offer = next(i.value for i in app.info if "time budget" in i.value)
    assert format_seconds(want.seconds) in offer
    assert f"{folds} folds x {len(chosen)} models on" in offer
    refits = f"{n_trees} refit{'s' if n_trees != 1 else ''}"
    assert f"plus {refits} on all 3,000 rows (only the trees the page draws; the other" in offer
    assert f"at {speed:.2g}x the curve's time (a probe fit on this table)" in offer
    button = next(b for b in app.button if b.key == "cmp_subsample_btn")
    rows = int(
        button.label.removeprefix("Use a subsample of ").removesuffix(" rows").replace(",", "")
    )
    assert rows < 3_000  # (the steep curve: 1,000 rows fit the budget, 3,000 do not)
    assert estimate_comparison(dict.fromkeys(chosen, {}), rows, 5, **options).seconds <= budget
    over = estimate_comparison(dict.fromkeys(chosen, {}), rows + 1_000, 5, **options)
    assert over.seconds > budget


@pytest.mark.slow  # whole-page runs
def test_compare_offers_no_subsample_after_a_full_run_within_the_budget(app, monkeypatch):
    """Once a run of the same settings finished every fit within the budget, the page says
    how long it took instead of the (steep test curve's) estimate and offers no subsample;
    other settings get the estimate and the offer back."""
    import engine.compare_estimate

    steep = engine.scale.CostCurve("sklearn_tree", "a steep test curve", 1e-4, 1.2, 200_000)
    monkeypatch.setitem(engine.scale.CURVES, "sklearn_tree", steep)
    monkeypatch.setattr(engine.compare_estimate, "measured_speed", lambda X, y, task: 1.0)
    upload(app, 3_000)
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree", "sklearn_forest"])
    app.number_input(key="cmp_budget").set_value(30).run()  # the curve: 77 s, 1,000 rows 21 s
    assert any(b.key == "cmp_subsample_btn" for b in app.button)
    app.button(key="cmp_run").click().run()
    job = app.session_state["cmp_job"]
    assert job.join(TIMEOUT) and job.status == "done"
    app.run()
    assert not app.exception, app.exception
    assert not any(b.key == "cmp_subsample_btn" for b in app.button)
    assert not any("time budget" in i.value for i in app.info)
    said = next(c.value for c in app.caption if c.value.startswith("The last run of these"))
    assert f"finished every fit in {job.snapshot().elapsed:.1f} s on these 3,000 rows" in said
    assert "within its time budget of 30 s" in said
    # other settings (fewer folds, the curve: 37 s): not run yet, so the offer again
    app.slider(key="cmp_folds").set_value(3).run()
    assert any(b.key == "cmp_subsample_btn" for b in app.button)
    assert not any(c.value.startswith("The last run of these") for c in app.caption)


@pytest.mark.slow  # whole-page runs
def test_split_strategies_estimates_the_whole_job_from_the_curves(app, monkeypatch):
    """The Split strategies page times its cross-validation as Compare does: one CART per
    strategy (CART's curve at the section's depth) on every fold's training rows plus the
    refits, says what that counts, and offers the subsample whose whole job fits."""
    from engine.cart.profile import strategy_models
    from engine.compare_estimate import estimate_comparison
    from engine.scale import format_seconds

    steep = engine.scale.CostCurve("cart", "a steep test curve", 2e-4, 1.5, 200_000)
    monkeypatch.setitem(engine.scale.CURVES, "cart", steep)
    upload(app, 3_000)
    app.switch_page("pages/split_strategies.py").run()
    assert not app.exception, app.exception
    strategies = app.multiselect(key="ss_strategies").value
    folds = app.slider(key="ss_cv_folds").value
    budget = app.number_input(key="ss_cv_budget").value
    models = strategy_models(
        strategies,
        max_depth=app.slider(key="ss_cv_depth").value,
        min_samples_leaf=app.number_input(key="ss_msl").value,
        n_candidates=app.number_input(key="ss_k").value,
        criterion=app.selectbox(key="ss_criterion").value,
    )
    options = dict(n_splits=folds, task="classification", n_classes=3)
    want = estimate_comparison(models, 3_000, 5, **options)
    assert not want.without_curve and len(want.models) == len(strategies) >= 2
    assert want.seconds > budget  # the offer is drawn
    offer = next(i.value for i in app.info if "time budget" in i.value)
    grow = f"Growing {len(strategies)} trees on each of {folds} folds and on all rows"
    assert f"{grow} would take" in offer
    assert format_seconds(want.seconds) in offer
    assert f"{folds} folds x {len(strategies)} models on" in offer
    assert f"plus {len(strategies)} refits on all 3,000 rows" in offer
    assert "at least" not in offer  # CART has a curve: the estimate is not a lower bound
    button = next(b for b in app.button if b.key == "ss_subsample_btn")
    rows = int(
        button.label.removeprefix("Use a subsample of ").removesuffix(" rows").replace(",", "")
    )
    assert rows < 3_000
    assert estimate_comparison(models, rows, 5, **options).seconds <= budget
    assert estimate_comparison(models, rows + 1_000, 5, **options).seconds > budget
    # a shallower tree costs less: the estimate follows the section's depth (depth / 8)
    app.slider(key="ss_cv_depth").set_value(4).run()
    assert not app.exception, app.exception
    shallow = [m[:1] + ({**m[1], "max_depth": 4},) + m[2:] for m in models]
    half = estimate_comparison(shallow, 3_000, 5, **options)
    assert half.seconds == pytest.approx(want.seconds / 2)
    said = [m.value for m in [*app.info, *app.caption] if "trees on each of" in m.value]
    assert said and format_seconds(half.seconds) in said[0]
