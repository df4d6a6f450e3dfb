"""AppTest of what the pages say about awkward uploads: user text shown as written (never
as Markdown or LaTeX), a target that cannot be used, messages that name the app's own
settings, and errors that stay until the user changes something."""

import pytest

from pages._shared import md

pytestmark = pytest.mark.slow


def upload(app, name: str, text: str) -> str:
    app.file_uploader(key="uploader").set_value((name, text.encode(), "text/csv")).run()
    assert not app.exception, app.exception
    return f"upload:{name}"


def shown(app) -> list[str]:
    """Every message and Markdown text the page shows (main area and sidebar)."""
    out = []
    for kind in ("error", "warning", "info", "success", "caption", "markdown", "subheader"):
        out += [element.value for element in getattr(app, kind)]
    return out


# -- the target ----------------------------------------------------------------------------
TARGET_ALL_NAN = "a,b,t\n" + "".join(f"{i},{i % 5},\n" for i in range(40))


def test_an_empty_last_column_is_not_silently_replaced_as_the_target(app):
    option = upload(app, "target_all_nan.csv", TARGET_ALL_NAN)
    assert app.session_state[f"target::{option}"] is None
    assert app.selectbox(key=f"target::{option}").value is None
    errors = [e.value for e in app.error]
    assert any(
        e.startswith("The target 't' (the file's last column, the usual target) has no values")
        and "Pick another target" in e
        for e in errors
    ), errors
    assert not any("'b'" in e for e in errors)  # no other column was made the target
    for page in ("pages/compare.py", "pages/split_strategies.py"):
        app.switch_page(page).run()
        assert not app.exception, app.exception
        assert any("The target 't'" in e.value for e in app.error), page
    app.switch_page("pages/data.py").run()
    app.selectbox(key=f"target::{option}").set_value("b").run()
    assert not app.exception
    assert not any("The target 't'" in e.value for e in app.error)


def test_a_target_gone_after_a_new_read_of_the_file_is_replaced_with_a_note(app):
    option = upload(
        app, "shop.csv", "a;b;kind\n" + "".join(f"{i};{i % 3};{'xy'[i % 2]}\n" for i in range(30))
    )
    app.selectbox(key=f"target::{option}").set_value("b").run()
    # the same file name again, with other columns: 'b' is gone
    upload(
        app, "shop.csv", "p;q;kind\n" + "".join(f"{i};{i % 3};{'xy'[i % 2]}\n" for i in range(30))
    )
    assert app.session_state[f"target::{option}"] == "kind"
    note = "The target 'b' is not a column of shop.csv (uploaded) any more"
    assert any(w.value.startswith(md(note)) and "'kind'" in w.value for w in app.warning)
    app.run()
    assert any(w.value.startswith(md(note)) for w in app.warning)  # until the user acts
    app.selectbox(key=f"target::{option}").set_value("q").run()
    assert not any(w.value.startswith(md(note)) for w in app.warning)
