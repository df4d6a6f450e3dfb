"""AppTest of the Learn pages: every lesson walked with right and wrong answers, the
challenge grown, graded and scored, predictions on the sidebar's dataset, the glossary."""

import numpy as np
import pytest

from engine.teaching import challenge
from engine.teaching.lessons import LESSONS, compute_step
from pages._teaching import SKIPPED

pytestmark = pytest.mark.slow


def _texts(at, kind):
    return [e.value for e in getattr(at, kind)]


def _answer(at, key, value):
    at.radio(key=f"learn_answer::{key}").set_value(value).run()
    at.button(key="learn_check_btn").click().run()
    assert not at.exception, at.exception


@pytest.mark.parametrize("lesson_id", list(LESSONS))
def test_walk_a_lesson_with_right_and_wrong_answers(app, lesson_id):
    """Step by step: no figure before the answer; the first step answered right (success,
    figures shown), the next ones wrong (error naming the computed answer), the last one
    revealed without answering; the score counts first answers only."""
    lesson = LESSONS[lesson_id]
    app.switch_page("pages/learn.py").run()
    assert not app.exception, app.exception
    app.selectbox(key="learn_lesson").set_value(lesson_id).run()
    assert app.title[0].value == "Lessons"
    expected_correct = 0
    for i, step in enumerate(lesson.steps):
        assert app.radio(key=f"learn_step::{lesson_id}").value == i
        key = f"{lesson_id}/{step.id}"
        assert not app.get("plotly_chart"), "a figure was shown before the answer"
        result = compute_step(lesson_id, step.id)
        answer = step.question.answer(result)
        options = step.question.options(result)
        assert app.radio(key=f"learn_answer::{key}").options == options
        last = i == len(lesson.steps) - 1
        if last and i > 0:
            app.button(key="learn_reveal_btn").click().run()
            assert any(answer in t for t in _texts(app, "info"))
        elif i == 0:
            _answer(app, key, answer)
            assert any(t.startswith("**Right.**") for t in _texts(app, "success"))
            expected_correct += 1
            # a second answer after the reveal does not change the score
            _answer(app, key, next(o for o in options if o != answer))
            assert any(t.startswith("**Right.**") for t in _texts(app, "success"))
        else:
            wrong = next(o for o in options if o != answer)
            _answer(app, key, wrong)
            errors = _texts(app, "error")
            assert errors and "Not quite" in errors[0] and answer in errors[0]
        assert len(app.get("plotly_chart")) == len(result.figures)
        if result.table is not None:
            assert len(app.dataframe) >= 1
        board = app.session_state["learn_scoreboard"]
        assert board.attempts[key].answer == answer
        if not last:
            app.button(key="learn_next_btn").click().run()
            assert not app.exception, app.exception
    board = app.session_state["learn_scoreboard"]
    assert board.summary(f"{lesson_id}/") == (expected_correct, len(lesson.steps))
    if len(lesson.steps) > 1:
        assert board.attempts[f"{lesson_id}/{lesson.steps[-1].id}"].chosen == SKIPPED
    # the score panel's label counts the answers of this run
    assert any(
        f"{expected_correct} correct of {len(lesson.steps)} answered" in e.label
        for e in app.expander
    )


def test_check_without_an_answer_asks_for_one(app):
    app.switch_page("pages/learn.py").run()
    app.button(key="learn_check_btn").click().run()
    assert not app.exception
    assert any("Pick an answer first" in w for w in _texts(app, "warning"))
    assert app.session_state["learn_scoreboard"].n_answered == 0


def _grow(app, leaf, feature, threshold):
    app.selectbox(key="learn_ch_leaf").set_value(leaf).run()
    app.selectbox(key="learn_ch_feature").set_value(feature).run()
    key = f"learn_ch_threshold::{leaf}:{_feature_index(app, feature)}"
    slider = app.select_slider(key=key)
    slider.set_value(float(min(slider.options, key=lambda v: abs(float(v) - threshold)))).run()
    assert not app.exception, app.exception
    app.button(key="learn_ch_split_run").click().run()
    assert not app.exception, app.exception


def _history_key(app):
    return next(k for k in app.session_state if str(k).startswith("_learn_ch_history::"))


def _feature_index(app, feature):
    return app.selectbox(key="learn_ch_feature").options.index(feature)


