"""Every page's state in its link (issue 16 point 2): the widgets a page declares in its
``SavedSettings(link=...)`` go into the query string, a fresh session opened with that
query sets them again, and a bad or unknown parameter gives a warning naming it and the
value used instead."""

import pytest
from streamlit.testing.v1 import AppTest

from pages._links import LinkParam, parse_value
from tests.conftest import APPTEST_TIMEOUT, ROOT

#: Pages whose url_path is not their file name (app.py).
CUSTOM_URL_PATHS = ("pages/learn_glossary.py",)


def fresh_session(monkeypatch, query: dict, page: str | None = None) -> AppTest:
    """A new browser session opened with ``query`` (then ``page``, when given)."""
    from streamlit.testing.v1 import app_test as app_test_module

    from tests.conftest import navigation_pages_manager

    monkeypatch.setattr(app_test_module, "PagesManager", navigation_pages_manager())
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APPTEST_TIMEOUT)
    if page in CUSTOM_URL_PATHS:  # AppTest finds it only after a first run (its docs)
        at.run()
        for key in ("_link_landing", "_link_on_landing"):  # the link opens that page
            del at.session_state[key]
    at.query_params.update(query)
    if page is not None:  # the link opens that page (not the Data page first)
        at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def query_of(at) -> dict:
    return {
        name: value if isinstance(value, str) else value[0]
        for name, value in at.query_params.items()
    }


def warnings_of(at) -> list[str]:
    return [w.value for w in at.warning]


#: page -> (widget kind, key, value set, its URL name and text)
ROUND_TRIPS = {
    "pages/optimal_shape_trees.py": [
        ("slider", "lit_depth", 5, "depth", "5"),
        ("number_input", "lit_time", 45.0, "time", "45.0"),
        ("number_input", "lit_lambda", 0.02, "lambda", "0.02"),
    ],
    "pages/split_strategies.py": [
        ("slider", "ss_depth", 5, "depth", "5"),
        ("number_input", "ss_k", 16, "k", "16"),
    ],
    "pages/compare.py": [("number_input", "cmp_budget", 300, "budget", "300")],
    "pages/conditional_inference.py": [
        ("number_input", "ci_max_depth", 4, "max_depth", "4"),
        ("number_input", "ci_mss", 40, "min_split", "40"),
    ],
    "pages/feature_ranking.py": [("number_input", "tg_depth", 3, "depth", "3")],
}


@pytest.mark.slow  # whole-page runs
@pytest.mark.parametrize("page", list(ROUND_TRIPS))
def test_a_page_link_round_trips_its_widgets(app, monkeypatch, page):
    app.number_input(key="seed").set_value(7).run()
    app.switch_page(page).run()
    for kind, key, value, _name, _text in ROUND_TRIPS[page]:
        getattr(app, kind)(key=key).set_value(value)
    app.run()
    assert not app.exception, app.exception
    query = query_of(app)
    assert query["seed"] == "7"
    for _kind, _key, _value, name, text in ROUND_TRIPS[page]:
        assert query[name] == text
    fresh = fresh_session(monkeypatch, query, page)
    for kind, key, value, _name, _text in ROUND_TRIPS[page]:
        assert getattr(fresh, kind)(key=key).value == value
    assert fresh.number_input(key="seed").value == 7
    assert not warnings_of(fresh)


def test_defaults_are_left_out_of_the_link(app):
    app.switch_page("pages/optimal_shape_trees.py").run()
    app.slider(key="lit_depth").set_value(3).run()  # its default
    assert "depth" not in query_of(app)


def test_a_bad_seed_is_named_with_the_value_used(monkeypatch):
    at = fresh_session(monkeypatch, {"seed": "abc"})
    assert at.number_input(key="seed").value == 0
    assert any("seed" in w and "abc" in w and "0 is used" in w for w in warnings_of(at))


