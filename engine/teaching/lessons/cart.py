"""Lesson 1, ``cart_split``: how CART picks a split (the impurity decrease over every
threshold; the root feature)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.teaching import datasets
from engine.teaching.lessons.model import FigureSpec, Lesson, Question, Step, StepResult, _fmt


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
