"""Lesson 2, ``literati``: greedy is not optimal (xor), the proven optimum and its gap, shape
functions (sandwich)."""

from __future__ import annotations

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
    _fmt,
    _yes_no,
)

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