@pytest.mark.slow  # three whole-app runs
def test_a_links_warnings_survive_a_rerun_until_a_setting_changes(monkeypatch):
    """A page that reruns by itself (Conditional inference fits on arrival, its live view
    reruns the page) must not wipe the link's warnings before they are read."""
    at = fresh_session(monkeypatch, {"seed": "-5", "colour": "red"})
    first = [w for w in warnings_of(at) if "Link parameter" in w]
    assert any("seed" in w and "-5" in w for w in first)
    assert any("colour" in w and "red" in w for w in first)
    at.run()  # a rerun nobody asked for: the same warnings, once each
    again = [w for w in warnings_of(at) if "Link parameter" in w]
    assert sorted(again) == sorted(first)
    at.number_input(key="seed").set_value(7).run()  # the user changes a setting
    assert not [w for w in warnings_of(at) if "Link parameter" in w]


def test_an_unknown_dataset_is_named_with_the_value_used(monkeypatch):
    at = fresh_session(monkeypatch, {"ds": "nope"})
    first = at.selectbox(key="ds").options[0]
    assert at.selectbox(key="ds").value == "iris"
    assert any("ds" in w and "nope" in w and "is used instead" in w for w in warnings_of(at))
    assert first


def test_an_out_of_range_page_parameter_is_moved_to_its_bound(warm_engine, monkeypatch):
    at = fresh_session(monkeypatch, {"depth": "99"}, "pages/optimal_shape_trees.py")
    assert at.slider(key="lit_depth").value == 8
    assert any("depth" in w and "99" in w and "8 is used" in w for w in warnings_of(at))
    assert query_of(at)["depth"] == "8"


def test_an_unknown_parameter_is_named_and_dropped(warm_engine, monkeypatch):
    at = fresh_session(monkeypatch, {"colour": "red"}, "pages/split_strategies.py")
    assert any("colour" in w and "red" in w and "ignored" in w for w in warnings_of(at))
    assert "colour" not in query_of(at)


def test_an_unknown_name_suggests_the_nearest_and_lists_the_pages_names(warm_engine, monkeypatch):
    at = fresh_session(
        monkeypatch, {"max_depth": "99", "dataset": "wine"}, "pages/optimal_shape_trees.py"
    )
    shown = warnings_of(at)
    depth = next(w for w in shown if "max_depth" in w)
    assert "did you mean `depth`?" in depth and "'99'" in depth and "ignored" in depth
    assert "`kmax`" in depth and "`time`" in depth  # the page's names are listed
    assert any("dataset" in w and "did you mean `ds`?" in w for w in shown)
    assert "max_depth" not in query_of(at) and "dataset" not in query_of(at)


def test_a_whole_number_of_many_digits_is_moved_to_its_bound():
    """More than 20 digits is still a whole number: above the range, not 'not a number'."""
    param = LinkParam("x", "x", int, 5, low=2, high=10)
    assert parse_value(param, "9" * 23) == (10, "is above the greatest allowed value 10")
    assert parse_value(param, "-" + "9" * 5000) == (2, "is below the least allowed value 2")
    assert parse_value(param, "0" * 30 + "7") == (7, None)
    unbounded = LinkParam("y", "y", int, 5, low=0)
    assert parse_value(unbounded, "9" * 30) == (5, "is too large")


def test_a_very_long_link_value_is_quoted_cut_in_its_warning(monkeypatch):
    """3,000 bad list items, a 5,000-character text: the warning stays a few lines."""
    from pages._links import MAX_QUOTED

    bad = ",".join(f"bogus{index}" for index in range(3000))
    value, problem = parse_value(LinkParam("m", "m", list, ["a"], options=("a", "b")), bad)
    assert value == ["a"] and "'bogus0'" in problem and "and 2988 more" in problem
    assert len(problem) < 400
    at = fresh_session(monkeypatch, {"seed": "9" * 5000, "ds": "x" * 5000})
    shown = [w for w in warnings_of(at) if "Link parameter" in w]
    assert len(shown) == 2 and all(len(w) < 2 * MAX_QUOTED + 300 for w in shown), shown
    assert any("(5,000 characters)" in w and "seed" in w for w in shown)


def test_values_are_parsed_never_evaluated():
    param = LinkParam("x", "x", int, 3, low=1, high=8)
    assert parse_value(param, "__import__('os')") == (3, "is not a whole number")
    assert parse_value(param, "0")[0] == 1
    assert parse_value(param, "4") == (4, None)
    flag = LinkParam("y", "y", bool, False)
    assert parse_value(flag, "1") == (True, None)
    assert parse_value(flag, "maybe")[0] is False
    number = LinkParam("z", "z", float, 0.5, low=0.0, high=1.0)
    assert parse_value(number, "nan")[0] == 0.5
    choice = LinkParam("c", "c", str, "gini", options=("gini", "entropy"))
    assert parse_value(choice, "entropy") == ("entropy", None)
    assert parse_value(choice, "bad")[0] == "gini"


