"""Predict first on the method pages (Conditional inference, Optimal shape trees, Feature
ranking): the question's answer is read off the page's own result and scored in the
session's scoreboard, shared with the Learn pages.

Oracles: the fitted trees' arrays and node records read directly (the root's feature, the
root's p-values adjusted by hand), brute-force Shapley values over every coalition of the
path-dependent game, and the page's own revealed figures.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine

from engine.cart.estimator import CARTClassifier
from engine.cit import ConditionalInferenceTreeClassifier
from engine.teaching import predict
from engine.teaching.lessons import NO, YES
from engine.teaching.quiz import Scoreboard

TIMEOUT = 120
CIT_PAGE = "pages/conditional_inference.py"
LIT_PAGE = "pages/optimal_shape_trees.py"
TG_PAGE = "pages/feature_ranking.py"


def partykit_adjusted(p: float, m: int) -> float:
    """1 - (1 - p)^m, partykit's adjustment for m tests, without cancelling to 0 for a tiny
    p (1 - (1 - 1e-24)^13 is 0 in floating point)."""
    return float(-np.expm1(m * np.log1p(-p)))


# -- the engine's questions and answers --------------------------------------------------------
def test_root_split_answer_is_the_fitted_root():
    X, y = load_iris(return_X_y=True)
    names = ["sl", "sw", "pl", "pw"]
    tree = CARTClassifier(max_depth=2, random_state=0).fit(X, y).tree_
    q = predict.root_split_question(names)
    assert q.options == (*names, predict.NO_SPLIT)
    a = predict.root_split_answer(tree, names)
    assert a.answer == names[int(tree.feature[0])]
    assert a.correct(names[int(tree.feature[0])])
    assert not a.correct(next(n for n in names if n != a.answer))
    stump = CARTClassifier(max_depth=2, random_state=0).fit(X, np.zeros(len(y), int)).tree_
    assert predict.root_split_answer(stump, names).accepted == (predict.NO_SPLIT,)
    # the key names the page, the kind and the result; the same settings, the same key
    assert predict.result_key("d", {"a": 1}, 3) == predict.result_key("d", {"a": 1}, 3)
    assert predict.result_key("d", {"a": 1}, 3) != predict.result_key("d", {"a": 2}, 3)
    assert q.key("ci", "k1") != q.key("lit", "k1") != q.key("ci", "k2")


@pytest.mark.slow
def test_significance_answer_adjusts_the_root_p_values_by_hand():
    X, y = load_wine(return_X_y=True)
    names = [f"f{j}" for j in range(X.shape[1])]
    answers = set()
    for alpha in (1e-10, 0.05):
        est = ConditionalInferenceTreeClassifier(
            p_value="asymptotic", alpha_selector=alpha, max_depth=1, random_state=0
        ).fit(X, y)
        rec = est.node_records_[0]
        m = rec["n_tested"]
        for f, p in zip(rec["features"], rec["p_values"], strict=True):
            expected = YES if partykit_adjusted(p, m) < alpha else NO
            q = predict.significance_question(names[f], alpha)
            assert q.options == (YES, NO)
            assert predict.significance_answer(est, names, names[f]).answer == expected
            answers.add(expected)
    assert answers == {YES, NO}  # both answers occur
    with pytest.raises(ValueError, match="alpha"):
        predict.significance_question("f0", 1.5)


def test_first_rank_answer_accepts_every_tied_feature():
    names = ["a", "b", "c"]
    a = predict.first_rank_answer({"Shapley": np.array([0.1, 0.3, -0.5])}, names, "Shapley")
    assert a.accepted == ("b",) and a.correct("b") and not a.correct("c")  # signed, not |.|
    tie = predict.first_rank_answer({"Banzhaf": np.array([0.2, 0.2, 0.0])}, names, "Banzhaf")
    assert set(tie.accepted) == {"a", "b"} and tie.correct("a") and tie.correct("b")
    with pytest.raises(ValueError, match="Ranker"):
        predict.first_rank_answer({"Shapley": np.zeros(3)}, names, "Ranker")


def test_scoreboard_takes_the_answer_check_of_a_tie():
    board = Scoreboard()
    board.record("k", "q?", "a", "a or b", correct=True)
    board.record("k", "q?", "c", "a or b", correct=False)  # the first answer counts
    assert board.summary() == (1, 1)
    board.record("k2", "q?", "c", "a")
    assert board.summary() == (1, 2)


# -- the pages in AppTest ----------------------------------------------------------------------
def _page_attempts(app, page):
    if "learn_scoreboard" not in app.session_state:
        return []  # nothing answered in this session yet
    board = app.session_state["learn_scoreboard"]
    return [a for k, a in board.attempts.items() if k.startswith(f"page/{page}/")]


def _hidden(app):
    return any("lock in your answer" in i.value for i in app.info)


def _verdicts(app):
    return [s.value for s in app.success], [e.value for e in app.error]


def _other(options, right):
    return next(o for o in options if o not in right)


@pytest.mark.slow
@pytest.mark.parametrize("outcome", ["right", "wrong"])
def test_cit_page_root_and_p_value_questions(app, outcome):
    app.session_state["ci_n_trees"] = 10  # small forests keep the test fast
    app.session_state["ci_predict_on"] = True
    app.selectbox(key="ds").set_value("iris").run()
    app.switch_page(CIT_PAGE).run()
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert _hidden(app) and "2. The tree" not in [h.value for h in app.subheader]
    # the expected answers, read off the page's own (hidden) fit
    est = app.session_state["ci_job"].result["tree"]
    names = list(app.session_state["ci_job_meta"]["feature_names"])
    root = names[int(est.tree_.feature[0])]
    rec = est.node_records_[0]
    m = rec["n_tested"]
    asked = names[-1]
    p = dict(zip(rec["features"], rec["p_values"], strict=True))[names.index(asked)]
    significant = YES if partykit_adjusted(p, m) < est.alpha_selector else NO
    root_choice = root if outcome == "right" else _other(names, [root])
    sig_choice = significant if outcome == "right" else _other([YES, NO], [significant])
    app.selectbox(key="ci_predict_feature").set_value(asked).run()
    app.selectbox(key="ci_predict_root").set_value(root_choice)
    app.selectbox(key="ci_predict_significant").set_value(sig_choice)
    app.button(key="ci_predict_lock_btn").click().run()
    assert not app.exception, app.exception
    assert not _hidden(app) and "2. The tree" in [h.value for h in app.subheader]
    right, wrong = _verdicts(app)
    assert (len(right), len(wrong)) == ((2, 0) if outcome == "right" else (0, 2))
    attempts = _page_attempts(app, "ci")
    assert sorted(a.answer for a in attempts) == sorted([root, significant])
    assert all(a.correct == (outcome == "right") for a in attempts)
    app.run()  # the first answer counts: a rerun scores nothing again
    assert len(_page_attempts(app, "ci")) == 2


@pytest.mark.slow
@pytest.mark.parametrize("outcome", ["right", "wrong"])
def test_literati_page_root_question(app, outcome):
    app.session_state["lit_predict_on"] = True
    app.selectbox(key="ds").set_value("iris").run()
    app.switch_page(LIT_PAGE).run()
    assert not app.exception, app.exception
    app.slider(key="lit_depth").set_value(2)
    app.number_input(key="lit_time").set_value(10.0)
    app.button(key="lit_run").click().run()
    assert app.session_state["lit_job"].join(TIMEOUT)
    app.run()
    assert not app.exception, app.exception
    assert _hidden(app) and "Result" not in [h.value for h in app.subheader]
    main = app.session_state["_lit_results"][1]["models"]["main"]
    names = list(app.session_state["lit_job_meta"]["feature_names"])
    root = names[int(main.tree_.feature[0])]
    choice = root if outcome == "right" else _other(names, [root])
    app.selectbox(key="lit_predict_root").set_value(choice)
    app.button(key="lit_predict_lock_btn").click().run()
    assert not app.exception, app.exception
    assert "Result" in [h.value for h in app.subheader]
    right, wrong = _verdicts(app)
    verdicts = [v for v in right + wrong if "The root splits" in v]
    assert len(verdicts) == 1 and (verdicts[0] in right) == (outcome == "right")
    (attempt,) = _page_attempts(app, "lit")
    assert attempt.answer == root and attempt.correct == (outcome == "right")


@pytest.mark.slow
@pytest.mark.parametrize("outcome", ["right", "wrong"])
def test_feature_ranking_page_first_feature_question(app, outcome):
    from engine.data import load_bundled, make_dataset
    from engine.treegrad import service
    from engine.treegrad.explain import brute_force_semivalue

    app.session_state["tg_predict_on"] = True
    app.selectbox(key="ds").set_value("iris").run()
    app.switch_page(TG_PAGE).run()
    assert not app.exception, app.exception
    assert _hidden(app) and not app.get("plotly_chart")
    # the page's model, fitted again with its settings, and Shapley values by brute force
    df, _, entry = load_bundled("iris")
    ds = make_dataset(df, entry["target"])
    model = service.fit_model(
        ds,
        app.selectbox(key="tg_kind").value,
        int(app.number_input(key="tg_depth").value),
        int(app.number_input(key="tg_leaves").value),
        int(app.number_input(key="tg_trees").value),
        float(app.number_input(key="tg_gblr").value),
        float(app.slider(key="tg_test").value),
        int(app.session_state["seed"] or 0),
    )[0]
    x = ds.X[int(app.selectbox(key="tg_row").value)]
    cls = int(np.argmax(model.predict_proba(x[None])[0]))
    phi = brute_force_semivalue(model, x, class_index=cls)
    names = list(ds.feature_names)
    top = [names[j] for j in range(len(names)) if phi[j] >= phi.max() - 1e-9]
    choice = top[0] if outcome == "right" else _other(names, top)
    app.selectbox(key="tg_predict_method").set_value("Shapley").run()
    app.selectbox(key="tg_predict_first").set_value(choice)
    app.button(key="tg_predict_lock_btn").click().run()
    assert not app.exception, app.exception
    right, wrong = _verdicts(app)
    verdicts = [v for v in right + wrong if "By Shapley" in v]
    assert len(verdicts) == 1 and (verdicts[0] in right) == (outcome == "right")
    (attempt,) = _page_attempts(app, "tg")
    assert attempt.correct == (outcome == "right") and set(top) == set(attempt.answer.split(" or "))
    # revealed: the page's own Shapley bars rank the same feature first
    fig = next(
        json.loads(c.proto.spec)
        for c in app.get("plotly_chart")
        if "Attributions" in json.loads(c.proto.spec)["layout"]["title"]["text"]
    )
    bars = next(tr for tr in fig["data"] if tr["name"].startswith("Shapley"))
    assert bars["y"][int(np.argmax(_arr(bars["x"])))] in top


def _arr(v):
    """A plotly JSON array: a list, or plotly 6's ``{"dtype", "bdata"}`` base64 encoding."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
    return np.asarray(v)


