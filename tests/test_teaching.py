"""engine/teaching: lessons' answers come from the computed results, the challenge's scores
equal a direct computation and its "best possible" equals LiteratiClassifier on the same
candidates and a brute force over every tree on a tiny dataset."""

import itertools

import numpy as np
import pytest

from engine.teaching import challenge, predict
from engine.teaching.glossary import GLOSSARY, lookup
from engine.teaching.lessons import LESSONS, YES, check_answer, compute_step
from engine.teaching.quiz import Scoreboard

STEPS = [(lesson.id, step.id) for lesson in LESSONS.values() for step in lesson.steps]


# -- lessons ---------------------------------------------------------------------------------


def test_every_lesson_has_steps_with_questions_and_known_terms():
    assert list(LESSONS) == ["cart_split", "literati", "partition", "treegrad", "cit", "dics"]
    for lesson in LESSONS.values():
        assert 2 <= len(lesson.steps) <= 5
        assert len({s.id for s in lesson.steps}) == len(lesson.steps)
        for step in lesson.steps:
            assert step.text.count(".") >= 2  # a few sentences
            for term in step.terms:
                assert lookup(term) is not None, f"{lesson.id}/{step.id}: {term!r} not in glossary"


@pytest.mark.slow
@pytest.mark.parametrize(("lesson_id", "step_id"), STEPS)
def test_each_step_answer_is_an_option_and_checked(lesson_id, step_id):
    step = LESSONS[lesson_id].step(step_id)
    result = compute_step(lesson_id, step_id)
    options = step.question.options(result)
    answer = step.question.answer(result)
    assert answer in options and len(set(options)) == len(options) >= 2
    right = check_answer(step.question, result, answer)
    assert right.correct and right.answer == answer and right.explanation
    wrong = next(o for o in options if o != answer)
    assert not check_answer(step.question, result, wrong).correct
    with pytest.raises(ValueError, match="not an option"):
        check_answer(step.question, result, "something else")


@pytest.mark.slow
def test_lesson_answers_match_independent_fits():
    """The answers are what the estimators compute, refitted here independently."""
    from sklearn.tree import DecisionTreeClassifier

    from engine.teaching import datasets

    wine = datasets.bundled("wine")
    sk = DecisionTreeClassifier(max_depth=1, random_state=0).fit(wine.X, wine.y)
    result = compute_step("cart_split", "root_feature")
    assert (
        LESSONS["cart_split"].step("root_feature").question.answer(result)
        == (wine.feature_names[sk.tree_.feature[0]])
    )
    # the best Gini threshold on petal length equals scikit-learn's stump
    iris = datasets.bundled("iris")
    j = iris.feature_names.index("petal length (cm)")
    stump = DecisionTreeClassifier(max_depth=1).fit(iris.X[:, [j]], iris.y)
    threshold = compute_step("cart_split", "threshold").facts["best_threshold"]
    assert threshold == pytest.approx(stump.tree_.threshold[0])
    # xor: greedy CART's training errors as scikit-learn counts them; the optimum is the
    # brute force over every depth-2 tree (only its 20 flipped labels left)
    xor = datasets.bundled("xor")
    facts = compute_step("literati", "xor").facts
    sk2 = DecisionTreeClassifier(max_depth=2, random_state=0).fit(xor.X, xor.y)
    assert facts["cart_errors"] == int(np.sum(sk2.predict(xor.X) != xor.y))
    assert facts["optimal_errors"] == 20 and facts["proven"]
    # the CIT lesson's noise: CART's root is a noise feature, the test's is the signal
    cit = compute_step("cit", "cart_bias").facts
    assert cit["root"] == max(cit["gains"], key=cit["gains"].get)
    assert compute_step("cit", "permutation_test").facts["root"] == "signal"


