"""AppTest (in-process, no browser) for every page: open, upload, failed upload, Compare."""

import time

import pytest

from pages._shared import clicked_node, md
from tests.conftest import APPTEST_TIMEOUT as TIMEOUT
from tests.conftest import held_until_stop

SEMICOLON = "a;b;klasse\n" + "".join(
    f"{i},5;{i % 4},25;{'ja' if i % 2 else 'nein'}\n" for i in range(40)
)


def sidebar_dataset(at):
    return at.session_state["ds"]


def pick(at, option):
    """Choose a dataset in the sidebar."""
    return at.selectbox(key="ds").set_value(option).run()


def run_compare_tree(at, **params):
    """Run the Compare page with scikit-learn's tree alone (``params``: its settings) on 2
    folds, wait for the job and rerun the page."""
    at.switch_page("pages/compare.py").run()
    at.multiselect(key="cmp_models").set_value(["sklearn_tree"]).run()
    for name, value in params.items():
        at.number_input(key=f"cmp_sklearn_tree_{name}").set_value(value)
    at.slider(key="cmp_folds").set_value(2)
    at.button(key="cmp_run").click().run()
    assert at.session_state["cmp_job"].join(TIMEOUT)
    at.run()


def test_clicked_node_reads_the_node_of_the_first_numeric_point():
    """The tree pages' click reader: a node marker's id, a gap ring's first entry, else None."""
    from types import SimpleNamespace

    def event(*custom):
        return SimpleNamespace(
            selection=SimpleNamespace(points=[{"customdata": c} for c in custom])
        )

    assert clicked_node(None) is None
    assert clicked_node(SimpleNamespace(selection=None)) is None
    assert clicked_node(event()) is None
    assert clicked_node(event(None, "edge")) is None
    assert clicked_node(event(None, "edge", 3.0, 5)) == 3
    assert clicked_node(event([7, 0.1, 0.2], 2)) == 7  # a gap ring: [node, LB, UB, ...]
    assert clicked_node(event([], 4)) == 4


@pytest.mark.slow
def test_opens_on_bundled_dataset(app):
    assert app.title[0].value == "Data"
    assert app.selectbox(key="ds").value == "iris"
    assert app.selectbox(key="target::iris").value == "species"
    charts = app.get("plotly_chart")
    assert len(charts) == 2
    assert any("150 rows" in m.value for m in app.markdown)


@pytest.mark.slow
def test_caption_states_the_chosen_task_only(app):
    """A bundled classification dataset with a numeric target chosen is regression: the
    caption must not also call it classification."""
    pick(app, "penguins")
    app.selectbox(key="target::penguins").set_value("body_mass_g").run()
    caption = next(m.value for m in app.markdown if "rows x" in m.value)
    assert "(regression)" in caption and "classification" not in caption


@pytest.mark.slow
def test_pick_another_dataset_and_target(app):
    pick(app, "diabetes")
    assert not app.exception
    assert any("regression" in m.value for m in app.markdown)
    pick(app, "penguins")
    assert not app.exception
    # penguins has missing values: dropped by default with a note
    assert any("missing" in i.value for i in app.info)


@pytest.mark.slow
def test_upload_semicolon_decimal_comma(app):
    app.file_uploader(key="uploader").set_value(
        ("messung.csv", SEMICOLON.encode(), "text/csv")
    ).run()
    assert not app.exception
    assert sidebar_dataset(app) == "upload:messung.csv"
    assert app.success and "active dataset" in app.success[0].value
    assert any("40 rows" in m.value for m in app.markdown)
    assert app.selectbox(key="target::upload:messung.csv").value == "klasse"


@pytest.mark.slow
def test_failed_upload_keeps_previous_dataset(app):
    pick(app, "wine")
    app.file_uploader(key="uploader").set_value(("empty.csv", b"", "text/csv")).run()
    assert not app.exception
    assert sidebar_dataset(app) == "wine"
    assert app.error and "empty.csv" in app.error[0].value
    assert any("178 rows" in m.value for m in app.markdown)


@pytest.mark.slow
def test_excel_upload_says_save_as_csv(app, root):
    # The uploader accepted only csv / txt / tsv, so the browser greyed an .xlsx out with
    # no explanation and the engine's 'save it as CSV' message was never shown.
    pick(app, "wine")
    uploader = app.file_uploader(key="uploader")
    assert {"xlsx", "xls"} <= {t.lstrip(".") for t in uploader.allowed_type}
    uploader.set_value(
        (
            "book.xlsx",
            (root / "tests/data/excel.xlsx").read_bytes(),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        )
    )
    app.run()
    assert not app.exception
    assert sidebar_dataset(app) == "wine"
    assert "book.xlsx" in app.error[0].value and "save it as CSV" in app.error[0].value


def test_bad_target_shows_error_not_traceback(app):
    pick(app, "iris")
    # a constant target: upload a file whose last column never changes
    csv = "x,y,const\n" + "".join(f"{i},{i * 2},same\n" for i in range(20))
    app.file_uploader(key="uploader").set_value(("const.csv", csv.encode(), "text/csv")).run()
    assert not app.exception
    assert any("const" in e.value for e in app.error)


