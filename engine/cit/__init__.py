"""Conditional inference trees and forests (docs/spec.md section 4).

Public API: the estimators :class:`ConditionalInferenceTreeClassifier`,
:class:`ConditionalInferenceTreeRegressor`, :class:`ConditionalInferenceForestClassifier`,
:class:`ConditionalInferenceForestRegressor`; :func:`top_k_curve`; and the building blocks
:func:`threshold_candidates`, :func:`selector_test`, :func:`splitter_test`,
:func:`n_resamples` and the statistics; :data:`PAPER_SETTINGS` (the CIT paper's permutation
procedure; the defaults follow R partykit's ``ctree``); :mod:`engine.cit.asymptotic` (the
asymptotic tests) and :mod:`engine.cit.partykit` (``ctree`` through Rscript, an oracle).
"""

from engine.cit.forest import (
    ConditionalInferenceForestClassifier,
    ConditionalInferenceForestRegressor,
)
from engine.cit.permutation import n_resamples, selector_test, splitter_test
from engine.cit.statistics import abs_pearson, correlation_ratio, mutual_information
from engine.cit.topk import ranking_of, top_k_curve
from engine.cit.tree import (
    PAPER_SETTINGS,
    ConditionalInferenceTreeClassifier,
    ConditionalInferenceTreeRegressor,
    threshold_candidates,
)

__all__ = [
    "PAPER_SETTINGS",
    "ConditionalInferenceForestClassifier",
    "ConditionalInferenceForestRegressor",
    "ConditionalInferenceTreeClassifier",
    "ConditionalInferenceTreeRegressor",
    "abs_pearson",
    "correlation_ratio",
    "mutual_information",
    "n_resamples",
    "ranking_of",
    "selector_test",
    "splitter_test",
    "threshold_candidates",
    "top_k_curve",
]
