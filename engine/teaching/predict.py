"""Predict, then reveal, on any dataset: questions asked before a fit is shown, whose answer
is computed by the fit ("which feature will the root split on?", "which feature ranks
first?", "is this p-value significant at alpha?").

Each function fits a small model on at most :data:`MAX_ROWS` rows (a seeded sample of
larger tables) and returns a :class:`Prediction` (the question, its options, the computed
answer, an explanation, and what to reveal: figures named by their builder, as lessons do,
and an optional table).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.teaching.lessons import NO, YES, FigureSpec

#: Rows a question's fit uses at most (a seeded sample beyond), to answer in about a second.
MAX_ROWS = 5000
#: Options a question offers at most.
MAX_OPTIONS = 5


@dataclass(frozen=True, eq=False)
class Prediction:
    """One predict-then-reveal question on the user's data.

    ``key`` identifies it in the session score (the kind, the dataset digest and the
    setting); ``answer`` is one of ``options``, computed from the fit; ``figures`` and
    ``table`` are what the page reveals after the answer.
    """

    key: str
    prompt: str
    options: list[str]
    answer: str
    explanation: str
    figures: list[FigureSpec]
    table: pd.DataFrame | None = None
    #: Every option that is right (``answer`` and the options tied with it); empty: only
    #: ``answer``.
    accepted: tuple[str, ...] = ()

    def correct(self, chosen: str) -> bool:
        """Whether ``chosen`` is a right answer (``answer``, or an option tied with it)."""
        return chosen == self.answer or chosen in self.accepted

    @property
    def shown_answer(self) -> str:
        """The right answers as the page names them (" or " between tied ones)."""
        return " or ".join(self.accepted) if len(self.accepted) > 1 else self.answer


def _sample(X, y, seed: int = 0):
    n = len(y)
    if n <= MAX_ROWS:
        return X, y
    rows = np.sort(np.random.RandomState(seed).choice(n, MAX_ROWS, replace=False))
    return X[rows], y[rows]


def _categorical(is_categorical):
    if is_categorical is None or not np.any(is_categorical):
        return None
    return np.asarray(is_categorical, dtype=bool)


def _options(answer: int, ranked, names) -> list[str]:
    """``answer`` and the next best of ``ranked`` (feature indices, best first), in the
    dataset's column order, at most :data:`MAX_OPTIONS`."""
    chosen = [int(answer)]
    for j in ranked:
        if len(chosen) >= min(MAX_OPTIONS, len(names)):
            break
        if int(j) not in chosen:
            chosen.append(int(j))
    return [names[j] for j in sorted(chosen)]


def root_feature(
    X, y, feature_names, task: str, *, class_names=None, is_categorical=None, key: str = ""
) -> Prediction:
    """Which feature will CART's root split on (Gini or squared error; at most
    :data:`MAX_ROWS` rows)?

    The answer is the root feature of ``CARTClassifier`` / ``CARTRegressor``; the other
    options are the features that a depth-3 CART uses most (impurity importance), then
    the remaining ones in column order.  Reveals the depth-2 tree.
    """
    from engine.cart.estimator import CARTClassifier, CARTRegressor

    X, y = _sample(np.asarray(X, dtype=np.float64), np.asarray(y))
    names = [str(n) for n in feature_names]
    cat = _categorical(is_categorical)
    model = CARTClassifier if task == "classification" else CARTRegressor
    tree2 = model(max_depth=2, categorical_features=cat, random_state=0).fit(X, y)
    tree3 = model(max_depth=3, categorical_features=cat, random_state=0).fit(X, y)
    root = int(tree2.tree_.feature[0])
    if root < 0:
        raise ValueError("CART does not split this data at all (the target is constant)")
    ranked = np.argsort(-tree3.feature_importances_, kind="stable")
    decrease = float(tree2.tree_.impurity[0]) - _children_impurity(tree2.tree_)
    tied = _tied_root_features(model, X, y, cat, decrease)
    # the tied features first among the options, so each right answer can be picked
    options = _options(root, [*tied, *ranked], names)
    accepted = tuple(names[j] for j in sorted(set(tied) | {root}) if names[j] in options)
    tie = (
        f" {', '.join(a for a in accepted if a != names[root])} decrease"
        f"{'s' if len(accepted) == 2 else ''} it exactly as much (a tie: CART takes the "
        "feature that comes first in the columns), so "
        f"{'that answer is' if len(accepted) == 2 else 'those answers are'} right too."
        if len(accepted) > 1
        else ""
    )
    return Prediction(
        key=f"predict/root/{key}",
        prompt="Which feature will the root of a CART tree split on?",
        options=options,
        answer=names[root],
        accepted=accepted,
        explanation=(
            f"CART's root splits on {names[root]} (threshold "
            f"{float(tree2.tree_.threshold[0]):.4g}): of every feature and threshold it "
            f"decreases the impurity most ({decrease:.4g}).{tie}"
        ),
        figures=[
            FigureSpec(
                "tree",
                {
                    "tree": tree2.tree_,
                    "feature_names": names,
                    "class_names": None if class_names is None else list(class_names),
                    "title": "CART of depth 2",
                },
            )
        ],
    )