@pytest.mark.slow
def test_compare_produces_table(app):
    app.switch_page("pages/compare.py").run()
    assert not app.exception
    assert app.title[0].value == "Compare models"
    app.multiselect(key="cmp_models").set_value(["sklearn_tree", "sklearn_forest"])
    app.slider(key="cmp_folds").set_value(3)
    app.button(key="cmp_run").click().run()
    job = app.session_state["cmp_job"]
    assert job.join(TIMEOUT)
    app.run()
    assert not app.exception
    table = app.dataframe[0].value
    assert list(table["model"]) == [
        "Decision tree (scikit-learn CART)",
        "Random forest (scikit-learn)",
    ]
    assert (table["folds"] == 3).all()
    assert (table["accuracy"] > 0.8).all()
    figs = app.get("plotly_chart")
    assert len(figs) == 2  # CV bars and the fitted tree (the forest has no single tree)
    # only the tree the page draws is refitted (refit="trees"); the caption says why
    assert list(job.result.models) == ["sklearn_tree"]
    assert job.snapshot().latest["total"] == 2 * 3 + 1
    assert any(
        "Random forest (scikit-learn): scored on the folds only. The page refits on all rows "
        "only the trees it draws" in c.value
        for c in app.caption
    )


def _feature_trace_types(at):
    import json

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    # a numeric feature's histogram is drawn as bars of its bin counts, one bin wide
    return {"histogram" if "width" in t else t["type"] for t in spec["data"]}


@pytest.mark.slow
def test_changing_csv_options_reprepares_the_dataset(app):
    """Re-reading the same upload with other options must not reuse the old Dataset."""
    app.file_uploader(key="uploader").set_value(
        ("messung.csv", SEMICOLON.encode(), "text/csv")
    ).run()
    assert _feature_trace_types(app) == {"histogram"}  # 'a' read as numbers (1,5 = 1.5)
    app.selectbox(key="csv_decimal").set_value("dot .").run()
    assert not app.exception
    report = app.dataframe[0].value
    assert report.set_index("column").loc["a", "dtype"] != "numeric"
    # '1,5' is now text: the feature plot must show it as a category, not the old numbers
    assert _feature_trace_types(app) == {"bar"}


@pytest.mark.slow
def test_page_settings_survive_a_page_switch(app):
    """Streamlit forgets the value of a widget a run does not draw; keep_widget_state keeps
    the column roles, CSV options and Compare settings when the user switches page."""
    pick(app, "penguins")
    app.multiselect(key="categorical::penguins").set_value(["year"]).run()
    app.selectbox(key="csv_sep").set_value("semicolon ;").run()
    app.switch_page("pages/compare.py").run()
    app.slider(key="cmp_folds").set_value(3).run()
    app.multiselect(key="cmp_models").set_value(["sklearn_forest"]).run()
    pick(app, "iris")
    app.switch_page("pages/data.py").run()
    pick(app, "penguins")
    assert not app.exception
    assert app.multiselect(key="categorical::penguins").value == ["year"]
    assert app.selectbox(key="csv_sep").value == "semicolon ;"
    app.switch_page("pages/compare.py").run()
    assert app.slider(key="cmp_folds").value == 3
    assert app.multiselect(key="cmp_models").value == ["sklearn_forest"]


@pytest.mark.slow
@pytest.mark.parametrize("params", [{"max_depth": 1}, {"min_samples_leaf": 1000}])
def test_compare_draws_a_stump_and_a_single_leaf_tree(app, params):
    """A depth-1 (or depth-0) refit tree has nothing to collapse: no slider, no exception."""
    run_compare_tree(app, **params)
    assert not app.exception, app.exception
    assert len(app.get("plotly_chart")) == 2  # CV bars and the tree
    assert [s.label for s in app.slider] == ["Folds (k)"]


@pytest.mark.slow
def test_run_and_stop_buttons_follow_the_job(app):
    """While a job runs, Run is disabled and Stop enabled; after Stop it is the other way
    round, in the same run that handles the click (no second click needed)."""
    pick(app, "digits")
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_forest"]).run()
    app.number_input(key="cmp_sklearn_forest_n_estimators").set_value(300)
    app.slider(key="cmp_folds").set_value(10)
    app.button(key="cmp_run").click().run()
    job = app.session_state["cmp_job"]
    assert not job.finished  # 11 forest fits of 300 trees on 1,797 rows take several seconds
    assert app.button(key="cmp_run").disabled
    assert not app.button(key="cmp_stop").disabled
    app.button(key="cmp_stop").click().run()
    assert job.join(TIMEOUT) and job.status == "cancelled"
    assert not app.exception
    assert not app.button(key="cmp_run").disabled
    assert app.button(key="cmp_stop").disabled
    assert any("stopped" in w.value for w in app.warning)