def test_challenge_grow_grade_and_score(app):
    """Grow two splits on Iris by the widgets; the counts shown equal a direct computation;
    the grade equals challenge.grade on the page's own rows; the score table gets a row."""
    from engine.data import train_test_rows

    app.switch_page("pages/learn_challenge.py").run()
    assert not app.exception, app.exception
    assert app.title[0].value == "Build your own tree"
    assert app.button(key="learn_ch_grade_run").disabled  # nothing to grade yet
    _grow(app, 0, "petal length (cm)", 2.45)
    history = app.session_state[_history_key(app)]
    assert len(history) == 2 and history[-1].n_splits == 1
    _grow(app, 2, "petal width (cm)", 1.7)
    tree = app.session_state[_history_key(app)][-1]
    assert tree.n_splits == 2 and tree.max_depth == 2
    from engine.teaching.datasets import bundled  # the page's rows: the shared seeded split

    d = bundled("iris")
    rows = train_test_rows(len(d.y), d.y, test_size=0.3, random_state=0)
    Xtr, ytr, Xte, yte = d.X[rows.train], d.y[rows.train], d.X[rows.test], d.y[rows.test]
    # the preview of the next split shows the counts of a direct computation
    app.selectbox(key="learn_ch_leaf").set_value(4).run()
    app.selectbox(key="learn_ch_feature").set_value("sepal length (cm)").run()
    table = app.dataframe[0].value
    threshold = challenge.snap(Xtr[tree.apply(Xtr) == 4, 0], float(app.select_slider[0].value))
    rows4 = tree.apply(Xtr) == 4
    left = rows4 & (Xtr[:, 0] <= threshold)
    assert list(table["virginica"]) == [
        int(np.sum(ytr[left] == 2)),
        int(np.sum(ytr[rows4 & ~left] == 2)),
    ]

    # the hint (the decrease at every threshold, CART's best starred) only on request
    def preview_traces():
        import json

        chart = next(c for c in app.get("plotly_chart") if "learn_ch_preview" in str(c.proto.id))
        return [t.get("name", "") for t in json.loads(chart.proto.spec)["data"]]

    assert not any("best threshold" in name for name in preview_traces())
    app.toggle(key="learn_ch_hints").set_value(True).run()
    assert any(name.startswith("best threshold") for name in preview_traces())
    app.text_input(key="learn_ch_player").input("Ada").run()
    app.button(key="learn_ch_grade_run").click().run()
    assert not app.exception, app.exception
    grade = challenge.grade(tree, Xtr, ytr, Xte, yte, 3)
    shown = _texts(app, "success") + _texts(app, "info")
    assert any(f"Your tree misclassifies {grade.train_errors} of 105" in t for t in shown)
    assert any(f"misclassifies {grade.optimal_train_errors}, proven" in t for t in shown)
    scores = app.dataframe[-1].value
    assert list(scores["player"]) == ["Ada"]
    assert int(scores["held-out errors"][0]) == grade.test_errors
    assert int(scores["best train errors"][0]) == grade.optimal_train_errors
    # undo and start over
    app.button(key="learn_ch_undo_btn").click().run()
    assert app.session_state[_history_key(app)][-1].n_splits == 1
    app.button(key="learn_ch_reset_btn").click().run()
    assert app.session_state[_history_key(app)][-1].n_splits == 0


def test_challenge_on_a_regression_target_says_what_to_pick(app):
    app.selectbox(key="ds").set_value("diabetes").run()
    app.switch_page("pages/learn_challenge.py").run()
    assert not app.exception
    assert any("classification trees" in t for t in _texts(app, "info"))


@pytest.mark.parametrize("kind", ["root", "top", "p"])
def test_predict_then_reveal_on_the_sidebar_dataset(app, kind):
    from engine.teaching import predict
    from engine.teaching.datasets import bundled

    app.selectbox(key="ds").set_value("wine").run()
    app.switch_page("pages/learn_predict.py").run()
    app.radio(key="learn_pr_kind").set_value(kind).run()
    assert not app.exception, app.exception
    assert not app.get("plotly_chart") and not app.dataframe
    d = bundled("wine")
    if kind == "root":
        q = predict.root_feature(d.X, d.y, d.feature_names, d.task)
    elif kind == "top":
        q = predict.top_feature(d.X, d.y, d.feature_names, d.task, 0, class_names=d.class_names)
    else:
        q = predict.p_value_significant(d.X, d.y, d.feature_names, d.task)
    radio = next(r for r in app.radio if str(r.key).startswith("learn_pr_answer::"))
    assert radio.options == q.options
    wrong = next(o for o in q.options if o != q.answer)
    radio.set_value(wrong).run()
    app.button(key="learn_pr_check_btn").click().run()
    assert not app.exception, app.exception
    assert "Not quite" in app.error[0].value and q.answer in app.error[0].value
    assert len(app.get("plotly_chart")) == len(q.figures)
    board = app.session_state["learn_scoreboard"]
    assert board.n_answered == 1 and board.n_correct == 0
    # a right answer to another row counts
    if kind == "top":
        app.number_input[0].set_value(3).run()
        q3 = predict.top_feature(d.X, d.y, d.feature_names, d.task, 3, class_names=d.class_names)
        radio = next(r for r in app.radio if str(r.key).startswith("learn_pr_answer::"))
        radio.set_value(q3.answer).run()
        app.button(key="learn_pr_check_btn").click().run()
        assert app.success and "Right" in app.success[0].value
        assert board.n_correct == 1


def test_glossary_page_lists_and_searches(app):
    from engine.teaching.glossary import GLOSSARY, anchor

    app.switch_page("pages/learn_glossary.py").run()
    assert not app.exception
    # every term a heading with its own anchor (the method pages' links open at it)
    headings = {h.value: h.anchor for h in app.subheader}
    assert headings == {term: anchor(term) for term in GLOSSARY}
    assert len(set(headings.values())) == len(GLOSSARY)
    text = " ".join(m.value for m in app.markdown).replace("\\", "")  # md() escapes
    assert all(GLOSSARY[term] in text for term in GLOSSARY)
    app.text_input(key="learn_gl_query").input("Bonferroni").run()
    shown = [h.value for h in app.subheader]
    assert "Bonferroni" in shown and "leaf" not in shown
    app.text_input(key="learn_gl_query").input("zzzz").run()
    assert app.info and "No term matches" in app.info[0].value
