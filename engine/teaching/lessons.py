"""Lessons of the Learn section, as data: each lesson a short sequence of steps, each step a
few sentences, a live result computed by the engine's public estimators on a curated
dataset, the figures that draw it (named by their builder in ``engine.figures``) and one
question whose answer is read off the computed result, never typed in.

The page asks the question *before* it reveals the figures (predict, then reveal), checks
the answer with :func:`check_answer` and keeps the score (:mod:`engine.teaching.quiz`).

Lessons (``LESSONS``, in display order):

* ``cart_split``: how CART picks a split (the impurity decrease over every threshold;
  the root feature).
* ``literati``: greedy is not optimal (xor), the proven optimum and its gap, shape
  functions (sandwich).
* ``partition``: a conditional density beats a point prediction (bimodal,
  heteroscedastic).
* ``treegrad``: why Shapley, Banzhaf and the Ranker disagree on a sample; insertion and
  deletion curves.
* ``cit``: CART prefers many-valued noise, a permutation test does not.
* ``dics``: what candidate thresholds save and cost.

Every step computes in well under a second once the kernels are compiled (the fits are
small); :func:`compute_step` caches the results per process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from engine.teaching import datasets

# ---------------------------------------------------------------------------------------
# the data model
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureSpec:
    """One figure of a step: ``builder`` names a function of :mod:`engine.figures` (see
    ``engine.figures.teaching.BUILDERS``) and ``kwargs`` its arguments."""

    builder: str
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class StepResult:
    """What a step computed: its ``figures``, the ``facts`` its question and explanation
    read (plain numbers and names), and an optional ``table`` to show under the figures."""

    figures: list[FigureSpec]
    facts: dict[str, Any]
    table: pd.DataFrame | None = None


@dataclass(frozen=True)
class Question:
    """One multiple-choice question about a step's result.

    ``options`` and ``answer`` are functions of the :class:`StepResult` (so the answer is
    whatever the engine computed); ``explanation`` says why, with the computed numbers.
    """

    prompt: str
    options: Callable[[StepResult], list[str]]
    answer: Callable[[StepResult], str]
    explanation: Callable[[StepResult], str]


@dataclass(frozen=True)
class Step:
    """A lesson step: ``id`` (unique within the lesson), ``title``, ``text`` (a few
    sentences of Markdown), ``compute`` (no arguments, returns a :class:`StepResult`),
    ``question`` and the glossary ``terms`` the text uses."""

    id: str
    title: str
    text: str
    compute: Callable[[], StepResult]
    question: Question
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lesson:
    """A lesson: ``id``, ``title``, the ``method`` page it belongs to, a one-line
    ``summary`` and its ``steps``."""

    id: str
    title: str
    method: str
    summary: str
    steps: tuple[Step, ...]

    def step(self, step_id: str) -> Step:
        """The step called ``step_id``; raises ``KeyError`` naming the lesson's steps."""
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(
            f"lesson {self.id!r} has no step {step_id!r}; steps: {[s.id for s in self.steps]}"
        )


@dataclass(frozen=True)
class Verdict:
    """The outcome of one answer: ``correct``, the computed ``answer`` and the
    ``explanation``."""

    correct: bool
    answer: str
    explanation: str


def check_answer(question: Question, result: StepResult, chosen: str) -> Verdict:
    """Compare ``chosen`` with the answer computed from ``result``.

    Raises ``ValueError`` when ``chosen`` is not one of the question's options.
    """
    options = question.options(result)
    if chosen not in options:
        raise ValueError(f"{chosen!r} is not an option of this question; options: {options}")
    answer = question.answer(result)
    return Verdict(chosen == answer, answer, question.explanation(result))


def _fmt(v: float) -> str:
    return f"{v:.3g}"


YES, NO = "Yes", "No"


def _yes_no(flag: bool) -> str:
    return YES if flag else NO


# ---------------------------------------------------------------------------------------
# lesson 1: how CART picks a split
# ---------------------------------------------------------------------------------------


def _cart_threshold() -> StepResult:
    from engine.cart.profile import split_profile

    data = datasets.bundled("iris")
    j = data.feature_names.index("petal length (cm)")
    profile = split_profile(
        data.X,
        data.y,
        j,
        ["exhaustive"],
        task="classification",
        n_classes=len(data.class_names),
        feature_name=data.feature_names[j],
    )
    t, g = profile.curve_thresholds, profile.curve_gains
    ok = np.isfinite(g)
    best = int(np.flatnonzero(ok)[np.argmax(g[ok])])
    # three other thresholds spread over the range, as distractors
    others = [int(i) for i in np.linspace(0, len(t) - 1, 5)[1:-1].round().astype(int)]
    picks = sorted({best, *[i for i in others if abs(t[i] - t[best]) > 0.3]})
    return StepResult(
        figures=[
            FigureSpec(
                "threshold_scan",
                {"profile": profile, "class_names": list(data.class_names)},
            ),
        ],
        facts={
            "feature": data.feature_names[j],
            "best_threshold": float(t[best]),
            "best_gain": float(g[best]),
            "options": [_fmt(t[i]) for i in picks],
            "answer": _fmt(t[best]),
            "n_thresholds": int(len(t)),
        },
    )


