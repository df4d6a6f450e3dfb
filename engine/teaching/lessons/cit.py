"""Lesson 5, ``cit``: CART prefers many-valued noise, a permutation test does not."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.teaching import datasets
from engine.teaching.lessons.model import FigureSpec, Lesson, Question, Step, StepResult

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