@pytest.mark.slow
def test_results_name_the_dataset_they_ran_on(app):
    """After switching dataset, the old results stay, labelled with their own dataset."""
    run_compare_tree(app)
    assert any(m.value.startswith("On **Iris**") for m in app.markdown)
    assert not app.info
    pick(app, "wine")
    assert not app.exception
    assert any(m.value.startswith("On **Iris**") and "150 rows" in m.value for m in app.markdown)
    assert any("not the active one" in i.value for i in app.info)
    assert list(app.dataframe[0].value["model"]) == ["Decision tree (scikit-learn CART)"]


@pytest.mark.slow
def test_compare_tree_uses_category_and_class_labels(app):
    """The refit tree on penguins splits on island and sex (stored as codes): the figure
    and node table must show their labels and the species names, never codes."""
    import json

    pick(app, "penguins")
    run_compare_tree(app)
    assert not app.exception
    spec = json.loads(app.get("plotly_chart")[1].proto.spec)
    hover = " ".join(h for t in spec["data"] for h in t.get("hovertext") or [])
    assert "island in {" in hover and "island <=" not in hover
    assert "majority: Adelie" in hover
    nodes = app.dataframe[1].value
    assert {"p(Adelie)", "p(Chinstrap)", "p(Gentoo)"} <= set(nodes.columns)
    assert not nodes["rule"].str.contains("island <=").any()


@pytest.mark.slow
def test_upload_error_goes_away_when_another_dataset_is_picked(app):
    pick(app, "wine")
    app.file_uploader(key="uploader").set_value(("empty.csv", b"", "text/csv")).run()
    assert app.error and "still active" in app.error[0].value
    pick(app, "iris")
    assert not app.exception
    assert not [e for e in app.error if "empty.csv" in e.value]


@pytest.mark.slow
def test_upload_reads_the_engine_missing_value_tokens(app):
    """'-' and '#N/A' are missing values for load_csv; an upload with the page's default
    tokens must read them the same way (not as a category '-' or stray text)."""
    from engine.data import load_csv

    csv = "x,colour,y\n" + "".join(
        f"{'#N/A' if i == 3 else i},{'-' if i % 7 == 0 else ['red', 'blue'][i % 2]},{i % 2}\n"
        for i in range(30)
    )
    app.file_uploader(key="uploader").set_value(("dash.csv", csv.encode(), "text/csv")).run()
    assert not app.exception
    report = app.dataframe[0].value.set_index("column")
    _, expected = load_csv(csv.encode())
    assert report.loc["colour", "missing"] == expected.missing["colour"] == 5
    assert report.loc["x", "missing"] == expected.missing["x"] == 1
    assert report.loc["x", "coerced"] == 0


@pytest.mark.slow
def test_an_id_column_is_left_out_and_brought_back_with_one_click(app):
    """A name column was refused ('leave it out'): it is now left out by default, with a
    line saying so and a button that brings it back."""
    csv = "name,x,y\n" + "".join(f"person{i},{i % 10},{i % 3}\n" for i in range(120))
    app.file_uploader(key="uploader").set_value(("ids.csv", csv.encode(), "text/csv")).run()
    assert not app.exception and not app.error
    assert any(
        i.value.startswith(
            "**name** looks like an identifier (a different value in each of the 120 rows)"
        )
        for i in app.info
    )
    assert app.multiselect(key="left_out::upload:ids.csv").value == ["name"]
    assert any("120 rows x 1 feature;" in m.value for m in app.markdown)
    app.button(key="bring_back::upload:ids.csv::name").click().run()
    assert not app.exception and not app.error
    assert app.multiselect(key="left_out::upload:ids.csv").value == []
    assert any("120 rows x 2 features;" in m.value for m in app.markdown)
    # 120 names: above the level cap of 50, so the rarest are grouped (and it says so)
    assert any("'name' has 120 levels" in i.value and "'other'" in i.value for i in app.info)
    assert not any(b.key.startswith("bring_back::") for b in app.button)
    app.switch_page("pages/compare.py").run()
    assert any("120 rows x 2 features;" in m.value for m in app.markdown)


def _upload_fixture(app, root, name):
    app.file_uploader(key="uploader").set_value(
        (name, (root / "tests/data" / name).read_bytes(), "text/csv")
    ).run()
    assert not app.exception, app.exception
    return f"upload:{name}"