def _cart_root() -> StepResult:
    from engine.cart.estimator import CARTClassifier
    from engine.criteria import exhaustive_gains

    data = datasets.bundled("wine")
    clf = CARTClassifier(max_depth=2, random_state=0).fit(data.X, data.y)
    gains = []
    for j in range(data.X.shape[1]):
        _, g = exhaustive_gains(data.X[:, j], data.y, "gini", n_classes=len(data.class_names))
        gains.append(float(np.nanmax(g)) if np.isfinite(g).any() else 0.0)
    table = (
        pd.DataFrame({"feature": data.feature_names, "best Gini decrease": gains})
        .sort_values("best Gini decrease", ascending=False)
        .reset_index(drop=True)
    )
    root = data.feature_names[int(clf.tree_.feature[0])]
    shown = list(table["feature"][:4])
    return StepResult(
        figures=[
            FigureSpec(
                "tree",
                {
                    "tree": clf.tree_,
                    "feature_names": list(data.feature_names),
                    "class_names": list(data.class_names),
                    "title": "CART of depth 2 on Wine (Gini)",
                },
            )
        ],
        facts={
            "root": root,
            "options": sorted(shown),
            "root_gain": float(table["best Gini decrease"][0]),
            "runner_up": str(table["feature"][1]),
            "runner_up_gain": float(table["best Gini decrease"][1]),
        },
        table=table.head(6),
    )


CART_SPLIT = Lesson(
    id="cart_split",
    title="How CART picks a split",
    method="Split strategies (DICS)",
    summary="Impurity: every threshold is tried and the one that makes the children purest wins.",
    steps=(
        Step(
            id="threshold",
            title="Impurity picks the threshold",
            text=(
                "CART splits a node in two with a rule *feature <= threshold*. To choose the "
                "threshold it tries every midpoint between two neighbouring values and "
                "measures how much purer the two children are than the parent: the "
                "**impurity decrease** (Gini impurity here). The figure sweeps the "
                "threshold over Iris's petal length; press Play to watch the curve below "
                "being traced."
            ),
            compute=_cart_threshold,
            question=Question(
                prompt="Which threshold on petal length gives the largest Gini decrease?",
                options=lambda r: r.facts["options"],
                answer=lambda r: r.facts["answer"],
                explanation=lambda r: (
                    f"Of the {r.facts['n_thresholds']} midpoints, "
                    f"{r.facts['feature']} <= {_fmt(r.facts['best_threshold'])} decreases "
                    f"the Gini impurity most ({r.facts['best_gain']:.3f}): it puts all 50 "
                    "setosa flowers on one side and nothing else, so that child is pure."
                ),
            ),
            terms=("threshold", "impurity", "Gini impurity", "impurity decrease"),
        ),
        Step(
            id="root_feature",
            title="The root takes the best feature",
            text=(
                "At the root CART does this for **every feature** and keeps the feature and "
                "threshold with the largest decrease; then it repeats the search inside each "
                "child, greedily, one node at a time. The table lists each feature's best "
                "decrease at the root of the Wine data (13 chemical measurements, three "
                "cultivars)."
            ),
            compute=_cart_root,
            question=Question(
                prompt="Which feature will the root of a CART tree on Wine split on?",
                options=lambda r: r.facts["options"],
                answer=lambda r: r.facts["root"],
                explanation=lambda r: (
                    f"The root splits on {r.facts['root']}: its best threshold decreases the "
                    f"Gini impurity by {r.facts['root_gain']:.3f}, more than the runner-up "
                    f"{r.facts['runner_up']} ({r.facts['runner_up_gain']:.3f})."
                ),
            ),
            terms=("root", "leaf", "greedy"),
        ),
    ),
)

# ---------------------------------------------------------------------------------------
# lesson 2: Literati, greedy is not optimal
# ---------------------------------------------------------------------------------------

#: Literati settings of the lesson: axis-aligned splits, every midpoint a candidate,
#: penalties small enough that fewer errors always win.
_EXACT = dict(max_breakpoints=1, breakpoint_penalty=0.0, candidate_leaves=None)


def _errors(model, X, y) -> int:
    return int(np.sum(model.predict(X) != y))


def _literati_xor() -> StepResult:
    from engine.cart.estimator import CARTClassifier
    from engine.literati.estimator import LiteratiClassifier

    data = datasets.bundled("xor")
    cart = CARTClassifier(max_depth=2, random_state=0).fit(data.X, data.y)
    lit = LiteratiClassifier(max_depth=2, split_penalty=0.1, time_limit=20, **_EXACT)
    lit.fit(data.X, data.y)
    names, classes = list(data.feature_names), list(data.class_names)
    return StepResult(
        figures=[
            FigureSpec(
                "tree",
                {
                    "tree": cart.tree_,
                    "feature_names": names,
                    "class_names": classes,
                    "title": f"Greedy CART, depth 2: {_errors(cart, data.X, data.y)} errors",
                },
            ),
            FigureSpec(
                "shape_tree",
                {
                    "tree": lit.tree_,
                    "feature_names": names,
                    "class_names": classes,
                    "title": (
                        f"Literati, depth 2: {lit.objective_breakdown_['errors']} errors"
                        + (" (proven optimal)" if lit.proven_optimal_ else "")
                    ),
                },
            ),
        ],
        facts={
            "cart_errors": _errors(cart, data.X, data.y),
            "optimal_errors": int(lit.objective_breakdown_["errors"]),
            "proven": bool(lit.proven_optimal_),
            "n": int(len(data.y)),
            "cart_root": names[int(cart.tree_.feature[0])],
            "cart_threshold": float(cart.tree_.threshold[0]),
        },
    )


