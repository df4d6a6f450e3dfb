"""What the Conditional inference page computes (CIT / CIF, docs/spec.md section 4): the
page's one entry point to the method.

The job steps (fit and rankings, top-k, selection bias) are in :mod:`engine.cit.steps`, the
tables in :mod:`engine.cit.report` and the downstream learners in :mod:`engine.cit.topk`;
they are re-exported here.  This module adds what the page computed itself: the tests at
the root before fitting (:func:`root_tests`: features tested, level, permutations).
Every function works without Streamlit.
"""

from __future__ import annotations

import math
from typing import NamedTuple

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

__all__ = [
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