def test_parse_report_lists_every_change(app, root):
    option = _upload_fixture(app, root, "messy_shop.csv")
    (box,) = [w.value for w in app.warning if "automatic changes while reading" in w.value]
    assert box.startswith("**6 automatic changes while reading**")
    for line in (
        "Column 'zip': 8 codes with leading zeros such as '04521' were kept as text",
        "Column 'joined': 16 dates (day/month/year, such as '15/01/2023') are used as numbers",
        "Column 'discount': 15 percentages such as '22%' were read as numbers in percent",
        "Column 'total': 16 amounts in $ such as '$1,204.50' were read as numbers",
        "Column 'member': 12 spellings of yes/no",
    ):
        assert f"- {md(line)}" in box, line  # shown as written: '$' is not LaTeX
    infos = [i.value for i in app.info]
    assert any(i.startswith("**order_id** looks like an identifier") for i in infos)
    assert any(i.startswith("**comment** looks like an identifier (free text") for i in infos)
    report = app.dataframe[0].value.set_index("column")
    assert report.loc["discount", "note"] == "percent"
    assert report.loc["total", "note"] == "amounts in $"
    assert report.loc["joined", "dtype"] == "date"
    assert app.multiselect(key=f"left_out::{option}").value == ["order_id", "comment"]
    assert app.selectbox(key=f"target::{option}").value == "returned"
    app.selectbox(key="missing").set_value("drop").run()
    assert any(
        m.value == "Rows: **16** rows in the file → 1 dropped: missing feature values → "
        "**15** used."
        for m in app.markdown
    )


def test_passenger_list_loads_with_its_name_column_left_out(app, root):
    option = _upload_fixture(app, root, "passengers.csv")
    app.selectbox(key=f"target::{option}").set_value("Survived").run()
    assert app.selectbox(key="missing").value == "keep"  # the default: trees route them
    app.selectbox(key="missing").set_value("drop").run()
    assert not app.exception and not app.error
    assert app.multiselect(key=f"left_out::{option}").value == ["PassengerId", "Name", "Ticket"]
    caption = next(m.value for m in app.markdown if "rows x" in m.value)
    assert "13 rows x 7 features" in caption and "classification, 2 classes" in caption
    assert any(
        i.value.startswith(
            "47 of 60 rows had missing values (in 'Cabin' (45), 'Age' (7), "
            "'Embarked' (2)) and were dropped. Leaving 'Cabin' out would keep 38 of them."
        )
        for i in app.info
    )
    # the default keeps them all
    app.selectbox(key="missing").set_value("keep").run()
    assert not app.exception and not app.error
    assert any("60 rows x 8 features" in m.value for m in app.markdown)
    app.selectbox(key=f"plot_feature::{option}").set_value("Age").run()
    assert any(c.value == "7 rows with no value for Age are not drawn." for c in app.caption)


@pytest.mark.slow  # a whole-page run
def test_level_cap_is_a_setting(app, root):
    option = _upload_fixture(app, root, "levels_92.csv")
    assert any(
        "'country' has 92 levels, more than the cap of 50: the 49 most frequent are kept" in i.value
        for i in app.info
    )
    app.number_input(key=f"max_levels::{option}").set_value(92).run()
    assert not app.exception and not app.error
    assert not any("levels" in i.value for i in app.info)
    assert any("400 rows x 3 features" in m.value for m in app.markdown)
    app.selectbox(key=f"plot_feature::{option}").set_value("country").run()
    spec = __import__("json").loads(app.get("plotly_chart")[0].proto.spec)
    assert len(spec["data"][0]["x"]) == 92  # one bar per country
    app.number_input(key=f"max_levels::{option}").set_value(50).run()
    app.radio(key=f"many_levels::{option}").set_value("leave_out").run()
    assert not app.exception and not app.error
    assert any("'country' has 92 levels" in i.value and "left out" in i.value for i in app.info)
    assert any("400 rows x 2 features" in m.value for m in app.markdown)


def test_small_classes_are_kept_or_dropped(app, root):
    option = _upload_fixture(app, root, "target_missing_stray.csv")
    app.selectbox(key="missing").set_value("drop").run()
    assert not app.error
    assert any(i.value.startswith("Class '3' (1 row) of the target 'animal'") for i in app.info)
    assert any("3 classes" in m.value for m in app.markdown)
    app.radio(key=f"small_classes::{option}").set_value("drop").run()
    assert not app.exception and not app.error
    assert any("2 classes" in m.value for m in app.markdown)
    assert any(
        m.value.startswith(
            "Rows: **13** rows in the file → 2 dropped: no target value → "
            "1 dropped: missing feature values → 1 dropped: classes too small"
        )
        for m in app.markdown
    )


METHOD_PAGES = (
    "pages/compare.py",
    "pages/conditional_density.py",
    "pages/feature_ranking.py",
    "pages/split_strategies.py",
)
#: Pages whose methods route missing values: they take the table and say how (a caption).
ROUTING_PAGES = (
    "pages/optimal_shape_trees.py",
    "pages/conditional_inference.py",
)