def _xor_options(r: StepResult) -> list[str]:
    return ["fewer than 50", "50 to 150", "more than 150"]


def _bucket(errors: int) -> str:
    return "fewer than 50" if errors < 50 else ("50 to 150" if errors <= 150 else "more than 150")


def _literati_gap() -> StepResult:
    from engine.literati.estimator import LiteratiClassifier

    data = datasets.bundled("breast_cancer")
    limit = 2.0
    lit = LiteratiClassifier(max_depth=3, max_breakpoints=1, time_limit=limit, random_state=0)
    lit.fit(data.X, data.y)
    trace = lit.trace_
    last = trace.iloc[-1]
    return StepResult(
        figures=[
            FigureSpec(
                "gap",
                {
                    "trace": trace,
                    "time_limit": limit,
                    "title": "Breast cancer, depth 3: upper and lower bound over time",
                },
            )
        ],
        facts={
            "proven": bool(lit.proven_optimal_),
            "ub": float(last["ub"]),
            "lb": float(last["lb"]),
            "gap": float(last["ub"] - last["lb"]),
            "time_limit": limit,
        },
    )


def _literati_sandwich() -> StepResult:
    from engine.cart.estimator import CARTClassifier
    from engine.literati.estimator import LiteratiClassifier

    data = datasets.bundled("sandwich")
    cart = CARTClassifier(max_depth=1, random_state=0).fit(data.X, data.y)
    lit = LiteratiClassifier(
        max_depth=1, max_breakpoints=2, split_penalty=0.1, breakpoint_penalty=0.0
    ).fit(data.X, data.y)
    names = list(data.feature_names)
    return StepResult(
        figures=[
            FigureSpec(
                "node_shape",
                {
                    "tree": lit.tree_,
                    "X": data.X,
                    "y": data.y,
                    "node": 0,
                    "feature_names": names,
                    "class_names": list(data.class_names),
                },
            )
        ],
        facts={
            "cart_errors": _errors(cart, data.X, data.y),
            "shape_errors": int(lit.objective_breakdown_["errors"]),
            "n_breakpoints": int(lit.objective_breakdown_["n_breakpoints"]),
            "feature": names[int(lit.tree_.feature[0])],
        },
    )


LITERATI = Lesson(
    id="literati",
    title="Greedy is not optimal (Literati)",
    method="Optimal shape trees (Literati)",
    summary="A greedy split can look useless and be the right first move; a search proves the best tree.",
    steps=(
        Step(
            id="xor",
            title="Where greedy fails: xor",
            text=(
                "In the **xor** data the label is 1 when x1 and x2 have the same sign (5% of "
                "the labels flipped). No single split helps: every threshold leaves both "
                "sides half and half, so greedy CART's root split is close to arbitrary, and "
                "its second level cannot repair it. Literati searches over whole trees of the "
                "given depth and **proves** that no tree of that depth does better."
            ),
            compute=_literati_xor,
            question=Question(
                prompt=(
                    "Of xor's 400 rows, how many will greedy CART of depth 2 misclassify "
                    "on its training data?"
                ),
                options=_xor_options,
                answer=lambda r: _bucket(r.facts["cart_errors"]),
                explanation=lambda r: (
                    f"Greedy CART misclassifies {r.facts['cart_errors']} of {r.facts['n']} "
                    f"rows: its root ({r.facts['cart_root']} <= "
                    f"{_fmt(r.facts['cart_threshold'])}) is a poor first move. The best tree "
                    f"of depth 2 misclassifies {r.facts['optimal_errors']} (the flipped "
                    "labels)" + (", proven optimal." if r.facts["proven"] else ".")
                ),
            ),
            terms=("greedy", "optimal", "depth"),
        ),
        Step(
            id="gap",
            title="Upper bound, lower bound, gap",
            text=(
                "A search like Literati's keeps two numbers. The **upper bound** (UB) is the "
                "objective of the best tree found so far: the optimum is at most that. The "
                "**lower bound** (LB) is proven: no tree can do better. The **gap** UB - LB "
                "says how far from optimal the current tree can still be; when it reaches 0 "
                "the tree is proven optimal. Here the search on Breast cancer (depth 3) has a "
                "budget of two seconds."
            ),
            compute=_literati_gap,
            question=Question(
                prompt="Will the search close the gap (prove optimality) within 2 seconds?",
                options=lambda r: [YES, NO],
                answer=lambda r: _yes_no(r.facts["proven"]),
                explanation=lambda r: (
                    "Yes: the bounds met, so the tree is proven optimal."
                    if r.facts["proven"]
                    else (
                        f"No: after {r.facts['time_limit']:g} s the best tree has "
                        f"objective {r.facts['ub']:.2f} and the proven lower bound is "
                        f"{r.facts['lb']:.2f}, a gap of {r.facts['gap']:.2f}. The tree "
                        "may already be optimal, but it is not proven yet: a longer "
                        "search would raise the lower bound."
                    )
                ),
            ),
            terms=("upper bound", "lower bound", "gap", "objective"),
        ),
        Step(
            id="sandwich",
            title="Shapes: one node, two breakpoints",
            text=(
                "In the **sandwich** data the label is 1 when x lies between 0.33 and 0.67. "
                "A threshold split needs two levels to cut out a middle interval. A Literati "
                "node holds a **shape function**: up to K sorted **breakpoints**, the sides "
                "alternating left, right, left. With K = 2 one node can send the middle "
                "interval one way and both ends the other."
            ),
            compute=_literati_sandwich,
            question=Question(
                prompt=(
                    "With one node and two breakpoints, will the shape tree make fewer "
                    "errors than a depth-1 CART?"
                ),
                options=lambda r: [YES, NO],
                answer=lambda r: _yes_no(r.facts["shape_errors"] < r.facts["cart_errors"]),
                explanation=lambda r: (
                    f"Depth-1 CART misclassifies {r.facts['cart_errors']} of 300 rows, the "
                    f"shape node on {r.facts['feature']} with {r.facts['n_breakpoints']} "
                    f"breakpoints {r.facts['shape_errors']} (the flipped labels)."
                ),
            ),
            terms=("breakpoint", "shape function"),
        ),
    ),
)