def _tied_root_features(model, X, y, categorical, best: float) -> list[int]:
    """The features whose best root split decreases the impurity as much as ``best`` (to
    1e-9 relative): a one-level CART on each feature alone."""
    tied = []
    for j in range(X.shape[1]):
        cat = None if categorical is None else categorical[[j]]
        stump = model(max_depth=1, categorical_features=cat, random_state=0)
        tree = stump.fit(X[:, [j]], y).tree_
        if tree.node_count < 3:
            continue
        decrease = float(tree.impurity[0]) - _children_impurity(tree)
        if decrease >= best - 1e-9 * max(1.0, abs(best)):
            tied.append(j)
    return tied


def _children_impurity(tree) -> float:
    left, right = int(tree.children_left[0]), int(tree.children_right[0])
    n = tree.weighted_n_node_samples
    return float((n[left] * tree.impurity[left] + n[right] * tree.impurity[right]) / n[0])


def top_feature(
    X, y, feature_names, task: str, row: int, *, class_names=None, key: str = ""
) -> Prediction:
    """Which feature gets the largest Shapley value for row ``row``, in a CART tree of
    depth 4 (toward the predicted class for a classifier)?

    Shapley values by TreeGrad-Shap (``engine.treegrad.shapley``, exact for the
    path-dependent game).  Options: the five largest attributions.  Reveals the
    attributions of Shapley, Banzhaf and the Ranker.
    """
    from engine.cart.estimator import CARTClassifier, CARTRegressor
    from engine.treegrad.explain import MethodParams, explain

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if not 0 <= int(row) < len(y):
        raise ValueError(f"row {row} is not a row of this dataset (0 to {len(y) - 1})")
    x = X[int(row)]
    Xs, ys = _sample(X, y)
    names = [str(n) for n in feature_names]
    model = (CARTClassifier if task == "classification" else CARTRegressor)(
        max_depth=4, random_state=0
    ).fit(Xs, ys)
    class_index = None
    target = "the prediction"
    if task == "classification":
        class_index = int(np.argmax(model.predict_proba(x[None, :])[0]))
        label = class_names[class_index] if class_names is not None else class_index
        target = f"class {label}"
    ex = explain(model.tree_, x, class_index, MethodParams())
    scores = {k: ex.scores[k] for k in ("Shapley", "Banzhaf", "Ranker Adam")}
    phi = scores["Shapley"]
    first = int(np.argmax(phi))
    ranked = np.argsort(-phi, kind="stable")
    used = int(np.sum(np.abs(phi) > 1e-12))
    return Prediction(
        key=f"predict/top/{key}/{int(row)}",
        prompt=(
            f"For row {int(row)}, which feature will get the largest Shapley value toward "
            f"{target} in a depth-4 CART tree?"
        ),
        options=_options(first, ranked, names),
        answer=names[first],
        explanation=(
            f"{names[first]} has the largest Shapley value ({phi[first]:.4g}); "
            f"{used} of {len(names)} features {'has' if used == 1 else 'have'} a non-zero "
            "one (a tree's attributions go only to the features it uses)."
        ),
        figures=[
            FigureSpec(
                "attribution",
                {
                    "scores": scores,
                    "feature_names": names,
                    "top_k": 10,
                    "title": f"Attributions of row {int(row)} toward {target}",
                },
            )
        ],
    )