@pytest.mark.slow  # whole-page runs
def test_missing_values_kept_on_the_data_page_and_explained_on_method_pages(app, root):
    """A car table where every row has a gap: 'drop' says to keep them; 'keep' (the
    default) shows the data; every method page runs on it and says how it treats missing
    values in a caption (none says it cannot use them); no traceback."""
    option = _upload_fixture(app, root, "cars.csv")
    app.selectbox(key=f"target::{option}").set_value("origin").run()
    app.selectbox(key="missing").set_value("drop").run()
    assert any("Every row has a missing value" in e.value for e in app.error)
    app.selectbox(key="missing").set_value("keep").run()
    assert not app.exception and not app.error
    assert any("22 rows x 8 features" in m.value for m in app.markdown)
    app.selectbox(key=f"plot_feature::{option}").set_value("horsepower").run()
    assert any(c.value == "4 rows with no value for horsepower are not drawn." for c in app.caption)
    from engine.cart.estimator import MISSING_VALUES_NOTE as CART_NOTE
    from engine.compare import MISSING_VALUES_CAPTION as COMPARE_NOTE
    from engine.partition.base import MISSING_VALUES_NOTE as PARTITION_NOTE
    from engine.teaching.glossary import unlink_terms
    from engine.treegrad.service import MISSING_VALUES_CAPTION as TREEGRAD_NOTE

    routed = {
        "pages/compare.py": COMPARE_NOTE,
        "pages/split_strategies.py": CART_NOTE,
        "pages/conditional_density.py": PARTITION_NOTE,
        "pages/feature_ranking.py": TREEGRAD_NOTE,
    }
    for page in METHOD_PAGES:
        app.switch_page(page).run()
        assert not app.exception, (page, app.exception)
        cannot = any(
            w.value.startswith("**The methods on this page cannot use missing values yet.**")
            and "22 rows have 22 missing values" in w.value
            for w in app.warning
        )
        assert not cannot and not app.error, page
        # the captions link their glossary terms (engine/teaching/glossary.py link_terms)
        assert any(unlink_terms(c.value) == routed[page] for c in app.caption), page
    from engine.cit.tree import MISSING_VALUES_CAPTION as CIT_CAPTION
    from engine.literati.estimator import MISSING_VALUES_CAPTION as LITERATI_CAPTION

    for page in ROUTING_PAGES:
        app.switch_page(page).run()
        assert not app.exception, (page, app.exception)
        assert not any("cannot use missing values" in w.value for w in app.warning), page
        assert any(unlink_terms(c.value) in (CIT_CAPTION, LITERATI_CAPTION) for c in app.caption), (
            page
        )
    app.selectbox(key="missing").set_value("drop").run()
    app.switch_page("pages/data.py").run()
    assert any("Every row has a missing value" in e.value for e in app.error)


@pytest.mark.slow  # whole-page runs of every method page
@pytest.mark.parametrize(
    ("name", "target", "also_left_out", "shape"),
    [
        ("passengers.csv", "Survived", ["Cabin"], "51 rows x 7 features"),
        ("levels_100.csv", "responded", [], "500 rows x 4 features"),
    ],
)
def test_method_pages_open_on_a_passenger_list_and_a_100_level_table(
    app, root, name, target, also_left_out, shape
):
    """The passenger list (name, ticket and ID columns; 'Cabin' left out as the drop
    message suggests) and a table with a 100-level store code: every method page opens."""
    option = _upload_fixture(app, root, name)
    app.selectbox(key=f"target::{option}").set_value(target).run()
    app.selectbox(key="missing").set_value("drop").run()  # the shapes are after dropping
    left = app.multiselect(key=f"left_out::{option}")
    left.set_value(left.value + also_left_out).run()
    assert not app.error
    for page in METHOD_PAGES:
        app.switch_page(page).run()
        assert not app.exception, (page, app.exception)
        assert not app.error, (page, [e.value for e in app.error])
        assert any(f"{shape}; target **{target}**" in m.value for m in app.markdown), page


def test_method_pages_show_why_the_split_is_not_stratified(app):
    csv = "a,b,label\n" + "".join(
        f"{i % 7},{(i * 3) % 11},{'xy'[i % 2] if i else 'z'}\n" for i in range(60)
    )
    app.file_uploader(key="uploader").set_value(("small.csv", csv.encode(), "text/csv")).run()
    assert any(i.value.startswith("Class 'z' (1 row)") for i in app.info)
    note = "The train/test split is not stratified: Class 'z' (1 row)"
    app.switch_page("pages/optimal_shape_trees.py").run()
    assert not app.exception, app.exception
    assert any(i.value.startswith(note) for i in app.info)
    app.switch_page("pages/feature_ranking.py").run()
    assert not app.exception, app.exception
    assert any(i.value.startswith(note) for i in app.info)


@pytest.mark.slow
@pytest.mark.parametrize(
    "dataset, task", [("penguins", "classification"), ("diabetes", "regression")]
)
def test_compare_every_registered_model_and_draw_each_tree(app, dataset, task):
    """Every model in the registry (scikit-learn's and TreeLab's own) runs on the page, and
    every single-tree model's refit tree is drawn without an exception."""
    from engine.compare import available_models

    pick(app, dataset)
    app.switch_page("pages/compare.py").run()
    every = [s.key for s in available_models(task)]
    assert len(app.multiselect(key="cmp_models").options) == len(every)
    app.multiselect(key="cmp_models").set_value(every).run()
    app.slider(key="cmp_folds").set_value(2)
    app.button(key="cmp_run").click().run()
    job = app.session_state["cmp_job"]
    assert job.join(TIMEOUT) and job.status == "done", job.error
    app.run()
    assert not app.exception, app.exception
    assert len(app.dataframe[0].value) == len(every)
    trees = app.multiselect(key="cmp_tree_models").options
    assert len(trees) >= 2  # scikit-learn's tree and TreeLab's CART
    assert len(app.get("plotly_chart")) == 3  # CV bars and two trees side by side
    for option in trees:
        app.multiselect(key="cmp_tree_models").set_value([option]).run()
        assert not app.exception, (option, app.exception)
        assert len(app.get("plotly_chart")) == 2