# ---------------------------------------------------------------------------------------
# lesson 3: Partition Tree, a density beats a point prediction
# ---------------------------------------------------------------------------------------


def _split(data):
    from engine.data import train_test_rows

    return train_test_rows(len(data.y), None, test_size=0.25, random_state=0, stratify=False)


def _partition_fit(data, max_leaves: int = 24):
    from engine.partition.estimators import PartitionTreeRegressor

    rows = _split(data)
    model = PartitionTreeRegressor(max_leaves=max_leaves, random_state=0)
    model.fit(data.X[rows.train], data.y[rows.train])
    return model, rows


def _slice_summary(s: dict) -> tuple[float, float]:
    e, h = np.asarray(s["edges"]), np.asarray(s["heights"])
    mid, w = (e[1:] + e[:-1]) / 2, np.diff(e) * h
    mean = float(np.sum(mid * w))
    return mean, float(np.sqrt(np.sum(w * (mid - mean) ** 2)))


def _density_at(s: dict, value: float) -> float:
    e, h = np.asarray(s["edges"]), np.asarray(s["heights"])
    i = int(np.clip(np.searchsorted(e, value, side="right") - 1, 0, len(h) - 1))
    return float(h[i])


def _partition_bimodal() -> StepResult:
    from engine.cart.estimator import CARTRegressor

    data = datasets.bundled("bimodal")
    model, rows = _partition_fit(data)
    cart = CARTRegressor(max_depth=3, random_state=0).fit(data.X[rows.train], data.y[rows.train])
    x = np.array([0.5])
    s = model.slice(x)
    prediction = float(cart.predict(x[None, :])[0])
    at_prediction = _density_at(s, prediction)
    peak = float(np.max(s["heights"]))
    return StepResult(
        figures=[
            FigureSpec(
                "slices",
                {
                    "slices": [{"label": "x = 0.5", **s}],
                    "target": "y",
                    "title": "Bimodal: p(y | x = 0.5) and CART's point prediction",
                    "predictions": {"CART prediction (mean)": prediction},
                    "x_title": "y (synthetic, no unit)",
                },
            )
        ],
        facts={
            "prediction": prediction,
            "density_at_prediction": at_prediction,
            "peak": peak,
            "ratio": at_prediction / peak if peak > 0 else 0.0,
        },
    )


_BETWEEN, _AT_MODE = "in a valley, where y is rare", "at a peak, where y is common"


def _partition_hetero() -> StepResult:
    from engine.partition.explore import gaussian_baselines

    data = datasets.bundled("heteroscedastic")
    model, rows = _partition_fit(data)
    slices = [{"label": f"x = {v:g}", **model.slice(np.array([v]))} for v in (0.1, 0.9)]
    spreads = [_slice_summary(s)[1] for s in slices]
    nll, _ = model.nll(data.X[rows.test], data.y[rows.test])
    description, fit, predict_dist = gaussian_baselines(
        data.X[rows.train], data.y[rows.train], max_leaf_nodes=8
    )["Gaussian (constant)"]
    mean, sd = predict_dist(fit(), data.X[rows.test])
    yt = data.y[rows.test]
    const_nll = float(np.mean(0.5 * np.log(2 * np.pi * sd**2) + (yt - mean) ** 2 / (2 * sd**2)))
    table = pd.DataFrame(
        {
            "model": ["Partition Tree (24 leaves)", "constant Gaussian"],
            "test NLL (nats per row, lower is better)": [nll, const_nll],
        }
    )
    return StepResult(
        figures=[
            FigureSpec(
                "slices",
                {
                    "slices": slices,
                    "target": "y",
                    "title": "Heteroscedastic: p(y | x) at x = 0.1 and x = 0.9",
                    "x_title": "y (synthetic, no unit)",
                },
            )
        ],
        facts={
            "sd_low": spreads[0],
            "sd_high": spreads[1],
            "wider": slices[int(np.argmax(spreads))]["label"],
            "nll": float(nll),
            "const_nll": const_nll,
        },
        table=table,
    )