def test_treegrad_lesson_scores_equal_the_closed_form():
    """On the AND game the Shapley and Banzhaf values have closed forms: 0.45/2 for the
    lone feature; for each AND feature (1/4) sum_j 2^(j-4) (Shapley) and
    sum_j C(3, j) 2^(j-4) / 8 (Banzhaf)."""
    from math import comb

    facts = compute_step("treegrad", "disagree").facts
    shapley_and = sum(2.0 ** (j - 4) for j in range(4)) / 4
    banzhaf_and = sum(comb(3, j) * 2.0 ** (j - 4) for j in range(4)) / 8
    assert facts["shapley"]["alone"] == pytest.approx(0.225)
    assert facts["shapley"]["and_1"] == pytest.approx(shapley_and)
    assert facts["banzhaf"]["and_1"] == pytest.approx(banzhaf_and)
    assert facts["first"]["Shapley"] == "and_1" and facts["first"]["Banzhaf"] == "alone"
    assert not facts["same_first"]


# -- quiz ------------------------------------------------------------------------------------


def test_scoreboard_counts_the_first_answer_only():
    board = Scoreboard()
    assert board.record("a", "q?", "x", "x").correct
    assert board.record("a", "q?", "y", "x").correct  # the first answer is kept
    assert board.attempts["a"].chosen == "x"
    board.record("b", "q2?", "y", "z")
    assert (board.n_correct, board.n_answered) == (1, 2)
    assert board.summary("a") == (1, 1)
    assert list(board.to_frame()["correct"]) == [True, False]
    board.reset()
    assert board.n_answered == 0


def test_glossary_lookup():
    assert lookup("impurity")[0] == "impurity"
    assert lookup("Breakpoints")[0] == "breakpoint"
    assert lookup("p-values")[0] == "p-value"
    assert lookup("nonsense") is None
    for term in ("leaf", "threshold", "upper bound", "lower bound", "gap", "Shapley value"):
        assert term in GLOSSARY
    for term in ("Banzhaf value", "multilinear extension", "p-value", "Bonferroni"):
        assert term in GLOSSARY


# -- the challenge ---------------------------------------------------------------------------


def _iris_parts():
    from engine.data import train_test_rows
    from engine.teaching.datasets import bundled

    d = bundled("iris")
    rows = train_test_rows(len(d.y), d.y, test_size=0.3, random_state=0)
    return d, d.X[rows.train], d.y[rows.train], d.X[rows.test], d.y[rows.test]


def _gini(counts):
    n = counts.sum()
    return 1 - np.sum((counts / n) ** 2) if n else 0.0


def test_user_tree_routes_counts_and_scores_as_a_direct_computation():
    d, Xtr, ytr, Xte, yte = _iris_parts()
    t = challenge.UserTree().split(0, 2, 2.45)
    t = t.split(2, 3, 1.75)
    assert (t.n_splits, t.max_depth, t.leaves()) == (2, 2, [1, 3, 4])
    # routing by hand
    expected = np.where(Xtr[:, 2] <= 2.45, 1, np.where(Xtr[:, 3] <= 1.75, 3, 4))
    assert np.array_equal(t.apply(Xtr), expected)
    counts = challenge.leaf_counts(t, Xtr, ytr, 3)
    for leaf in (1, 3, 4):
        assert np.array_equal(counts[leaf], np.bincount(ytr[expected == leaf], minlength=3))
    assert np.array_equal(counts[0], np.bincount(ytr, minlength=3))
    # errors: each leaf predicts its training majority
    majority = {leaf: np.argmax(counts[leaf]) for leaf in (1, 3, 4)}
    pred_te = np.array([majority[leaf] for leaf in t.apply(Xte)])
    assert challenge.errors(t, Xtr, ytr, Xte, yte, 3) == int(np.sum(pred_te != yte))
    # the drawn TreeArrays routes the same rows to the same leaves
    arrays = challenge.to_tree_arrays(t, Xtr, ytr, 3)
    order = challenge.preorder(t)
    assert [order[i] for i in arrays.apply(Xtr)] == list(t.apply(Xtr))
    assert np.allclose(arrays.value[:, 0, :].sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="not a leaf"):
        t.split(0, 1, 3.0)


