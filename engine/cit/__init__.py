"""Conditional inference trees and forests (SPEC section 4)."""

from engine.cit.permutation import n_resamples, selector_test, splitter_test
from engine.cit.statistics import abs_pearson, correlation_ratio, mutual_information

__all__ = ["abs_pearson", "correlation_ratio", "mutual_information", "n_resamples",
           "selector_test", "splitter_test"]