def p_value_significant(
    X,
    y,
    feature_names,
    task: str,
    *,
    alpha: float = 0.05,
    is_categorical=None,
    key: str = "",
) -> Prediction:
    """Is the adjusted p-value of a feature at the root of a conditional inference tree
    (partykit's ctree procedure) below ``alpha``?

    The feature asked about is the one whose adjusted p-value is nearest to ``alpha`` on a
    log scale: the borderline case.  Reveals the root's stage-A table.
    """
    from engine.cit.report import node_feature_table
    from engine.cit.tree import (
        ConditionalInferenceTreeClassifier,
        ConditionalInferenceTreeRegressor,
    )

    X, y = _sample(np.asarray(X, dtype=np.float64), np.asarray(y))
    names = [str(n) for n in feature_names]
    model = (
        ConditionalInferenceTreeClassifier
        if task == "classification"
        else ConditionalInferenceTreeRegressor
    )(
        alpha_selector=float(alpha),
        max_depth=1,
        categorical_features=_categorical(is_categorical),
        random_state=0,
    ).fit(X, y)
    table = node_feature_table(model, 0, names)
    tested = table[np.isfinite(table["p_bonferroni"])].reset_index(drop=True)
    if tested.empty:
        raise ValueError("the conditional inference tree tested no feature on this data")
    distance = np.abs(
        np.log(np.maximum(tested["p_bonferroni"].to_numpy(float), 1e-300)) - np.log(alpha)
    )
    pick = tested.iloc[int(np.argmin(distance))]
    p_adj = float(pick["p_bonferroni"])
    significant = p_adj < float(alpha)
    shown = pd.DataFrame(
        {
            "feature": tested["feature"],
            "asked": tested["feature"] == pick["feature"],
            "statistic": tested["statistic"].round(4),
            "p-value": [f"{v:.3g}" for v in tested["p_value"]],
            "adjusted p-value": [f"{v:.3g}" for v in tested["p_bonferroni"]],
            f"below alpha = {alpha:g}": tested["p_bonferroni"] < float(alpha),
        }
    )
    return Prediction(
        key=f"predict/p/{key}/{alpha:g}",
        prompt=(
            f"At the root of a conditional inference tree, is {pick['feature']}'s adjusted "
            f"p-value significant at alpha = {alpha:g}?"
        ),
        options=[YES, NO],
        answer=YES if significant else NO,
        explanation=(
            f"{pick['feature']}: p-value {float(pick['p_value']):.3g}, adjusted for the "
            f"{len(tested)} features tested {p_adj:.3g}, which is "
            f"{'below' if significant else 'not below'} alpha = {alpha:g}."
        ),
        figures=[],
        table=shown,
    )


# ---------------------------------------------------------------------------------------
# questions on a method page, answered by the page's own result
# ---------------------------------------------------------------------------------------
#: The option of a root question for a tree whose root does not split.
NO_SPLIT = "none: the root stays a leaf"


@dataclass(frozen=True)
class PageQuestion:
    """A question a method page asks before it shows its result (Conditional inference,
    Optimal shape trees, Feature ranking); the page's own result answers it.

    ``kind`` is ``"root"`` (which feature the root splits on), ``"significant"`` (is a
    feature's adjusted p-value at the root below alpha) or ``"first"`` (which feature an
    attribution method ranks first); ``subject`` is the feature (``"significant"``) or the
    method (``"first"``) asked about; ``options`` are the answers offered.
    """

    kind: str
    prompt: str
    options: tuple[str, ...]
    subject: str = ""

    def key(self, page: str, result_key: str) -> str:
        """The question's key in the session :class:`~engine.teaching.quiz.Scoreboard`:
        the page, the kind, the subject and the result it is asked about."""
        return f"page/{page}/{self.kind}/{self.subject}/{result_key}"


@dataclass(frozen=True)
class PageAnswer:
    """What a page's result answers to a :class:`PageQuestion`: ``answer`` (the options
    that are right, joined by " or " when tied), ``accepted`` (those options) and an
    ``explanation`` read off the result."""

    answer: str
    accepted: tuple[str, ...]
    explanation: str

    def correct(self, chosen: str) -> bool:
        """Whether ``chosen`` is one of the right options."""
        return chosen in self.accepted


def result_key(*parts) -> str:
    """A short stable key (16 hex digits) for a result made from ``parts`` (the dataset
    digest, the parameters, the seed...): the same settings give the same key, so an
    answer locked before a fit is matched with that fit's result.  ``parts`` must have a
    deterministic ``repr`` (numbers, strings, tuples, lists, dicts)."""
    import hashlib

    return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]


def root_split_question(feature_names, *, model: str = "the tree") -> PageQuestion:
    """Which feature will ``model``'s root split on?  Options: every feature, then
    :data:`NO_SPLIT`."""
    names = tuple(str(n) for n in feature_names)
    if not names:
        raise ValueError("a root question needs at least one feature")
    return PageQuestion(
        "root", f"Which feature will the root of {model} split on?", (*names, NO_SPLIT)
    )


