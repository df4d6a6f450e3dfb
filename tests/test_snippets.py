"""Reproduce in Python (issue 16 point 5): each page's snippet computes the page's result.

The page tests run a page in AppTest with one setting away from its default (so a
parameter the snippet drops changes the numbers), take the snippet from the page's
"Reproduce in Python" code block, ``exec`` it in a fresh namespace (our own generated code)
and compare what it computes with the page's job result.
"""

import ast

import numpy as np
import pytest

from engine.data import load_bundled, make_dataset
from engine.snippets import compare_snippet, dataset_code
from tests.conftest import APPTEST_TIMEOUT as TIMEOUT


def _finish(app, job_key):
    assert app.session_state[job_key].join(TIMEOUT), f"{job_key} did not finish"
    app.run()
    assert not app.exception, app.exception


def page_snippet(app) -> str:
    """The code shown under "Reproduce in Python" (the only code block that makes `ds`)."""
    codes = [c.value for c in app.code if c.language == "python" and "make_dataset" in c.value]
    assert len(codes) == 1, [c.value[:80] for c in app.code]
    return codes[0]


def run_snippet(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "<snippet>", "exec"), namespace)  # our own generated code
    return namespace


# -- the dataset part, without a page ----------------------------------------------------
def test_dataset_code_makes_the_same_dataset_with_every_option():
    recipe = {
        "source": "bundled",
        "name": "penguins",
        "target": "species",
        "task": "classification",
        "categorical": ["island"],
        "missing": "drop",
        "features": ["island", "bill_length_mm", "flipper_length_mm"],
        "max_categories": 50,
        "many_levels": "other",
        "small_classes": "keep",
    }
    code = dataset_code(recipe)
    assert "missing='drop'" in code and "features=" in code
    ds = run_snippet(code)["ds"]
    df, _report, _entry = load_bundled("penguins")
    expected = make_dataset(
        df,
        "species",
        task="classification",
        categorical=["island"],
        missing="drop",
        features=recipe["features"],
    )
    assert ds.feature_names == expected.feature_names == recipe["features"]
    np.testing.assert_array_equal(ds.X, expected.X)
    np.testing.assert_array_equal(ds.y, expected.y)


def test_an_uploaded_file_name_or_column_never_becomes_code():
    evil = "x.csv')\nimport os; os.system('echo pwned')  #"
    recipe = {
        "source": "upload",
        "name": evil,
        "target": 'y")\nimport os',
        "parse": {"sep": ";", "decimal": ",", "thousands": None, "encoding": "utf-8"},
    }
    code = dataset_code(recipe)
    tree = ast.parse(code)
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert [(n.module, [a.name for a in n.names]) for n in imports] == [
        ("engine.data", ["load_csv", "make_dataset"])
    ]
    calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert sorted(calls) == ["load_csv", "make_dataset"]
    assert "load_csv(\"your_file.csv\", sep=';', decimal=','" in code.replace("\n", "")
    assert "put its path here" in code
    # the target is a string constant of make_dataset, exactly as given
    make = next(
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.func.id == "make_dataset"
    )
    assert make.args[1].value == recipe["target"]


def test_compare_snippet_writes_every_model_parameter():
    meta = {
        "recipe": {"source": "bundled", "name": "iris", "target": "species"},
        "plan": {
            "models": [["sklearn_tree", {"max_depth": 2, "criterion": "entropy"}, None]],
            "n_splits": 3,
            "random_state": 7,
        },
    }
    code = compare_snippet(meta)
    assert "('sklearn_tree', {'max_depth': 2, 'criterion': 'entropy'}, None)" in code
    assert "n_splits=3" in code and "random_state=7" in code