# -- glossary links from the method pages' help texts and captions ------------------------------
def test_link_terms_links_the_first_use_of_each_term():
    from engine.teaching.glossary import (
        GLOSSARY,
        LINKED_FORMS,
        anchor,
        glossary_links,
        link_terms,
        unlink_terms,
    )

    assert set(LINKED_FORMS.values()) <= set(GLOSSARY)
    text = (
        "Compare p-values with alpha / m (Bonferroni); a p-value of 0.04; the upper bound "
        "and the gap. Gini impurity, then impurity; `gap` in code, [Shapley](https://x.org) "
        "kept, $p$ too; Banzhaf values."
    )
    out = link_terms(text)
    assert glossary_links(out) == [
        "p-value",
        "bonferroni",
        "upper-bound",
        "gap",
        "gini-impurity",
        "impurity",
        "banzhaf-value",
    ]
    assert "[p-values](glossary#p-value)" in out and "a p-value of" in out  # first use only
    assert "`gap`" in out and "[Shapley](https://x.org)" in out  # code and links left alone
    assert "[Banzhaf values](glossary#banzhaf-value)" in out  # plural kept as written
    # nothing but the links was changed
    assert re.sub(r"\[([^\]]*)\]\(glossary#[a-z0-9-]+\)", r"\1", out) == text
    assert unlink_terms(out) == text
    assert link_terms(None) is None and link_terms("no terms here") == "no terms here"
    assert anchor("Gini impurity") == "gini-impurity" and anchor("AUC") == "auc"


