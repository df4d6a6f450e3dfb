"""Every page's state in its link (issue 16 point 2): the widgets a page declares in its
``SavedSettings(link=...)`` go into the query string, a fresh session opened with that
query sets them again, and a bad or unknown parameter gives a warning naming it and the
value used instead."""

import pytest
from streamlit.testing.v1 import AppTest

from pages._links import LinkParam, parse_value
from tests.conftest import APPTEST_TIMEOUT, ROOT


def fresh_session(monkeypatch, query: dict, page: str | None = None) -> AppTest:
    """A new browser session opened with ``query`` (then ``page``, when given)."""
    from streamlit.testing.v1 import app_test as app_test_module

    from tests.conftest import _NavigationPagesManager

    monkeypatch.setattr(app_test_module, "PagesManager", _NavigationPagesManager)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APPTEST_TIMEOUT)
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