PARTITION = Lesson(
    id="partition",
    title="A density beats a point prediction (Partition Tree)",
    method="Conditional density (Partition Tree)",
    summary="One number per x hides two modes and a spread that changes with x.",
    steps=(
        Step(
            id="bimodal",
            title="Two modes: the mean is where nothing happens",
            text=(
                "In the **bimodal** data y is either about +(1 + x) or about -(1 + x), each "
                "half of the time. A regression tree predicts the mean of y in each leaf, "
                "about 0. The Partition Tree estimates the whole **conditional density** "
                "p(y | x) instead: a histogram of y for each x, drawn here at x = 0.5."
            ),
            compute=_partition_bimodal,
            question=Question(
                prompt="Where does CART's point prediction for x = 0.5 fall in p(y | x)?",
                options=lambda r: [_BETWEEN, _AT_MODE],
                answer=lambda r: _BETWEEN if r.facts["ratio"] < 0.25 else _AT_MODE,
                explanation=lambda r: (
                    f"CART predicts y = {r.facts['prediction']:.2f}; the density there is "
                    f"{r.facts['density_at_prediction']:.3f}, {r.facts['ratio']:.0%} of the "
                    f"peak ({r.facts['peak']:.2f}). The average of two modes is a value the "
                    "data almost never takes."
                ),
            ),
            terms=("conditional density", "mode", "point prediction"),
        ),
        Step(
            id="heteroscedastic",
            title="A spread that grows with x",
            text=(
                "In the **heteroscedastic** data y = 2x plus noise whose standard deviation "
                "grows from 0.1 at x = 0 to 1 at x = 1. A point prediction is the same "
                "kind of answer everywhere; a density says how sure it is. The table scores "
                "both as densities on held-out rows by the negative log-likelihood (NLL)."
            ),
            compute=_partition_hetero,
            question=Question(
                prompt="At which x will the Partition Tree's density be wider?",
                options=lambda r: ["x = 0.1", "x = 0.9"],
                answer=lambda r: r.facts["wider"],
                explanation=lambda r: (
                    f"The density's standard deviation is {r.facts['sd_low']:.2f} at x = 0.1 "
                    f"and {r.facts['sd_high']:.2f} at x = 0.9. Held out, the tree's NLL is "
                    f"{r.facts['nll']:.3f} against {r.facts['const_nll']:.3f} for one "
                    "Gaussian of constant spread."
                ),
            ),
            terms=("heteroscedastic", "negative log-likelihood"),
        ),
    ),
)

# ---------------------------------------------------------------------------------------
# lesson 4: TreeGrad, why attributions disagree
# ---------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _and_model():
    from engine.cart.estimator import CARTRegressor

    data = datasets.and_game()
    return data, CARTRegressor(random_state=0).fit(data.X, data.y)


def _treegrad_scores() -> StepResult:
    from engine.treegrad.explain import MethodParams, explain

    data, model = _and_model()
    x = np.ones(data.X.shape[1])
    ex = explain(model.tree_, x, None, MethodParams())
    scores = {k: ex.scores[k] for k in ("Shapley", "Banzhaf", "Ranker Adam")}
    names = list(data.feature_names)
    first = {k: names[int(np.argmax(v))] for k, v in scores.items()}
    return StepResult(
        figures=[
            FigureSpec(
                "attribution",
                {
                    "scores": scores,
                    "feature_names": names,
                    "title": "Attributions of the sample with every feature = 1",
                },
            )
        ],
        facts={
            "first": first,
            "shapley": dict(zip(names, scores["Shapley"].tolist(), strict=True)),
            "banzhaf": dict(zip(names, scores["Banzhaf"].tolist(), strict=True)),
            "same_first": first["Shapley"] == first["Banzhaf"],
        },
    )


def _treegrad_curves() -> StepResult:
    from engine.treegrad.api import insertion_deletion
    from engine.treegrad.explain import MethodParams, explain

    data, model = _and_model()
    x = np.ones(data.X.shape[1])
    ex = explain(model.tree_, x, None, MethodParams())
    curves = {k: insertion_deletion(model.tree_, x, ex.scores[k]) for k in ("Shapley", "Banzhaf")}
    auc = {k: (float(c.auc_insertion), float(c.auc_deletion)) for k, c in curves.items()}
    return StepResult(
        figures=[
            FigureSpec(
                "curves",
                {"curves": curves, "which": "insertion", "y_label": "model output (y)"},
            ),
            FigureSpec(
                "curves",
                {"curves": curves, "which": "deletion", "y_label": "model output (y)"},
            ),
        ],
        facts={
            "auc": auc,
            "best_insertion": max(auc, key=lambda k: auc[k][0]),
            "best_deletion": min(auc, key=lambda k: auc[k][1]),
        },
    )