@pytest.mark.slow
def test_split_strategies_page(app):
    app.switch_page("pages/split_strategies.py").run()
    assert not app.exception
    assert app.title[0].value == "Split strategies"
    table = app.dataframe[0].value
    assert list(table["strategy"]) == [
        "exhaustive",
        "quantile",
        "random",
        "dics_paper",
        "class_centroid",
        "kde_valley",
    ]
    # iris root on petal length: the exhaustive optimum separates setosa (Gini 2/3 -> 1/3)
    assert table.loc[0, "chosen threshold"] == pytest.approx(2.45)
    assert table.loc[0, "impurity decrease"] == pytest.approx(1 / 3, abs=1e-4)
    assert table.loc[0, "candidates"] == 42
    # pick another node and strategies: the table follows
    app.selectbox(key="ss_node").set_value(2).run()
    app.multiselect(key="ss_strategies").set_value(["exhaustive", "kmeans1d"]).run()
    assert not app.exception
    table = app.dataframe[0].value
    assert list(table["strategy"]) == ["exhaustive", "kmeans1d"]
    assert table.loc[0, "candidates"] < 42  # node 2 holds only the non-setosa rows
    # whole trees under CV
    app.slider(key="ss_cv_folds").set_value(3)
    app.button(key="ss_run").click().run()
    assert app.session_state["ss_job"].join(TIMEOUT)
    app.run()
    assert not app.exception
    cv = app.dataframe[-1].value
    assert list(cv["model"]) == ["CART / exhaustive", "CART / kmeans1d"]
    assert (cv["accuracy"] > 0.85).all()
    assert cv.loc[1, "candidates"] < cv.loc[0, "candidates"]


def _title(chart) -> str:
    import json

    return json.loads(chart.proto.spec)["layout"]["title"]["text"]


@pytest.mark.slow
def test_split_strategies_tree_pickers_follow_a_new_result(app, monkeypatch):
    # The two tree pickers under the CV table are not on the page while a job runs.  After a
    # second Run with other strategies the browser kept showing the last result's pick
    # ('CART / exhaustive', no longer run) above the tree of 'CART / quantile': a new result
    # must *set* the pickers (Streamlit then sends the values, set_value).  And a pick made
    # on a result survives a visit to another page.
    import threading

    import pages._jobs as shared

    app.switch_page("pages/split_strategies.py").run()
    app.multiselect(key="ss_strategies").set_value(["exhaustive", "quantile", "random"]).run()
    app.slider(key="ss_cv_folds").set_value(3)
    app.button(key="ss_run").click().run()
    assert app.session_state["ss_job"].join(TIMEOUT)
    app.run()
    first = list(app.selectbox(key="ss_right_tree").options)
    assert first == ["CART / exhaustive", "CART / quantile", "CART / random"]
    app.selectbox(key="ss_right_tree").select_index(2).run()
    app.switch_page("pages/data.py").run()
    app.switch_page("pages/split_strategies.py").run()
    assert not app.exception, app.exception
    assert app.selectbox(key="ss_right_tree").index == 2
    assert "CART / random:" in _title(app.get("plotly_chart")[-1])
    # a second run with other strategies, held until the Run click's rerun drew the live view
    go = threading.Event()
    steps = shared.cross_validate_steps

    def held(*args, **kwargs):
        go.wait(TIMEOUT)
        return (yield from steps(*args, **kwargs))

    monkeypatch.setattr(shared, "cross_validate_steps", held)
    app.multiselect(key="ss_strategies").set_value(["quantile", "kmeans1d"]).run()
    app.button(key="ss_run").click().run()
    job = app.session_state["ss_job"]
    assert not job.finished and not any(b.key == "ss_left_tree" for b in app.get("selectbox"))
    go.set()
    assert job.join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    left, right = app.selectbox(key="ss_left_tree"), app.selectbox(key="ss_right_tree")
    assert list(left.options) == ["CART / quantile", "CART / kmeans1d"]
    assert left.index == 0 and left.proto.set_value
    assert right.index == 1 and right.proto.set_value
    titles = [_title(c) for c in app.get("plotly_chart")[-2:]]
    assert "CART / quantile:" in titles[0] and "CART / kmeans1d:" in titles[1]


