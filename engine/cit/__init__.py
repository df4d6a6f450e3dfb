"""Conditional inference trees and forests (SPEC section 4)."""

from engine.cit.permutation import n_resamples, selector_test, splitter_test
from engine.cit.statistics import abs_pearson, correlation_ratio, mutual_information
from engine.cit.tree import (
    ConditionalInferenceTreeClassifier,
    ConditionalInferenceTreeRegressor,
    threshold_candidates,
)

__all__ = ["ConditionalInferenceTreeClassifier", "ConditionalInferenceTreeRegressor",
           "abs_pearson", "correlation_ratio", "mutual_information", "n_resamples",
           "selector_test", "splitter_test", "threshold_candidates"]
