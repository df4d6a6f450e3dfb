"""What the Conditional inference page computes (CIT / CIF, docs/spec.md section 4): the
page's one entry point to the method.

The job steps (fit and rankings, top-k, selection bias) are in :mod:`engine.cit.steps`, the
tables in :mod:`engine.cit.report` and the downstream learners in :mod:`engine.cit.topk`;
they are re-exported here.  This module adds what the page computed itself: the tests at
the root before fitting (:func:`root_tests`: features tested, level, permutations) and why a
node stayed a leaf (:func:`leaf_reason`).
Every function works without Streamlit.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from engine.cit.permutation import n_resamples
from engine.cit.report import (
    NOT_IN_POOL,
    NOT_TESTED,
    TESTED,
    node_feature_table,
    rankings_table,
    threshold_table,
)
from engine.cit.steps import (
    CART,
    CIF,
    CIT,
    RF,
    fit_rankings_steps,
    make_rankers,
    make_tree,
    selection_bias_steps,
    top_k_steps,
)
from engine.cit.topk import CLASSIFICATION_LEARNERS, REGRESSION_LEARNERS
from engine.cit.tree import MISSING_VALUES_CAPTION

__all__ = [
    "MISSING_VALUES_CAPTION",
    "CART",
    "CIF",
    "CIT",
    "CLASSIFICATION_LEARNERS",
    "NOT_IN_POOL",
    "NOT_TESTED",
    "REGRESSION_LEARNERS",
    "RF",
    "TESTED",
    "RootTests",
    "fit_rankings_steps",
    "leaf_reason",
    "make_rankers",
    "make_tree",
    "n_resamples",
    "node_feature_table",
    "rankings_table",
    "root_tests",
    "selection_bias_steps",
    "threshold_table",
    "top_k_steps",
]


class RootTests(NamedTuple):
    """Stage A at the root, before fitting.

    ``n_tested``: features tested (``max_features`` of the candidates); ``level``: the
    level each test is compared with (alpha, divided by ``n_tested`` under Bonferroni
    adjustment); ``n_resamples``: the most permutations a test runs (None for ctree's
    asymptotic tests).
    """

    n_tested: int
    level: float
    n_resamples: int | None


def root_tests(task: str, params: dict, n_features: int, *, categorical=None) -> RootTests:
    """:class:`RootTests` of the tree ``make_tree(task, params)`` on ``n_features``
    features.

    ``params``: the page's estimator parameters (``alpha_selector``,
    ``adjust_alpha_selector``, ``n_resamples_selector``, ``early_stopping_selector``;
    ``teststat`` for ctree).  Raises ValueError (the constraint table's message) for
    parameters the estimator rejects.  Under Bonferroni adjustment an integer B is per
    feature, so the root runs ``B x n_tested``; adaptive stopping first raises B to
    ``ceil(1 / level)`` (:mod:`engine.cit.permutation`).
    """
    probe = make_tree(task, params, categorical=categorical)
    probe.check_params()
    m_root = probe.n_features_tested(n_features)
    adjust = bool(params.get("adjust_alpha_selector"))
    level = params["alpha_selector"] / m_root if adjust else params["alpha_selector"]
    if "teststat" in params:  # ctree: asymptotic p-values, no permutations
        return RootTests(m_root, level, None)
    spec = params["n_resamples_selector"]
    b_root = n_resamples(spec, level) * (m_root if adjust and isinstance(spec, int) else 1)
    if params.get("early_stopping_selector"):
        b_root = max(b_root, math.ceil(1.0 / level - 1e-9))
    return RootTests(m_root, level, b_root)


def leaf_reason(
    rec: dict, impurity: float, *, rows: int | None = None, depth: int | None = None, est=None
) -> str:
    """Why a node with record ``rec`` (one entry of ``node_records_``) stayed a leaf, in the
    order the engine checks: before stage A (too few rows, maximum depth, pure, no feature
    left), stage A, stage-B candidates, stage B, the minimum impurity decrease.  ``rows``,
    ``depth`` (the node's) and the fitted ``est`` name the rule that stopped it before
    stage A; without them the message lists the possible rules."""
    if "alpha_selector" not in rec:
        if est is not None and rows is not None and depth is not None:
            n_rows = f"{rows} row" + ("s" if rows != 1 else "")
            if rows < est.min_samples_split:
                return (
                    f"it has {n_rows}, fewer than the min. rows to split "
                    f"({est.min_samples_split}), so it became a leaf before stage A"
                )
            if est.max_depth is not None and depth >= est.max_depth:
                return (
                    f"it sits at the maximum depth ({est.max_depth}), so it became a leaf "
                    "before stage A"
                )
            if rows < 2 * est.min_samples_leaf:
                return (
                    f"it has {n_rows}, fewer than twice the min. rows per leaf "
                    f"(2 x {est.min_samples_leaf}), so no split could leave enough rows "
                    "on both sides and it became a leaf before stage A"
                )
        if impurity <= 1e-12:
            return "the node is pure, so it became a leaf before stage A"
        if est is not None and rows is not None and depth is not None:
            return (
                "every feature still in its pool is constant in it (features muted by an "
                "ancestor's test are not tried again), so it became a leaf before stage A"
            )
        return (
            "it has too few rows (min. rows to split / twice the min. rows per leaf), sits "
            "at the maximum depth, or every feature is constant in it, so it became a leaf "
            "before stage A"
        )
    compared = rec.get("p_values_adjusted", rec.get("p_values"))
    p_min = min(compared) if compared else np.inf
    if not p_min < rec["alpha_selector"]:
        which = "adjusted p-value" if "p_values_adjusted" in rec else "p-value"
        return (
            f"no feature passed stage A (smallest {which} {p_min:.3g}, level "
            f"{rec['alpha_selector']:.3g}), so the node is a leaf"
        )
    if "split_statistic" in rec:  # ctree's split point: no test in stage B
        if not rec.get("split_statistic_value", 0.0) > 0.0:
            return (
                "a feature passed stage A, but no cut point leaves the min. rows per leaf "
                "(or the min. child fraction) on both sides, so the node is a leaf"
            )
        return (
            "a feature passed stage A, but the best split's impurity decrease is below the "
            "min. impurity decrease, so the node is a leaf"
        )
    if "thresholds" not in rec:
        return (
            "a feature passed stage A, but none of its thresholds leaves the min. rows per "
            "leaf on both sides, so the node is a leaf"
        )
    p2 = min(rec["threshold_p_values"]) if rec["threshold_p_values"] else np.inf
    if not p2 < rec["alpha_splitter"]:
        return (
            f"a feature passed stage A, but no threshold passed stage B (smallest p-value "
            f"{p2:.3g}, level {rec['alpha_splitter']:.3g}), so the node is a leaf"
        )
    return (
        "a feature and a threshold passed both tests, but the impurity decrease is below "
        "the min. impurity decrease, so the node is a leaf"
    )