def test_preview_equals_a_direct_computation_and_the_kernel():
    d, Xtr, ytr, _, _ = _iris_parts()
    t = challenge.UserTree().split(0, 2, 2.45)
    leaf, feature = 2, 3
    rows = Xtr[:, 2] > 2.45
    x, y = Xtr[rows, feature], ytr[rows]
    for threshold in challenge.midpoints(x)[::3]:
        view = challenge.preview(t, Xtr, ytr, leaf, feature, threshold, 3)
        cl = np.bincount(y[x <= threshold], minlength=3)
        cr = np.bincount(y[x > threshold], minlength=3)
        assert np.array_equal(view.counts_left, cl) and np.array_equal(view.counts_right, cr)
        n = len(y)
        direct = _gini(cl + cr) - (cl.sum() * _gini(cl) + cr.sum() * _gini(cr)) / n
        assert view.node_decrease == pytest.approx(direct)
        assert view.decrease == pytest.approx(direct * n / len(ytr))
        kernel = challenge.gains_at(x, y, [threshold], 3)[0]
        assert view.node_decrease == pytest.approx(kernel)
        assert view.errors_after == (cl.sum() - cl.max()) + (cr.sum() - cr.max())
    assert view.best_decrease == pytest.approx(np.nanmax(view.curve_gains))
    assert view.histogram_counts.sum() == len(y)
    assert np.array_equal(
        view.histogram_counts.sum(axis=0), np.histogram(x, bins=view.histogram_edges)[0]
    )


def _brute_force_errors(X, y, depth, n_classes):
    """Fewest training errors of any tree of depth <= ``depth`` with thresholds at the
    midpoints of each node's rows (every tree, recursively)."""
    leaf = len(y) - np.bincount(y, minlength=n_classes).max() if len(y) else 0
    if depth == 0 or leaf == 0:
        return int(leaf)
    best = int(leaf)
    for j in range(X.shape[1]):
        for t in challenge.midpoints(X[:, j]):
            left = X[:, j] <= t
            e = _brute_force_errors(X[left], y[left], depth - 1, n_classes) + _brute_force_errors(
                X[~left], y[~left], depth - 1, n_classes
            )
            best = min(best, e)
    return best


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_best_possible_equals_brute_force_on_a_tiny_dataset(seed):
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 6, size=(14, 2)).astype(np.float64)
    y = rng.randint(0, 2, size=14)
    for depth in (1, 2):
        opt = challenge.optimal_tree(X, y, depth, time_limit=30)
        assert opt.proven_optimal_
        assert opt.objective_breakdown_["errors"] == _brute_force_errors(X, y, depth, 2)
    # and no tree a student can grow does better: every depth-2 tree over the midpoints
    best = _brute_force_errors(X, y, 2, 2)
    mids = [challenge.midpoints(X[:, j]) for j in range(2)]
    for (f0, t0), (f1, t1), (f2, t2) in itertools.product(
        [(j, t) for j in range(2) for t in mids[j]], repeat=3
    ):
        tree = challenge.UserTree().split(0, f0, t0).split(1, f1, t1).split(2, f2, t2)
        assert challenge.errors(tree, X, y, X, y, 2) >= best


@pytest.mark.slow
def test_grade_equals_literati_and_cart_on_the_same_rows():
    from engine.cart.estimator import CARTClassifier
    from engine.literati.estimator import LiteratiClassifier

    d, Xtr, ytr, Xte, yte = _iris_parts()
    t = challenge.UserTree().split(0, 3, 0.8).split(2, 0, 6.15)  # a student's poor second split
    g = challenge.grade(t, Xtr, ytr, Xte, yte, 3, time_limit=20)
    lit = LiteratiClassifier(
        max_depth=2,
        max_breakpoints=1,
        candidate_leaves=None,
        split_penalty=0.5 / 4,
        breakpoint_penalty=0.0,
        time_limit=20,
    ).fit(Xtr, ytr)
    assert g.proven and lit.proven_optimal_
    assert g.optimal_train_errors == lit.objective_breakdown_["errors"]
    assert g.optimal_test_errors == int(np.sum(lit.predict(Xte) != yte))
    cart = CARTClassifier(max_leaf_nodes=3, random_state=0).fit(Xtr, ytr)
    assert g.cart_train_errors == int(np.sum(cart.predict(Xtr) != ytr))
    assert g.cart_test_errors == int(np.sum(cart.predict(Xte) != yte))
    assert g.train_errors == challenge.errors(t, Xtr, ytr, Xtr, ytr, 3)
    assert g.test_errors == challenge.errors(t, Xtr, ytr, Xte, yte, 3)
    assert g.train_errors >= g.optimal_train_errors == g.optimal_lower_bound
    assert f"misclassifies {g.train_errors} of {len(ytr)} training rows" in g.sentence()
    assert f"misclassifies {g.optimal_train_errors}, proven" in g.sentence()
    table = challenge.score_table(
        [
            challenge.ScoreRow("b", "iris", g),
            challenge.ScoreRow(
                "a",
                "iris",
                challenge.grade(
                    challenge.UserTree().split(0, 2, 2.45).split(2, 3, 1.75),
                    Xtr,
                    ytr,
                    Xte,
                    yte,
                    3,
                ),
            ),
        ]
    )
    assert list(table["held-out errors"]) == sorted(table["held-out errors"])
    with pytest.raises(ValueError, match="split the root"):
        challenge.grade(challenge.UserTree(), Xtr, ytr, Xte, yte, 3)