WIDGETS = (
    "button",
    "checkbox",
    "multiselect",
    "number_input",
    "radio",
    "select_slider",
    "selectbox",
    "slider",
    "text_input",
    "toggle",
)


def _texts(app):
    """Every widget help text and caption the page drew."""
    helps = [w.help for kind in WIDGETS for w in app.get(kind) if getattr(w, "help", None)]
    return helps, [c.value for c in app.caption]


@pytest.mark.slow
def test_method_pages_link_their_terms_to_existing_glossary_anchors(app):
    from engine.jobs import Job
    from engine.teaching.glossary import GLOSSARY, anchor, glossary_links

    anchors = {anchor(t) for t in GLOSSARY}
    app.selectbox(key="ds").set_value("iris").run()
    linked = {}
    for page in (
        CIT_PAGE,
        LIT_PAGE,
        TG_PAGE,
        "pages/conditional_density.py",
        "pages/split_strategies.py",
    ):
        app.switch_page(page).run()
        for job in [v for v in app.session_state.values() if isinstance(v, Job)]:
            job.join(TIMEOUT)
        app.run()
        assert not app.exception, app.exception
        helps, captions = _texts(app)
        found = [a for text in helps + captions for a in glossary_links(text)]
        assert set(found) <= anchors, (page, set(found) - anchors)
        linked[page] = (helps, captions)
    # the terms the issue names are linked where the pages use them
    cit_helps = " ".join(linked[CIT_PAGE][0])
    assert "glossary#p-value" in cit_helps and "glossary#bonferroni" in cit_helps
    tg_helps = " ".join(linked[TG_PAGE][0])
    assert "glossary#banzhaf-value" in tg_helps
    lit_helps = " ".join(linked[LIT_PAGE][0] + linked[LIT_PAGE][1])
    assert "glossary#breakpoint" in lit_helps
    unlinked = [p for p, (h, c) in linked.items() if not glossary_links(" ".join(h + c))]
    assert not unlinked, {p: linked[p] for p in unlinked}  # every page links some term


@pytest.mark.slow
def test_predict_first_asks_nothing_about_a_result_already_shown(app):
    """Mode off: the tree is shown.  Turned on afterwards: the expander says the result was
    seen and asks nothing, the tree stays; a changed parameter asks again and hides the
    new fit until the answer is locked in."""
    app.session_state["ci_n_trees"] = 10
    app.selectbox(key="ds").set_value("iris").run()
    app.switch_page(CIT_PAGE).run()
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    assert "2. The tree" in [h.value for h in app.subheader]
    app.toggle(key="ci_predict_on").set_value(True).run()
    assert not app.exception, app.exception
    assert any("already seen the tree" in c.value for c in app.caption)
    assert not [s for s in app.selectbox if s.key == "ci_predict_root"]
    assert "2. The tree" in [h.value for h in app.subheader] and not _hidden(app)
    app.number_input(key="ci_max_depth").set_value(2).run()
    assert [s for s in app.selectbox if s.key == "ci_predict_root"]
    app.button(key="ci_run").click().run()
    assert app.session_state["ci_job"].join(TIMEOUT)
    app.run()
    assert _hidden(app) and "2. The tree" not in [h.value for h in app.subheader]
    assert not _page_attempts(app, "ci")  # nothing scored before an answer