TREEGRAD = Lesson(
    id="treegrad",
    title="Why attributions disagree (TreeGrad)",
    method="Feature ranking (TreeGrad)",
    summary="Shapley and Banzhaf weigh coalitions differently; insertion and deletion curves test a ranking.",
    steps=(
        Step(
            id="disagree",
            title="Shapley and Banzhaf on one sample",
            text=(
                "The model is a tree fitted exactly to y = 0.45 x alone + and_1 x and_2 x "
                "and_3 x and_4 on 0/1 features. For the sample with every feature 1, each "
                "attribution asks how much a feature adds to a **coalition** of the others. "
                "**Shapley** weighs every coalition size equally; **Banzhaf** weighs every "
                "coalition equally, so middle sizes dominate. The four-way AND pays off only "
                "in large coalitions. The **Ranker** (TreeGrad) instead climbs the gradient "
                "of the **multilinear extension** to find the order whose curve is best."
            ),
            compute=_treegrad_scores,
            question=Question(
                prompt="Will Shapley and Banzhaf rank the same feature first on this sample?",
                options=lambda r: [YES, NO],
                answer=lambda r: _yes_no(r.facts["same_first"]),
                explanation=lambda r: (
                    f"Shapley: alone {r.facts['shapley']['alone']:.4f}, each and_i "
                    f"{r.facts['shapley']['and_1']:.4f}; Banzhaf: alone "
                    f"{r.facts['banzhaf']['alone']:.4f}, each and_i "
                    f"{r.facts['banzhaf']['and_1']:.4f}. First: Shapley "
                    f"{r.facts['first']['Shapley']}, Banzhaf {r.facts['first']['Banzhaf']}, "
                    f"Ranker {r.facts['first']['Ranker Adam']}. Banzhaf gives the large "
                    "coalitions, where the AND completes, less weight than Shapley does."
                ),
            ),
            terms=("Shapley value", "Banzhaf value", "coalition", "multilinear extension"),
        ),
        Step(
            id="curves",
            title="Insertion and deletion curves",
            text=(
                "A ranking can be tested on the model itself. The **insertion curve** starts "
                "from the average prediction and adds the sample's features in ranked order "
                "(the model's output after the top k); the **deletion curve** starts from the "
                "sample and removes them in that order. A good ranking rises fast when "
                "inserting (high area under the curve, AUC) and falls fast when deleting "
                "(low AUC)."
            ),
            compute=_treegrad_curves,
            question=Question(
                prompt="Which ranking will have the larger insertion AUC?",
                options=lambda r: ["Shapley", "Banzhaf"],
                answer=lambda r: r.facts["best_insertion"],
                explanation=lambda r: (
                    "Insertion AUC: "
                    + ", ".join(f"{k} {v[0]:.4f}" for k, v in r.facts["auc"].items())
                    + "; deletion AUC: "
                    + ", ".join(f"{k} {v[1]:.4f}" for k, v in r.facts["auc"].items())
                    + (
                        f". {r.facts['best_insertion']} wins both: its order puts the four "
                        "AND features first, and inserting them all completes the AND."
                        if r.facts["best_insertion"] == r.facts["best_deletion"]
                        else f". {r.facts['best_insertion']} wins insertion, "
                        f"{r.facts['best_deletion']} wins deletion: each curve rewards a "
                        "different order."
                    )
                    + " The Ranker maximises such a curve directly."
                ),
            ),
            terms=("insertion curve", "deletion curve", "AUC"),
        ),
    ),
)

# ---------------------------------------------------------------------------------------
# lesson 5: conditional inference, selection bias
# ---------------------------------------------------------------------------------------

ALPHA = 0.05


def _cit_fits():
    from engine.cart.estimator import CARTClassifier
    from engine.cit.tree import ConditionalInferenceTreeClassifier

    data = datasets.signal_and_noise()
    cart = CARTClassifier(max_depth=1, random_state=0).fit(data.X, data.y)
    cit = ConditionalInferenceTreeClassifier(
        p_value="permutation", feature_scanning=False, alpha_selector=ALPHA, random_state=0
    )
    cit.fit(data.X, data.y)
    return data, cart, cit


def _cit_cart_root() -> StepResult:
    from engine.criteria import exhaustive_gains

    data, cart, _cit = _cit_fits()
    rows = []
    for j, name in enumerate(data.feature_names):
        t, g = exhaustive_gains(data.X[:, j], data.y, "gini", n_classes=2)
        rows.append((name, int(len(np.unique(data.X[:, j]))), float(np.nanmax(g))))
    table = pd.DataFrame(rows, columns=["feature", "distinct values", "best Gini decrease"])
    names = list(data.feature_names)
    return StepResult(
        figures=[
            FigureSpec(
                "tree",
                {
                    "tree": cart.tree_,
                    "feature_names": names,
                    "class_names": list(data.class_names),
                    "title": "CART's root split (depth 1)",
                },
            )
        ],
        facts={
            "root": names[int(cart.tree_.feature[0])],
            "gains": dict(zip(table["feature"], table["best Gini decrease"], strict=True)),
        },
        table=table,
    )


def _cit_test() -> StepResult:
    from engine.cit.report import node_feature_table

    data, _cart, cit = _cit_fits()
    names = list(data.feature_names)
    table = node_feature_table(cit, 0, names)
    shown = table[["feature", "statistic", "p_value", "level", "permutations", "significant"]]
    shown = shown.rename(
        columns={
            "statistic": "statistic (correlation ratio)",
            "p_value": "p-value",
            "level": "level alpha / m",
            "permutations": "permutations B",
        }
    )
    root = names[int(cit.tree_.feature[0])] if cit.tree_.feature[0] >= 0 else "no split"
    return StepResult(
        figures=[
            FigureSpec(
                "cit_tree",
                {"est": cit, "feature_names": names, "class_names": ["0", "1"]},
            )
        ],
        facts={
            "root": root,
            "p": dict(zip(table["feature"], table["p_value"], strict=True)),
            "B": dict(zip(table["feature"], table["permutations"], strict=True)),
            "level": float(table["level"].iloc[0]),
            "alpha": ALPHA,
            "m": len(names),
        },
        table=shown.reset_index(drop=True),
    )