def test_snap_picks_the_nearest_midpoint():
    x = np.array([1.0, 2.0, 2.0, 4.0])
    assert list(challenge.midpoints(x)) == [1.5, 3.0]
    assert challenge.snap(x, 2.9) == 3.0 and challenge.snap(x, -5) == 1.5
    with pytest.raises(ValueError, match="single value"):
        challenge.snap(np.ones(3), 1.0)


# -- predictions on any dataset ---------------------------------------------------------------


@pytest.mark.slow
def test_predictions_are_checked_against_the_fits():
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    from engine.cit.tree import ConditionalInferenceTreeClassifier
    from engine.teaching.datasets import bundled
    from engine.treegrad import shapley

    for name in ("wine", "diabetes"):
        d = bundled(name)
        q = predict.root_feature(d.X, d.y, d.feature_names, d.task, key=name)
        sk = (DecisionTreeClassifier if d.task == "classification" else DecisionTreeRegressor)(
            max_depth=1, random_state=0
        ).fit(d.X, d.y)
        assert q.answer == d.feature_names[sk.tree_.feature[0]] and q.answer in q.options
        assert len(q.options) <= predict.MAX_OPTIONS
    # iris: petal length and petal width tie at the root (Gini decrease 1/3 both, checked by
    # a stump of scikit-learn on each alone): both are right, no other feature is
    d = bundled("iris")
    q = predict.root_feature(d.X, d.y, d.feature_names, d.task, key="iris")
    gains = []
    for j in range(d.X.shape[1]):
        t = DecisionTreeClassifier(max_depth=1).fit(d.X[:, [j]], d.y).tree_
        n = t.weighted_n_node_samples
        gains.append(t.impurity[0] - (n[1] * t.impurity[1] + n[2] * t.impurity[2]) / n[0])
    best = [d.feature_names[j] for j in range(4) if gains[j] >= max(gains) - 1e-12]
    assert sorted(q.accepted) == sorted(best) == ["petal length (cm)", "petal width (cm)"]
    assert all(q.correct(name) == (name in best) for name in q.options)
    assert q.shown_answer == "petal length (cm) or petal width (cm)"
    assert "tie" in q.explanation
    d = bundled("wine")
    q = predict.top_feature(d.X, d.y, d.feature_names, d.task, 5, class_names=d.class_names)
    from engine.cart.estimator import CARTClassifier

    model = CARTClassifier(max_depth=4, random_state=0).fit(d.X, d.y)
    k = int(np.argmax(model.predict_proba(d.X[5:6])[0]))
    assert q.answer == d.feature_names[int(np.argmax(shapley(model.tree_, d.X[5], k)))]
    q = predict.p_value_significant(d.X, d.y, d.feature_names, d.task, alpha=0.05)
    cit = ConditionalInferenceTreeClassifier(alpha_selector=0.05, max_depth=1).fit(d.X, d.y)
    rec = cit.node_records_[0]
    feature = q.prompt.split("is ")[1].split("'s adjusted")[0]
    j = d.feature_names.index(feature)
    p_adj = dict(zip(rec["features"], rec["p_values_adjusted"], strict=True))[j]
    assert q.answer == (YES if p_adj < 0.05 else "No")