# -- the pages -----------------------------------------------------------------------------
@pytest.mark.slow
def test_optimal_shape_trees_snippet_finds_the_pages_objective_and_bound(app):
    app.switch_page("pages/optimal_shape_trees.py").run()
    app.slider(key="lit_depth").set_value(3)
    app.number_input(key="lit_time").set_value(5.0)
    app.number_input(key="lit_alpha").set_value(0.02)  # away from its default
    app.slider(key="lit_test").set_value(0.3)
    app.button(key="lit_run").click().run()
    _finish(app, "lit_job")
    main = app.session_state["_lit_results"][1]["models"]["main"]
    assert main.proven_optimal_
    code = page_snippet(app)
    assert "breakpoint_fraction=0.02" in code and "test_share=0.3" in code
    model = run_snippet(code)["model"]
    assert model.proven_optimal_
    assert model.upper_bound_ == pytest.approx(float(main.upper_bound_), abs=1e-9)
    assert model.lower_bound_ == pytest.approx(float(main.lower_bound_), abs=1e-9)
    np.testing.assert_array_equal(
        model.predict(app.session_state["lit_job_meta"]["X"]),
        main.predict(app.session_state["lit_job_meta"]["X"]),
    )


def _same_summary(page_result, snippet_result, metrics):
    page = page_result.summary.set_index("model")
    mine = snippet_result.summary.set_index("model")
    assert list(mine.index) == list(page.index)
    for metric in metrics:
        np.testing.assert_allclose(mine[metric], page[metric], rtol=0, atol=1e-9)
        np.testing.assert_allclose(mine[metric + "_std"], page[metric + "_std"], rtol=0, atol=1e-9)


@pytest.mark.slow
def test_compare_snippet_gets_the_pages_cross_validation_scores(app):
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"]).run()
    app.slider(key="cmp_folds").set_value(3)
    app.number_input(key="cmp_sklearn_tree_max_depth").set_value(2)  # away from its default
    app.button(key="cmp_run").click().run()
    _finish(app, "cmp_job")
    code = page_snippet(app)
    assert "'max_depth': 2" in code and "n_splits=3" in code
    _same_summary(
        app.session_state["cmp_job"].result, run_snippet(code)["result"], ["accuracy", "log_loss"]
    )


@pytest.mark.slow
def test_split_strategies_snippet_gets_the_pages_cross_validation_scores(app):
    app.switch_page("pages/split_strategies.py").run()
    app.slider(key="ss_cv_depth").set_value(3)  # away from its default (8)
    app.button(key="ss_run").click().run()
    _finish(app, "ss_job")
    code = page_snippet(app)
    assert "'max_depth': 3" in code
    _same_summary(
        app.session_state["ss_job"].result, run_snippet(code)["result"], ["accuracy", "log_loss"]
    )


@pytest.mark.slow
def test_conditional_inference_snippet_grows_the_pages_tree(app):
    app.session_state["ci_n_trees"] = 10
    app.switch_page("pages/conditional_inference.py").run()  # fits on open
    _finish(app, "ci_job")
    app.number_input(key="ci_msl").set_value(30)  # away from its default (7)
    app.button(key="ci_run").click().run()
    _finish(app, "ci_job")
    page = app.session_state["ci_job"].result["tree"]
    code = page_snippet(app)
    assert "min_samples_leaf=30" in code
    model = run_snippet(code)["model"]
    assert model.tree_.node_count == page.tree_.node_count
    np.testing.assert_array_equal(model.tree_.feature, page.tree_.feature)
    np.testing.assert_allclose(model.tree_.threshold, page.tree_.threshold, rtol=0, atol=1e-12)
    assert model.p_value_selector_[0] == pytest.approx(page.p_value_selector_[0], abs=1e-12)