def significance_question(feature: str, alpha: float, *, adjusted: bool = True) -> PageQuestion:
    """Is ``feature``'s p-value at the root of a conditional inference tree below
    ``alpha``?  (``adjusted``: the p-value adjusted for the number of features tested, as
    the tree compares it.)  Options: Yes, No."""
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be between 0 and 1 (exclusive), not {alpha}")
    which = "adjusted p-value" if adjusted else "p-value"
    return PageQuestion(
        "significant",
        f"At the root, is {feature}'s {which} significant at alpha = {float(alpha):g}?",
        (YES, NO),
        subject=str(feature),
    )


def first_rank_question(feature_names, method: str) -> PageQuestion:
    """Which feature will ``method`` (an attribution method: Shapley, Banzhaf, Ranker...)
    rank first, i.e. give the largest attribution?  Options: every feature."""
    names = tuple(str(n) for n in feature_names)
    if not names:
        raise ValueError("a ranking question needs at least one feature")
    return PageQuestion(
        "first",
        f"Which feature will {method} rank first (the largest attribution)?",
        names,
        subject=str(method),
    )


def root_split_answer(tree, feature_names) -> PageAnswer:
    """The answer to :func:`root_split_question` from a fitted tree
    (:class:`engine.tree.TreeArrays`: ``feature``, ``threshold``, ``children_left``)."""
    names = [str(n) for n in feature_names]
    if tree.node_count <= 1 or int(tree.children_left[0]) < 0:
        return PageAnswer(NO_SPLIT, (NO_SPLIT,), "The root did not split: the tree is one leaf.")
    f = int(tree.feature[0])
    rows = int(tree.n_node_samples[0]) if hasattr(tree, "n_node_samples") else None
    on = f" of its {rows:,} rows" if rows is not None else ""
    return PageAnswer(names[f], (names[f],), f"The root splits{on} on {names[f]}.")


def significance_answer(est, feature_names, feature: str) -> PageAnswer:
    """The answer to :func:`significance_question` from a fitted conditional inference
    tree (its root's stage-A records, :func:`engine.cit.report.node_feature_table`): Yes
    exactly when the feature was tested at the root and its adjusted p-value is below the
    level.  A feature not tested there (not drawn, or scanning stopped before it) is No."""
    from engine.cit.report import node_feature_table

    table = node_feature_table(est, 0, [str(n) for n in feature_names])
    alpha = float(est.alpha_selector)
    if table.empty:
        return PageAnswer(NO, (NO,), "The root ran no test (too few rows, or a pure node).")
    row = table[table["feature"] == str(feature)]
    if row.empty or not np.isfinite(float(row["p_bonferroni"].iloc[0])):
        return PageAnswer(NO, (NO,), f"{feature} was not tested at the root.")
    p = float(row["p_value"].iloc[0])
    p_adj = float(row["p_bonferroni"].iloc[0])
    level = float(row["alpha"].iloc[0])
    significant = bool(p_adj < level)
    tested = int(np.isfinite(table["p_bonferroni"].to_numpy(float)).sum())
    adjusted = f", adjusted for the {tested} features tested {p_adj:.3g}" if p_adj != p else ""
    answer = YES if significant else NO
    return PageAnswer(
        answer,
        (answer,),
        f"{feature}: p-value {p:.3g}{adjusted}, which is "
        f"{'below' if significant else 'not below'} alpha = {alpha:g}.",
    )


def first_rank_answer(scores, feature_names, method: str) -> PageAnswer:
    """The answer to :func:`first_rank_question` from a sample's attributions (``scores``:
    method name -> ``(n_features,)`` float array): the feature with the largest value
    (ties within 1e-9 of the largest |value| all count as right)."""
    names = [str(n) for n in feature_names]
    if method not in scores:
        raise ValueError(f"no attributions by {method!r} (have {', '.join(scores)})")
    values = np.asarray(scores[method], dtype=np.float64)
    top = float(values.max())
    tol = 1e-9 * max(float(np.abs(values).max()), 1e-300)
    tied = [j for j in np.argsort(-values, kind="stable") if values[j] >= top - tol]
    accepted = tuple(names[j] for j in tied)
    second = [j for j in np.argsort(-values, kind="stable") if j not in tied]
    then = f"; next {names[second[0]]} ({values[second[0]]:.4g})" if second else ""
    lead = (
        f"{accepted[0]} ranks first"
        if len(accepted) == 1
        else f"{len(accepted)} features tie for first ({', '.join(accepted)})"
    )
    return PageAnswer(
        " or ".join(accepted),
        accepted,
        f"By {method}, {lead} with {top:.4g}{then}.",
    )
