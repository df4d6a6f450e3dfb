"""Lesson 4, ``treegrad``: why Shapley, Banzhaf and the Ranker disagree on a sample; insertion
and deletion curves."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

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