@pytest.mark.slow
def test_conditional_density_snippet_gets_the_pages_test_nll(app):
    app.switch_page("pages/conditional_density.py").run()
    app.slider(key="pt_test_frac").set_value(0.3)  # away from its default (0.2)
    app.number_input(key="pt_min_xy").set_value(5)  # away from its default (1)
    app.button(key="pt_run").click().run()
    _finish(app, "pt_job")
    meta = app.session_state["pt_job_meta"]
    page_model = app.session_state["pt_job"].result["model"]
    from engine.partition.service import holdout_scores

    page_nll = holdout_scores(
        page_model, meta["X"][meta["test"]], meta["y"][meta["test"]], meta["floor"]
    ).nll
    code = page_snippet(app)
    assert "test_fraction=0.3" in code and "'min_samples_xy': 5" in code
    namespace = run_snippet(code)
    np.testing.assert_array_equal(namespace["test"], meta["test"])
    assert namespace["scores"].nll == pytest.approx(page_nll, abs=1e-9)
    assert namespace["model"].trace_ == page_model.trace_ or np.allclose(
        np.asarray(namespace["model"].trace_, dtype=float),
        np.asarray(page_model.trace_, dtype=float),
        rtol=0,
        atol=1e-9,
        equal_nan=True,
    )


@pytest.mark.slow
def test_feature_ranking_snippet_gets_the_pages_attributions_of_the_row(app):
    app.switch_page("pages/feature_ranking.py").run()  # explains the row on open
    assert not app.exception, app.exception
    app.number_input(key="tg_depth").set_value(3).run()  # away from its default (6)
    assert not app.exception, app.exception
    table = app.session_state["_result_panels"]["feature_ranking"].tables["scores"]
    code = page_snippet(app)
    assert "depth=3" in code
    explanation = run_snippet(code)["explanation"]
    assert list(explanation.scores) == [c for c in table.columns if c not in ("feature", "value")]
    for method, scores in explanation.scores.items():  # the page's table is rounded to 6 places
        np.testing.assert_allclose(scores, table[method], rtol=0, atol=5.1e-7)


# -- an upload's own missing-value tokens --------------------------------------------------
UPLOAD = b"size;colour;label\n1,5;red;a\nMISSING;blue;b\n2,5;-;a\n3,0;red;b\n4,5;??;a\n0,5;blue;b\n"


def _upload_recipe() -> dict:
    """Upload ``UPLOAD`` in a session with the tokens 'MISSING' and '??' (not '-'), as the
    Data page does, and return the run's dataset recipe."""
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from pages._shared import add_upload, current_dataset, dataset_recipe
        from tests.test_snippets import UPLOAD

        option = add_upload("gaps.csv", UPLOAD, sep=";", decimal=",", na_values=["MISSING", "??"])
        st.session_state["ds"] = option
        st.session_state[f"target::{option}"] = "label"
        st.session_state["missing"] = "keep"
        st.session_state["recipe"] = dataset_recipe(current_dataset(allow_missing=True))

    at = AppTest.from_function(script, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at.session_state["recipe"]


def test_an_uploads_missing_value_tokens_are_in_the_snippet(tmp_path):
    """The snippet reads the CSV with the page's tokens: 'MISSING' and '??' are missing,
    '-' (a missing value by the engine's default) is a category, as on the page."""
    from engine.data import load_csv

    recipe = _upload_recipe()
    assert recipe["parse"]["na_values"] == ["MISSING", "??"]
    code = dataset_code(recipe)
    assert "na_values=['MISSING', '??']" in code.replace("\n", "").replace("    ", "")
    path = tmp_path / "gaps.csv"
    path.write_bytes(UPLOAD)
    namespace = run_snippet(code.replace('"your_file.csv"', repr(str(path))))
    df = namespace["df"]
    page_df, _ = load_csv(UPLOAD, sep=";", decimal=",", na_values=["MISSING", "??"])
    assert df.equals(page_df)
    assert df["size"].isna().tolist() == [False, True, False, False, False, False]
    assert df["colour"].tolist()[2] == "-" and df["colour"].isna().tolist()[4]
    default_df, _ = load_csv(UPLOAD, sep=";", decimal=",")
    assert not default_df["colour"].equals(df["colour"])  # the tokens change the table