def test_sidebar_target_task_and_projection_come_from_the_link(monkeypatch):
    at = fresh_session(
        monkeypatch, {"ds": "wine", "task": "regression", "projection": "1", "target": "nope"}
    )
    assert at.selectbox(key="ds").value == "wine"
    assert at.radio(key="task::wine").value == "regression"
    assert at.toggle(key="projection").value is True
    assert any("target" in w and "nope" in w for w in warnings_of(at))


# -- every declared parameter -------------------------------------------------------------------
def other_value(param: LinkParam):
    """A value of ``param`` other than its default (cheap: the lowest number of the range, a
    single item, another option)."""
    options = param.allowed()
    if param.kind is list:
        first = [options[0]]
        return first if list(param.default) != first else [options[-1]]
    if param.kind is bool:
        return not param.default
    if options:
        return next(option for option in options if option != param.default)
    if param.kind is str:
        return {"bd": "6, 3", "q": "gini"}[param.name]
    low = param.low if param.low is not None else 0
    value = param.kind(low)
    return value if value != param.default else param.kind(param.high)


IRIS_FEATURES = ("sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)")


def iris_links() -> dict:
    """page script -> its parameters on the default dataset (iris: classification, 4
    features), as the page declares them."""
    from pages import _link_params as links

    return {
        "pages/optimal_shape_trees.py": links.optimal_shape_trees_link(),
        "pages/split_strategies.py": links.split_strategies_link("classification"),
        "pages/compare.py": links.compare_link("classification"),
        "pages/conditional_inference.py": links.conditional_inference_link("classification", 4),
        "pages/feature_ranking.py": links.feature_ranking_link(),
        "pages/conditional_density.py": links.conditional_density_link("classification"),
        "pages/data.py": links.data_link("iris", IRIS_FEATURES),
        "pages/learn_growth.py": links.learn_growth_link(),
        "pages/learn_predict.py": links.learn_predict_link(),
        "pages/learn_glossary.py": links.glossary_link(),
    }


#: Feature ranking's settings whose values depend on the model, its test split or the row
#: (tested on their own).
OF_THE_SPLIT = ("tg_row", "tg_class", "tg_topk", "tg_batch", "tg_edits")


def link_warnings(at) -> list[str]:
    return [w for w in warnings_of(at) if "Link parameter" in w]


@pytest.mark.slow
@pytest.mark.parametrize("page", list(iris_links()))
def test_every_declared_parameter_round_trips(warm_engine, monkeypatch, page):
    """All of the page's parameters at non-default values in the URL: a fresh session sets
    every widget to them, warns about none, and mirrors every one back into the URL."""
    from pages._links import format_value

    params = [p for p in iris_links()[page] if p.key not in OF_THE_SPLIT]
    assert params
    values = {param.key: other_value(param) for param in params}
    query = {param.name: format_value(param, values[param.key]) for param in params}
    at = fresh_session(monkeypatch, {"ds": "iris", **query}, page)
    assert not link_warnings(at)
    for param in params:
        assert at.session_state[param.key] == values[param.key], param.name
    mirrored = query_of(at)
    for param in params:
        assert mirrored.get(param.name) == query[param.name], param.name


@pytest.mark.slow
def test_regression_keys_of_conditional_density_round_trip(warm_engine, monkeypatch):
    """The leaf budget and volume fraction have one widget per task: a regression dataset's
    link sets the regression widgets."""
    at = fresh_session(
        monkeypatch,
        {"ds": "diabetes", "max_leaves": "33", "min_volume": "0.25", "model": "forest"},
        "pages/conditional_density.py",
    )
    assert not link_warnings(at)
    assert at.number_input(key="pt_max_leaves_regression").value == 33
    assert at.number_input(key="pt_mvf_regression").value == 0.25
    assert at.radio(key="pt_kind").value == "forest"
    assert query_of(at)["max_leaves"] == "33"


