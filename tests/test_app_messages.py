"""AppTest of what the pages say about awkward uploads: user text shown as written (never
as Markdown or LaTeX), a target that cannot be used, messages that name the app's own
settings, and errors that stay until the user changes something."""

import pytest

from pages._shared import md


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


@pytest.mark.slow
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


@pytest.mark.slow
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


# -- user text in Markdown -----------------------------------------------------------------
MARKDOWN_LABELS = "$price$,**bold**,<b>html</b>,class\n" + "".join(
    f"{i},{i % 3},{i % 4},{['$5 off', '**VIP**', '_x_'][i % 3] if i else '$1 *one*'}\n"
    for i in range(40)
)


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("$price$", r"\$price\$"),
        ("**VIP**", r"\*\*VIP\*\*"),
        ("_x_", r"\_x\_"),
        ("order_id", "order_id"),  # an underscore inside a word is not emphasis
        ("<b>html</b>", r"\<b>html\</b>"),
        ("[link](x) ~a~ `c` a|b &amp;", r"\[link\](x) \~a\~ \`c\` a\|b \&amp;"),
        ("# heading", r"\# heading"),
        ("1. item", r"1\. item"),
        ("- item", r"\- item"),
        ("back\\slash", "back\\\\slash"),
    ],
)
def test_md_escapes_markdown_and_latex(text, escaped):
    assert md(text) == escaped
    # CommonMark drops the backslash of an escaped ASCII punctuation mark: the text as written
    unescaped = __import__("re").sub(r"\\([!-/:-@\[-`{-~])", r"\1", md(text))
    assert unescaped == text


@pytest.mark.slow
def test_column_names_and_labels_are_shown_as_written(app):
    option = upload(app, "markdown_labels.csv", MARKDOWN_LABELS)
    assert app.selectbox(key=f"target::{option}").value == "class"
    infos = [i.value for i in app.info]
    assert any(i.startswith(r"**\$price\$** looks like an identifier") for i in infos), infos
    texts = shown(app)
    caption = next(t for t in texts if "rows x" in t)
    assert "**markdown\\_labels.csv (uploaded)**" not in caption  # '_' inside a word is kept
    assert "target **class**" in caption
    # no message shows a name or label unescaped
    for raw in ("$price$", "**bold**", "<b>html</b>", "$5 off", "**VIP**"):
        assert not any(raw in t for t in texts), raw
    # the class seen once is named in the small-class note, as written
    assert any(i.startswith(r"Class '\$1 \*one\*' (1 row) of the target 'class'") for i in infos)
    # the target named '**bold**' in the caption, and '$price$' brought back as a feature
    app.multiselect(key=f"left_out::{option}").set_value([]).run()
    app.selectbox(key=f"target::{option}").set_value("**bold**").run()
    assert not app.exception
    assert any(r"target **\*\*bold\*\*** (classification" in t for t in shown(app))
    for raw in ("$price$", "**bold**", "<b>html</b>"):
        assert not any(raw in t for t in shown(app)), raw


# -- folds and plan errors -----------------------------------------------------------------
TINY3 = "x,y,t\n1,2,a\n2,3,b\n3,1,a\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "key"), [("compare", "cmp_folds"), ("split_strategies", "ss_cv_folds")]
)
def test_folds_are_at_most_the_number_of_rows(app, page, key):
    app.switch_page(f"pages/{page}.py").run()  # on iris: 2..10
    assert (app.slider(key=key).min, app.slider(key=key).max) == (2, 10)
    app.slider(key=key).set_value(7).run()
    app.switch_page("pages/data.py").run()
    upload(app, "tiny3.csv", TINY3)
    app.switch_page(f"pages/{page}.py").run()
    assert not app.exception, app.exception
    slider = app.slider(key=key)
    assert (slider.min, slider.max, slider.value) == (2, 3, 3)
    captions = [c.value for c in app.caption]
    assert (
        "At most 3 folds: the dataset has 3 rows and every fold needs at least one "
        "(7 chosen before, lowered to 3)." in captions
    ), captions
    app.button(key=key.split("_")[0] + "_run").click().run()
    assert not app.exception
    assert not any("number of folds" in e.value for e in app.error)
    assert "At most 3 folds: the dataset has 3 rows and every fold needs at least one." in [
        c.value for c in app.caption
    ]


@pytest.mark.slow
def test_a_plan_error_stays_until_a_setting_changes(app, monkeypatch):
    import engine.compare

    def refuse(*args, **kwargs):
        raise ValueError("The plan cannot run: test_price_$5.")

    monkeypatch.setattr(engine.compare, "plan_comparison", refuse)
    app.switch_page("pages/compare.py").run()
    app.button(key="cmp_run").click().run()
    assert not app.exception, app.exception
    message = md("The plan cannot run: test_price_$5.")
    assert [e.value for e in app.error] == [message]
    app.run()  # a rerun without a change (e.g. a rerun of the page) keeps it
    assert [e.value for e in app.error] == [message]
    app.switch_page("pages/data.py").run()
    app.switch_page("pages/compare.py").run()
    assert [e.value for e in app.error] == [message]
    app.number_input(key="cmp_budget").set_value(60).run()
    assert not app.error
    assert any(i.value == "Choose models and press **Run**." for i in app.info)