CIT = Lesson(
    id="cit",
    title="CART prefers many-valued noise (conditional inference)",
    method="Conditional inference (CIT / CIF)",
    summary="More thresholds means more chances to look good by luck; a test corrects for it.",
    steps=(
        Step(
            id="cart_bias",
            title="CART picks the feature with the most chances",
            text=(
                "The label depends (weakly) on **signal**, a 0/1 feature with one possible "
                "threshold. The three noise features are random numbers with 200 distinct "
                "values each: 199 thresholds each, and the best of 199 random splits looks "
                "good by luck. CART compares the best decreases as they are."
            ),
            compute=_cit_cart_root,
            question=Question(
                prompt="Which feature will CART's root split on?",
                options=lambda r: list(r.facts["gains"]),
                answer=lambda r: r.facts["root"],
                explanation=lambda r: (
                    f"CART splits on {r.facts['root']} (best decrease "
                    f"{r.facts['gains'][r.facts['root']]:.4f}; signal "
                    f"{r.facts['gains']['signal']:.4f})."
                    + (
                        " A noise feature won: with 199 thresholds to try, one of them fits "
                        "the labels' random ups and downs better than the one real threshold."
                        if r.facts["root"] != "signal"
                        else " Here the signal is strong enough to win anyway."
                    )
                ),
            ),
            terms=("selection bias", "threshold"),
        ),
        Step(
            id="permutation_test",
            title="A test asks: better than chance?",
            text=(
                "A conditional inference tree first tests, for each feature, the hypothesis "
                "that it is independent of the label. A **permutation test** shuffles the "
                "label B times and counts how often a shuffled label looks at least as "
                "related to the feature as the real one: the **p-value**. Testing four "
                "features gives four chances to be lucky, so each p-value is compared with "
                "alpha / 4 (**Bonferroni**, alpha = 0.05). The tree splits on the feature "
                "with the smallest p-value when it is below that level; only then does it "
                "look for the threshold."
            ),
            compute=_cit_test,
            question=Question(
                prompt="Which feature will the conditional inference tree split on first?",
                options=lambda r: [*r.facts["p"], "no split"],
                answer=lambda r: r.facts["root"],
                explanation=lambda r: (
                    "Permutation p-values: "
                    + ", ".join(
                        f"{k} {v:.3g} (B = {r.facts['B'][k]})" for k, v in r.facts["p"].items()
                    )
                    + f". Each is compared with alpha / m = {r.facts['alpha']} / "
                    f"{r.facts['m']} = {r.facts['level']:.4g} (Bonferroni); the root splits "
                    f"on {r.facts['root']}. A permutation p-value is never below 1 / (B + 1)"
                    + (
                        f" (here 1 / {r.facts['B'][r.facts['root']] + 1} = "
                        f"{r.facts['p'][r.facts['root']]:.3g}, the floor)"
                        if r.facts["root"] in r.facts["B"]
                        and abs(
                            r.facts["p"][r.facts["root"]] * (r.facts["B"][r.facts["root"]] + 1) - 1
                        )
                        < 1e-9
                        else ""
                    )
                    + ": "
                    "with B shuffles of the label it cannot say more than 'none of them did as "
                    "well'. The noise features stopped after a few shuffles, as soon as "
                    "it was clear they would not reach the level."
                ),
            ),
            terms=("p-value", "Bonferroni", "alpha", "permutation test"),
        ),
    ),
)

# ---------------------------------------------------------------------------------------
# lesson 6: DICS, candidate thresholds
# ---------------------------------------------------------------------------------------

_DICS_STRATEGIES = ["exhaustive", "quantile", "kmeans1d", "dics_paper"]


def _dics_candidates() -> StepResult:
    from engine.cart.profile import split_profile

    data = datasets.bundled("breast_cancer")
    j = data.feature_names.index("worst area")
    profile = split_profile(
        data.X,
        data.y,
        j,
        _DICS_STRATEGIES,
        task="classification",
        n_classes=2,
        k=8,
        feature_name=data.feature_names[j],
    )
    rows = [
        (s, r.n_candidates, r.best_threshold, r.best_gain, r.best_gain / profile.best_gain)
        for s, r in profile.results.items()
    ]
    table = pd.DataFrame(
        rows,
        columns=["strategy", "candidates", "chosen threshold", "Gini decrease", "share of best"],
    )
    shown = table.assign(**{"share of best": (100 * table["share of best"]).round(1)}).rename(
        columns={"share of best": "share of the best decrease (%)"}
    )
    return StepResult(
        figures=[
            FigureSpec(
                "candidates",
                {"profile": profile, "class_names": list(data.class_names)},
            ),
            FigureSpec("gain_curve", {"profile": profile}),
        ],
        facts={
            "counts": dict(zip(table["strategy"], table["candidates"], strict=True)),
            "share": dict(zip(table["strategy"], table["share of best"], strict=True)),
            "best_gain": float(profile.best_gain),
        },
        table=shown,
    )


