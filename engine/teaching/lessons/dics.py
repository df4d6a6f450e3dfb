"""Lesson 6, ``dics``: what candidate thresholds save and cost."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.teaching import datasets
from engine.teaching.lessons.model import (
    NO,
    YES,
    FigureSpec,
    Lesson,
    Question,
    Step,
    StepResult,
    _yes_no,
)

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