@pytest.mark.slow  # a whole-page run
def test_a_list_parameter_names_each_bad_item(warm_engine, monkeypatch):
    at = fresh_session(
        monkeypatch,
        {"strategies": "quantile,nope,random,worse"},
        "pages/split_strategies.py",
    )
    assert at.multiselect(key="ss_strategies").value == ["quantile", "random"]
    (warning,) = link_warnings(at)
    assert "strategies" in warning and "'nope', 'worse'" in warning
    assert "quantile,random is used instead" in warning
    assert query_of(at)["strategies"] == "quantile,random"


@pytest.mark.slow  # a whole-page run
def test_a_bad_list_item_on_the_data_page_is_named(warm_engine, monkeypatch):
    query = {"categorical": "petal width (cm),species,zzz"}
    at = fresh_session(monkeypatch, query, "pages/data.py")
    assert at.multiselect(key="categorical::iris").value == ["petal width (cm)"]
    (warning,) = link_warnings(at)
    assert "'species', 'zzz'" in warning and "petal width (cm) is used instead" in warning


LEARN_PAGES = [
    "pages/learn.py",
    "pages/learn_challenge.py",
    "pages/learn_growth.py",
    "pages/learn_predict.py",
    "pages/learn_glossary.py",
    "pages/data.py",
]


@pytest.mark.slow  # a whole-page run
@pytest.mark.parametrize("page", LEARN_PAGES)
def test_data_and_learn_pages_name_an_unknown_parameter(warm_engine, monkeypatch, page):
    at = fresh_session(monkeypatch, {"colour": "red"}, page)
    assert any("colour" in w and "red" in w and "ignored" in w for w in link_warnings(at))
    assert "colour" not in query_of(at)


@pytest.mark.slow  # a whole-page run
def test_a_learn_link_opens_the_lesson_and_step(warm_engine, monkeypatch):
    from engine.teaching.lessons import LESSONS

    second = list(LESSONS)[1]
    at = fresh_session(monkeypatch, {"lesson": second, "step": "2"}, "pages/learn.py")
    assert not link_warnings(at)
    assert at.selectbox(key="learn_lesson").value == second
    assert at.radio(key=f"learn_step::{second}").value == 1
    assert query_of(at)["step"] == "2" and query_of(at)["lesson"] == second
    bad = fresh_session(monkeypatch, {"lesson": second, "step": "99"}, "pages/learn.py")
    assert any("step" in w and "99" in w for w in link_warnings(bad))
    assert bad.radio(key=f"learn_step::{second}").value == 0


@pytest.mark.slow  # a whole-page run
def test_a_bad_missing_value_choice_is_named(monkeypatch):
    at = fresh_session(monkeypatch, {"missing": "maybe"})
    assert at.selectbox(key="missing").value == "keep"
    assert any("missing" in w and "maybe" in w for w in link_warnings(at))


def test_the_docs_list_every_declared_parameter():
    """docs/deploy.md holds the table generated from the declarations, as it is now."""
    from pages._link_params import declared_links, link_table

    doc = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    begin, end = "<!-- link-parameters:begin -->\n", "<!-- link-parameters:end -->"
    shown = doc[doc.index(begin) + len(begin) : doc.index(end)]
    assert shown == link_table(), "run `python -m pages._link_params` and paste its table"
    for page, params in declared_links().items():
        for param in params:
            assert f"`{param.name}`" in shown, (page, param.name)


@pytest.mark.slow
def test_feature_rankings_sample_row_and_class_round_trip(warm_engine, monkeypatch):
    """The row, the class explained and the features shown depend on the split and the
    model: a link's values that fit are set; a row outside the test split, a class the
    model does not have and too many features are each named with the value used."""
    page = "pages/feature_ranking.py"
    first = fresh_session(monkeypatch, {"ds": "iris"}, page)
    rows = [label.split()[1] for label in first.selectbox(key="tg_row").options]  # "row 9 (..."
    row = int(rows[3])
    query = {"ds": "iris", "row": str(row), "class": "2", "features_shown": "2"}
    at = fresh_session(monkeypatch, query, page)
    assert not link_warnings(at)
    assert at.session_state["tg_row"] == row and at.session_state["tg_class"] == 2
    assert at.session_state["tg_topk"] == 2
    mirrored = query_of(at)
    assert mirrored["row"] == str(row) and mirrored["class"] == "2"
    train_row = next(r for r in range(150) if str(r) not in rows)
    bad = {"ds": "iris", "row": str(train_row), "class": "7", "features_shown": "9"}
    at = fresh_session(monkeypatch, bad, page)
    texts = link_warnings(at)
    used = at.session_state["tg_row"]  # the page's opening row (teaching_row)
    assert str(used) in rows
    assert any(
        f"'{train_row}' is not a test row of this split; {used} is used" in w for w in texts
    ), texts
    assert any("'7' is not a class of this model (0 to 2); \\-1 is used" in w for w in texts), texts
    assert any("'9' is more than the 4 features; 4 is used" in w for w in texts), texts
    assert at.session_state["tg_class"] == -1