def _dics_trees() -> StepResult:
    from engine.cart.estimator import CARTClassifier

    data = datasets.bundled("breast_cancer")
    rows = _split_stratified(data)
    out, figures = [], []
    for s in ("exhaustive", "quantile"):
        k = None if s == "exhaustive" else 4
        clf = CARTClassifier(splitter=s, n_candidates=k, max_depth=3, random_state=0)
        clf.fit(data.X[rows.train], data.y[rows.train])
        acc = float(np.mean(clf.predict(data.X[rows.test]) == data.y[rows.test]))
        out.append((s, int(clf.n_candidates_evaluated_), acc))
        figures.append(
            FigureSpec(
                "tree",
                {
                    "tree": clf.tree_,
                    "feature_names": list(data.feature_names),
                    "class_names": list(data.class_names),
                    "title": (
                        f"{s}{'' if k is None else f' (k = {k})'}: "
                        f"{clf.n_candidates_evaluated_:,} candidates evaluated, "
                        f"test accuracy {acc:.1%}"
                    ),
                },
            )
        )
    table = pd.DataFrame(
        [(s, n, round(100 * a, 1)) for s, n, a in out],
        columns=["splitter", "candidates evaluated", "test accuracy (%)"],
    )
    ratio = out[0][1] / max(out[1][1], 1)
    return StepResult(
        figures=figures,
        facts={
            "ratio": ratio,
            "acc": {s: a for s, _, a in out},
            "loss_points": 100 * (out[0][2] - out[1][2]),
        },
        table=table,
    )


def _split_stratified(data):
    from engine.data import train_test_rows

    return train_test_rows(len(data.y), data.y, test_size=0.3, random_state=0)


def _fewest(r: StepResult) -> str:
    counts = r.facts["counts"]
    return min(counts, key=lambda k: (counts[k], k))


DICS = Lesson(
    id="dics",
    title="What candidate thresholds save and cost (DICS)",
    method="Split strategies (DICS)",
    summary="Trying fewer thresholds is faster; the price is a split that may be a little worse.",
    steps=(
        Step(
            id="candidates",
            title="Fewer thresholds to try",
            text=(
                "Exhaustive CART tries every midpoint: on Breast cancer's *worst area* that "
                "is hundreds of thresholds at the root alone. A **candidate strategy** "
                "proposes a few: quantiles of the feature, the boundaries of k-means "
                "clusters (kmeans1d), or entries of the DICS dictionary (thresholds found "
                "once for the whole table). The figures show each strategy's candidates and "
                "where they land on the impurity-decrease curve (k = 8)."
            ),
            compute=_dics_candidates,
            question=Question(
                prompt="Which strategy proposes the fewest candidate thresholds here?",
                options=lambda r: sorted(r.facts["counts"]),
                answer=_fewest,
                explanation=lambda r: (
                    "Candidates: "
                    + ", ".join(f"{k} {v}" for k, v in r.facts["counts"].items())
                    + ". Share of the best decrease reached: "
                    + ", ".join(f"{k} {v:.1%}" for k, v in r.facts["share"].items())
                    + "."
                ),
            ),
            terms=("candidate threshold", "quantile", "impurity decrease"),
        ),
        Step(
            id="trade_off",
            title="Faster, and how much worse?",
            text=(
                "Over a whole tree the saving adds up: every node scans fewer thresholds. "
                "The table grows two CART trees of depth 3 on the same 70% of Breast cancer "
                "and scores them on the other 30%: exhaustive, and quantile with 4 "
                "candidates per feature and node."
            ),
            compute=_dics_trees,
            question=Question(
                prompt=(
                    "Will the quantile tree lose more than 2 points of test accuracy against "
                    "the exhaustive one?"
                ),
                options=lambda r: [YES, NO],
                answer=lambda r: _yes_no(r.facts["loss_points"] > 2.0),
                explanation=lambda r: (
                    f"Exhaustive evaluated {r.facts['ratio']:.1f}x as many candidates; test "
                    f"accuracy {r.facts['acc']['exhaustive']:.1%} (exhaustive) against "
                    f"{r.facts['acc']['quantile']:.1%} (quantile): quantile is "
                    + (
                        f"{r.facts['loss_points']:.1f} points worse."
                        if r.facts["loss_points"] > 0
                        else f"{-r.facts['loss_points']:.1f} points better (or as good)."
                    )
                    + " The best threshold on the training rows is not always the best on "
                    "new rows: a coarser one often costs little, sometimes nothing."
                ),
            ),
            terms=("candidate threshold", "held-out"),
        ),
    ),
)

#: Every lesson, by id, in display order.
LESSONS: dict[str, Lesson] = {
    lesson.id: lesson for lesson in (CART_SPLIT, LITERATI, PARTITION, TREEGRAD, CIT, DICS)
}


def lesson(lesson_id: str) -> Lesson:
    """The lesson called ``lesson_id``; raises ``KeyError`` naming the lessons."""
    if lesson_id not in LESSONS:
        raise KeyError(f"no lesson {lesson_id!r}; lessons: {list(LESSONS)}")
    return LESSONS[lesson_id]


@lru_cache(maxsize=64)
def compute_step(lesson_id: str, step_id: str) -> StepResult:
    """The result of step ``step_id`` of lesson ``lesson_id`` (computed once per process;
    the steps are deterministic).  Raises ``KeyError`` for an unknown lesson or step."""
    return lesson(lesson_id).step(step_id).compute()