@pytest.mark.slow
def test_split_strategies_a_one_row_leaf_keeps_the_cv_section(app):
    # Picking a leaf with one row stopped the page at "nothing to split" (and removing every
    # strategy at "Choose at least one strategy"): the whole-tree comparison below, its results
    # and a running job's Stop button disappeared with it.
    app.switch_page("pages/split_strategies.py").run()
    app.slider(key="ss_depth").set_value(6).run()
    app.slider(key="ss_cv_folds").set_value(3)
    app.button(key="ss_run").click().run()
    assert app.session_state["ss_job"].join(TIMEOUT)
    app.run()
    options = app.selectbox(key="ss_node").options
    leaf = next(i for i, o in enumerate(options) if "(leaf, 1 rows)" in o)
    app.selectbox(key="ss_node").set_value(leaf).run()
    assert not app.exception, app.exception
    assert any("has 1 row(s): nothing to split" in i.value for i in app.info)
    heads = [h.value for h in app.subheader]
    assert heads == ["1. Pick a node", "4. Whole trees under cross-validation"]
    assert any(c.value.startswith("Results for") for c in app.caption)
    assert not app.button(key="ss_run").disabled
    # no strategy chosen: nothing to profile or run, but the results stay
    app.multiselect(key="ss_strategies").set_value([]).run()
    assert not app.exception, app.exception
    assert any(i.value == "Choose at least one strategy." for i in app.info)
    assert [h.value for h in app.subheader][-1] == "4. Whole trees under cross-validation"
    assert any(c.value.startswith("Results for") for c in app.caption)
    assert app.button(key="ss_run").disabled


@pytest.mark.slow
def test_split_strategies_running_job_can_be_stopped_from_a_dataset_it_cannot_use(app, monkeypatch):
    import pages._jobs as shared

    monkeypatch.setattr(
        shared, "cross_validate_steps", held_until_stop(shared.cross_validate_steps)
    )
    app.switch_page("pages/split_strategies.py").run()
    app.button(key="ss_run").click().run()
    job = app.session_state["ss_job"]
    csv = "colour,shape,label\n" + "".join(
        f"{'rgb'[i % 3]},{'sq'[i % 2]},{'ab'[i % 2]}\n" for i in range(30)
    )
    app.switch_page("pages/data.py").run()
    app.file_uploader(key="uploader").set_value(("cats.csv", csv.encode(), "text/csv")).run()
    app.switch_page("pages/split_strategies.py").run()
    assert not app.exception, app.exception
    assert any("Every feature of this dataset is categorical" in w.value for w in app.warning)
    assert not job.finished
    assert any("comparison is still running on **Iris**" in i.value for i in app.info)
    app.button(key="ss_stop").click().run()
    assert job.join(TIMEOUT) and job.status == "cancelled"


@pytest.mark.slow
def test_split_strategies_node_starts_at_the_root_of_another_dataset(app):
    # a node picked in iris's tree stayed picked in wine's (another tree, another feature)
    app.switch_page("pages/split_strategies.py").run()
    app.selectbox(key="ss_node").set_value(4).run()
    app.selectbox(key="ss_feature::4").set_value("sepal width (cm)").run()
    pick(app, "wine")
    assert not app.exception, app.exception
    node = app.selectbox(key="ss_node")
    assert node.value == 0 and node.options[0].startswith("node 0 (178 rows")
    assert "ss_feature::4" not in app.session_state
    assert app.dataframe[0].value.loc[0, "candidates"] > 42  # wine's root, not iris's node 4


@pytest.mark.slow
def test_split_strategies_one_fold_after_stop_shows_no_spread(app, monkeypatch):
    # after Stop, a model with one fold had an empty std cell (Compare shows "—")
    import pages._jobs as shared

    steps = shared.cross_validate_steps

    def stopped_after_one_fit(ctx, *args, **kwargs):
        for snap in steps(ctx, *args, **kwargs):
            yield snap
            if snap.get("rows"):  # one model has one fold: wait for Stop
                while not ctx.cancel_event.wait(0.01):
                    pass
                yield snap

    monkeypatch.setattr(shared, "cross_validate_steps", stopped_after_one_fit)
    app.switch_page("pages/split_strategies.py").run()
    app.multiselect(key="ss_strategies").set_value(["exhaustive", "quantile"]).run()
    app.slider(key="ss_cv_folds").set_value(3)
    app.button(key="ss_run").click().run()
    job = app.session_state["ss_job"]
    deadline = time.monotonic() + TIMEOUT
    while not (job.snapshot().latest or {}).get("rows") and time.monotonic() < deadline:
        time.sleep(0.05)
    app.button(key="ss_stop").click().run()
    assert job.join(TIMEOUT) and job.status == "cancelled"
    app.run()
    assert not app.exception, app.exception
    cv = app.dataframe[-1].value
    assert list(cv["model"]) == ["CART / exhaustive"]
    assert cv.loc[0, "folds"] == 1 and cv.loc[0, "accuracy_std"] == "—"
    assert any("Mean over 1 of 3 folds" in c.value for c in app.caption)