def test_what_if_edits_text_round_trips_and_names_each_bad_item():
    from pages._link_params import format_edits, parse_edits

    categories = [None, ["Biscoe", "Dream", "Torgersen"], None]
    edits = {0: 50.5, 1: 2, 2: -1.25}
    assert format_edits(edits) == "0=50.5;1=2;2=-1.25"
    assert parse_edits(format_edits(edits), 3, categories) == (edits, [])
    assert parse_edits("1=na", 3, categories) == ({1: None}, [])
    parsed, problems = parse_edits("0=abc;1=3;7=1;x=2;2=inf;;0=1e3", 3, categories)
    assert parsed == {0: 1000.0}
    assert [item for item, _ in problems] == ["0=abc", "1=3", "7=1", "x=2", "2=inf"]
    assert "category code 0 to 2 or na" in dict(problems)["1=3"]
    assert parse_edits("0=__import__('os')", 3, categories)[0] == {}  # text, never code


@pytest.mark.slow  # two whole-page runs
def test_feature_rankings_what_if_edits_round_trip(warm_engine, monkeypatch):
    """A link's what-if edits (a number, a category, a missing category) are put in the
    row's editors: the page explains the edited row and mirrors the same edits back; a bad
    item is named and left out."""
    page = "pages/feature_ranking.py"
    import pandas as pd

    first = fresh_session(monkeypatch, {"ds": "penguins"}, page)
    table = pd.read_csv(ROOT / "assets" / "datasets" / "penguins.csv")
    rows = [int(label.split()[1]) for label in first.selectbox(key="tg_row").options]
    row = next(r for r in rows if pd.notna(table.loc[r, "sex"]))  # a row whose sex is known
    names = [first.selectbox(key="tg_edit_feature").format_func(j) for j in range(7)]
    bill, island, sex = names.index("bill_length_mm"), names.index("island"), names.index("sex")
    edits = {bill: 61.5, island: 1}
    from pages._link_params import format_edits

    text = format_edits(edits) + ";99=1"
    at = fresh_session(monkeypatch, {"ds": "penguins", "row": str(row), "edits": text}, page)
    warned = link_warnings(at)
    assert len(warned) == 1 and "'99\\=1' names no feature" in warned[0], warned
    what_if = " ".join(info.value for info in at.info if info.value.startswith("What-if"))
    assert "**bill_length_mm**" in what_if and "61.5" in what_if, what_if
    assert "**island**" in what_if and "Dream" in what_if, what_if
    assert query_of(at)["edits"] == format_edits(edits)
    # missing is offered only where the row's own value is missing (as in the editor)
    at = fresh_session(monkeypatch, {"ds": "penguins", "row": str(row), "edits": f"{sex}=na"}, page)
    assert any(f"'{sex}\\=na' is not offered: sex is not missing" in w for w in link_warnings(at))
    assert "edits" not in query_of(at)


@pytest.mark.parametrize("page", ["pages/home.py", "pages/data.py", "pages/learn.py"])
def test_link_warnings_are_drawn_under_the_page_title(warm_engine, monkeypatch, page):
    """The sidebar reads its parameters before the page draws; its warning still comes
    right under the page's title, not above it."""
    at = fresh_session(monkeypatch, {"seed": "abc"}, page)
    nodes = [at.main.children[i] for i in sorted(at.main.children)]
    assert nodes[0].type == "title"
    assert nodes[1].type == "warning" and "Link parameter seed" in nodes[1].value
    assert not any(n.type == "warning" and "seed" in n.value for n in nodes[2:])