@pytest.mark.slow
def test_compare_live_table_follows_each_finished_fold(app, monkeypatch):
    """The live view's table is summarised once per finished fold (the fragment polls twice
    a second) and still shows every new fold: it equals summarise() of the rows so far."""
    import threading

    import pages._jobs as shared
    from engine.compare import shown_summary, summarise

    steps = shared.cross_validate_steps
    go = [threading.Event() for _ in range(2)]

    def one_fold_at_a_time(ctx, *args, **kwargs):
        for n, snap in enumerate(steps(ctx, *args, **kwargs)):
            yield snap
            if n < len(go):
                go[n].wait(TIMEOUT)

    monkeypatch.setattr(shared, "cross_validate_steps", one_fold_at_a_time)
    app.switch_page("pages/compare.py").run()
    app.multiselect(key="cmp_models").set_value(["sklearn_tree"]).run()
    app.button(key="cmp_run").click().run()
    job = app.session_state["cmp_job"]
    for n_rows in (1, 2):
        deadline = time.monotonic() + TIMEOUT
        while len((job.snapshot().latest or {}).get("rows", [])) < n_rows:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        app.run()
        assert not app.exception, app.exception
        rows = job.snapshot().latest["rows"]
        expected = shown_summary(summarise(rows, "classification").summary)
        shown = app.dataframe[-1].value
        assert int(shown.loc[0, "folds"]) == n_rows == int(expected.loc[0, "folds"])
        assert shown.loc[0, "accuracy"] == expected.loc[0, "accuracy"]
        go[n_rows - 1].set()
    assert job.join(TIMEOUT)


def _layout_fonts(chart) -> tuple:
    import json

    layout = json.loads(chart.proto.spec)["layout"]
    font = layout.get("font", {}).get("size")
    return font, (layout.get("xaxis", {}).get("tickfont") or {}).get("size")


@pytest.mark.slow
def test_projection_mode_enlarges_every_figure(app):
    # the Data page's figures (drawn directly) and Split strategies' (tree drawn directly,
    # candidates through ResultPanel.chart): 14 px text normally, 20 px in projection mode
    assert not app.toggle(key="projection").value
    assert [_layout_fonts(c)[0] for c in app.get("plotly_chart")] == [14, 14]
    app.toggle(key="projection").set_value(True).run()
    assert not app.exception, app.exception
    assert [_layout_fonts(c) for c in app.get("plotly_chart")] == [(20, 18), (20, 18)]
    app.switch_page("pages/split_strategies.py").run()
    assert not app.exception, app.exception
    charts = {c.proto.id: c for c in app.get("plotly_chart")}
    assert len(charts) >= 3 and all(_layout_fonts(c)[0] == 20 for c in charts.values())
    # the recorded figure (for exports) stays as built
    panel = app.session_state["_result_panels"]["split_strategies"]
    assert panel.figures["ss_cand_fig"].layout.font.size == 14
    app.toggle(key="projection").set_value(False).run()
    assert all(_layout_fonts(c)[0] in (14, None) for c in app.get("plotly_chart"))


@pytest.mark.slow
def test_split_strategies_regression(app):
    pick(app, "diabetes")
    app.switch_page("pages/split_strategies.py").run()
    assert not app.exception
    table = app.dataframe[0].value
    assert "class_centroid" not in set(table["strategy"])
    assert (table["impurity decrease"] > 0).all()


@pytest.mark.slow
def test_uploads_per_session_are_bounded(app):
    from pages._shared import MAX_UPLOADS

    for i in range(MAX_UPLOADS + 2):
        csv = "a,b,label\n" + "".join(f"{j},{j * i},{j % 2}\n" for j in range(12))
        app.file_uploader(key="uploader").set_value((f"f{i}.csv", csv.encode(), "text/csv"))
        app.run()
        assert not app.exception
    kept = list(app.session_state["uploads"])
    assert kept == [f"upload:f{i}.csv" for i in range(2, MAX_UPLOADS + 2)]
    assert app.session_state["ds"] == f"upload:f{MAX_UPLOADS + 1}.csv"


@pytest.mark.slow
def test_split_strategies_explains_empty_and_fallback_results(app):
    app.switch_page("pages/split_strategies.py").run()
    app.number_input(key="ss_msl").set_value(200).run()  # iris has 150 rows
    assert not app.exception
    assert any("no threshold is allowed here" in w.value for w in app.warning)
    assert (app.dataframe[0].value["candidates"] == 0).all()
    app.number_input(key="ss_msl").set_value(60).run()
    assert not app.exception
    assert not any("no threshold is allowed here" in w.value for w in app.warning)
    table = app.dataframe[0].value.set_index("strategy")
    # class_centroid's boundaries (2.45, 4.85) leave fewer than 60 rows on a side
    assert table.loc["class_centroid", "quantile fallback"]
    assert not table.loc["exhaustive", "quantile fallback"]
    assert any("fallback" in c.value and "class_centroid" in c.value for c in app.caption)
