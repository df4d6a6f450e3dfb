"""The parameters of the conditional inference trees and forests: the choices and
constants, :data:`PAPER_SETTINGS`, the constraint tables (scikit-learn's
``_parameter_constraints`` format) and the numpydoc Parameters / Attributes text the
estimators' docstrings share.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions

from engine.cit.asymptotic import (
    TESTSTATS,
)
from engine.cit.statistics import (
    CLASSIFICATION_SELECTORS,
    REGRESSION_SELECTORS,
)
from engine.cit.thresholds import THRESHOLD_METHODS
from engine.criteria import (
    ENTROPY,
    GINI,
    SQUARED_ERROR,
)

P_VALUE_METHODS = ("asymptotic", "permutation")
#: Splitters whose split point is the maximally selected statistic (ctree), no test.
MAXSTAT_SPLITTERS = ("quadratic", "maximum")
_SPLITTERS_CLF = {"gini": GINI, "entropy": ENTROPY}
_SPLITTERS_REG = {"mse": SQUARED_ERROR, "squared_error": SQUARED_ERROR}
#: The ctree split's Gini / squared error bookkeeping (node impurity, importances).
_MAXSTAT_IMPURITY = {"classification": GINI, "regression": SQUARED_ERROR}
#: Features whose cut points the ctree split searches, best first (ctree's ``splittry``).
SPLIT_TRIES = 2
#: How a split routes the rows whose split feature is missing (NaN), as partykit's
#: ``ctree_control(majority=...)`` (no surrogate splits, ``maxsurrogate = 0``):
#: 'random' (ctree's default ``majority = FALSE``) draws each such row's side at random in
#: proportion to the node's observed rows on each side (our seeded RNG, not R's stream);
#: 'majority' sends them all to the child with more observed rows (ties: the right child,
#: as partykit's ``.which.max``).
MISSING_RULES = ("random", "majority")
#: One sentence the pages show on how the trees treat missing values.
MISSING_VALUES_CAPTION = (
    "Missing values: each node's tests and split point use only the rows where the "
    "feature is observed (as R partykit's ctree); the rows whose split feature is missing "
    "go to a child at random in proportion to the observed rows on each side (ctree's "
    "default; 'majority' sends them to the larger child), and prediction sends a missing "
    "value to the child with more observed training rows."
)
#: The CIT paper's procedure (Milletich et al., arXiv 2607.01417; docs/spec.md section 4) as
#: estimator parameters per task: Monte Carlo permutation p-values (selector 'mc' / 'pc',
#: Bonferroni alpha / m, B 'auto', adaptive stopping, feature scanning and muting), stage B's
#: permutation test of the weighted child impurity of every exact threshold, and the paper's
#: minimum node sizes.  ``ConditionalInferenceTreeClassifier(**PAPER_SETTINGS[
#: "classification"])`` fits the paper's tree; the estimators' defaults are R partykit's
#: ``ctree`` (module docstring).
PAPER_SETTINGS = {
    "classification": dict(
        p_value="permutation",
        splitter="gini",
        feature_muting=True,
        min_samples_split=2,
        min_samples_leaf=1,
        min_child_fraction=0.0,
    ),
    "regression": dict(
        p_value="permutation",
        splitter="mse",
        feature_muting=True,
        min_samples_split=2,
        min_samples_leaf=1,
        min_child_fraction=0.0,
    ),
}


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _early(value) -> bool:
    """Adaptive early stopping on (``'adaptive'`` / True) or off (None / False / 'none')."""
    return value in ("adaptive", True)


#: How many features or thresholds: an int >= 1, a fraction of them in (0, 1], 'sqrt',
#: 'log2', or None (see :func:`threshold_candidates` and ``max_features``).
_HOW_MANY = [
    Interval(Integral, 1, None, closed="left"),
    Interval(RealNotInt, 0, 1, closed="right"),
    StrOptions({"sqrt", "log2"}),
    None,
]
_N_RESAMPLES = [
    Interval(Integral, 1, None, closed="left"),
    StrOptions({"minimum", "auto", "maximum"}),
]
_EARLY_STOPPING = [StrOptions({"adaptive", "none"}), "boolean", None]

#: Constraints of the parameters shared by the trees and the forests (scikit-learn's
#: ``_parameter_constraints`` format); each estimator adds its selector and splitter.
TREE_CONSTRAINTS: dict = {
    "p_value": [StrOptions(set(P_VALUE_METHODS))],
    "teststat": [StrOptions(set(TESTSTATS))],
    "alpha_selector": [Interval(Real, 0, 1, closed="neither")],
    "alpha_splitter": [Interval(Real, 0, 1, closed="neither")],
    "adjust_alpha_selector": ["boolean"],
    "adjust_alpha_splitter": ["boolean"],
    "n_resamples_selector": _N_RESAMPLES,
    "n_resamples_splitter": _N_RESAMPLES,
    "early_stopping_selector": _EARLY_STOPPING,
    "early_stopping_splitter": _EARLY_STOPPING,
    "feature_muting": ["boolean"],
    "feature_scanning": ["boolean"],
    "threshold_scanning": ["boolean"],
    "threshold_method": [StrOptions(set(THRESHOLD_METHODS))],
    "max_thresholds": _HOW_MANY,
    "max_features": _HOW_MANY,
    "max_depth": [Interval(Integral, 0, None, closed="left"), None],
    "min_samples_split": [Interval(Integral, 2, None, closed="left")],
    "min_samples_leaf": [Interval(Integral, 1, None, closed="left")],
    "min_child_fraction": [Interval(Real, 0, 0.5, closed="left")],
    "min_impurity_decrease": [Interval(Real, 0, None, closed="left")],
    "categorical_features": ["array-like", None],
    "missing_rule": [StrOptions(set(MISSING_RULES))],
    "random_state": ["random_state"],
}
CLASSIFICATION_CONSTRAINTS: dict = {
    "selector": [StrOptions(set(CLASSIFICATION_SELECTORS)), None],
    "splitter": [StrOptions(set(_SPLITTERS_CLF) | set(MAXSTAT_SPLITTERS)), None],
}
REGRESSION_CONSTRAINTS: dict = {
    "selector": [StrOptions(set(REGRESSION_SELECTORS)), None],
    "splitter": [StrOptions(set(_SPLITTERS_REG) | set(MAXSTAT_SPLITTERS)), None],
}


def _selector_splitter_doc(task: str) -> str:
    head = """    p_value : {'asymptotic', 'permutation'}, default='asymptotic'
        Stage A's p-values: 'asymptotic' the chi-square (``teststat='quadratic'``) or
        multivariate normal (``'maximum'``) limit of the linear statistic of Strasser &
        Weber (1999), as R partykit's ``ctree`` (equal to its p-values to about 1e-11 on
        the bundled datasets); 'permutation' the CIT paper's Monte Carlo test of the
        ``selector`` statistic, p = (1 + #{T_b >= T}) / (B + 1), never below 1 / (B + 1).
    teststat : {'quadratic', 'maximum'}, default='quadratic'
        Form of the standardised linear statistic of asymptotic tests (ctree's
        ``teststat``): the quadratic form with the Moore-Penrose inverse of its covariance
        (chi-square with rank degrees of freedom) or the largest standardised entry
        (multivariate normal).  Not used with permutation p-values.
"""
    if task == "classification":
        return (
            head
            + """    selector : {'mc', 'mi'} or None, default=None
        Statistic of permutation tests: 'mc' the correlation ratio eta = sqrt(SSB / SST)
        of the feature across the classes, 'mi' the plug-in mutual information of the
        binned feature and the class; None = 'mc'.  Not used with asymptotic p-values.
    splitter : {'quadratic', 'maximum', 'gini', 'entropy'} or None, default=None
        Stage B: 'quadratic' / 'maximum' take the cut point of the chosen feature with the
        largest two-sample statistic in that form, no test (ctree's ``splitstat``; the
        node impurity and the importances are then Gini); 'gini' / 'entropy' test every
        candidate threshold's weighted child impurity by permutation (the paper); None =
        'quadratic'.
"""
        )
    return (
        head
        + """    selector : {'pc'} or None, default=None
        Statistic of permutation tests: 'pc' the absolute Pearson correlation of the
        feature and y; None = 'pc'.  Not used with asymptotic p-values.
    splitter : {'quadratic', 'maximum', 'mse', 'squared_error'} or None, default=None
        Stage B: 'quadratic' / 'maximum' take the cut point with the largest two-sample
        statistic, no test (ctree's ``splitstat``; importances are then squared-error
        decreases); 'mse' / 'squared_error' (the same) test every candidate threshold's
        weighted child squared error by permutation (the paper); None = 'quadratic'.
"""
    )


#: numpydoc of the parameters shared by the trees and the forests, after selector and
#: splitter (``{max_features}`` is the default: None for a tree, 'sqrt' for a forest).
COMMON_PARAMETERS_DOC = """    alpha_selector : float in (0, 1), default=0.05
        Level of stage A: the node splits when the best feature's p-value is below it --
        with asymptotic p-values after partykit's adjustment 1 - (1 - p)^m (m = features
        tested at the node) when ``adjust_alpha_selector``; with permutation p-values the
        level is divided by m instead (Bonferroni).
    alpha_splitter : float in (0, 1), default=0.05
        Level of stage B's permutation test (impurity splitters), divided by the number of
        candidate thresholds when ``adjust_alpha_splitter``.
    adjust_alpha_selector, adjust_alpha_splitter : bool, default=True
        Multiplicity adjustment of the two levels (ctree's ``testtype = "Bonferroni"``;
        False: ctree's "Univariate"); with an int ``n_resamples_*`` the number of
        permutations is also multiplied by the number of tests (as citrees).
    n_resamples_selector, n_resamples_splitter : int >= 1 or \
{{'minimum', 'auto', 'maximum'}}, default='auto'
        Permutations B per permutation test: an int, or a preset at the adjusted level a:
        'minimum' ceil(1 / a), 'auto' max(ceil(1 / a), ceil(z^2 (1 - a) / a)) with
        z = Phi^-1(1 - a), 'maximum' ceil(1 / (4 a^2)).
    early_stopping_selector, early_stopping_splitter : {{'adaptive', 'none'}}, bool or \
None, default='adaptive'
        Adaptive stopping of permutation tests: after at least ceil(1 / a) permutations
        with L exceedances, stop when S = BetaCDF(a; 1 + L, 1 + n - L) >= 0.95 or
        1 - S >= 0.95; None, False or 'none' run all B permutations.
    feature_muting : bool, default=False
        A feature not significant at a node leaves the pool of that node's descendants (the
        paper's setting; ctree has none).
    feature_scanning : bool, default=True
        Permutation tests only: test features by descending raw statistic and stop at the
        first significant one (asymptotic tests cost little and test every feature).
    threshold_scanning : bool, default=True
        Impurity splitters: test thresholds by ascending child impurity and stop at the
        first significant one.
    threshold_method : {{'exact', 'random', 'percentile', 'histogram'}}, default='exact'
        Impurity splitters: stage-B candidate thresholds (:func:`threshold_candidates`);
        the ctree splitters search every cut point.
    max_thresholds : int >= 1, float in (0, 1], {{'sqrt', 'log2'}} or None, default=None
        k of the non-exact threshold methods, on the number of unique values (None =
        'sqrt').
    max_features : int >= 1, float in (0, 1], {{'sqrt', 'log2'}} or None, \
default={max_features}
        Features drawn without replacement for stage A at each node (None = all).
    max_depth : int >= 0 or None, default=None
        Maximum depth (0 = the root is a leaf, None = unlimited).
    min_samples_split : int >= 2, default=20
        Fewest rows of a node that may be split (ctree's ``minsplit``; the paper uses 2).
    min_samples_leaf : int >= 1, default=7
        Fewest rows of a child (ctree's ``minbucket``; the paper uses 1); thresholds
        leaving fewer are not candidates.
    min_child_fraction : float in [0, 0.5), default=0.01
        A child of a node with m rows keeps at least ceil(m * min_child_fraction) rows
        when that is more than ``min_samples_leaf`` (ctree's ``minprob``; the paper: 0).
    min_impurity_decrease : float >= 0, default=0.0
        A significant split is kept only when its impurity decrease (node impurity minus
        the weighted impurity of the children) is at least this.
    categorical_features : array-like of int or of bool, or None, default=None
        Columns holding integer codes 0, 1, ...: column indices or a boolean mask of length
        n_features.
    missing_rule : {{'random', 'majority'}}, default='random'
        Where a split sends the training rows whose split feature is missing (NaN), as
        ``ctree_control(majority=...)``: 'random' (ctree's default) draws each row's side
        with probability the fraction of the node's observed rows going there (seeded by
        ``random_state``, not R's random stream); 'majority' sends them to the child with
        more observed rows (ties: the right child, as partykit).  Prediction sends a
        missing value to the child with more observed training rows under both rules
        (``tree_.missing_go_to_left``).  Surrogate splits (ctree's ``maxsurrogate``) are
        not offered.
"""

_TREE_ATTRIBUTES_DOC = """    tree_ : engine.tree.TreeArrays
        The fitted tree; ``p_value`` holds the stage-A p-value of each split (nan at
        leaves), ``cat_offsets`` / ``cat_values`` the category sets of categorical splits.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when ``X`` was a DataFrame with string column names.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Impurity decrease per split summed by feature (not weighted by node size),
        normalised to sum 1; all zeros when the root is a leaf.
    p_value_selector_, p_value_splitter_ : ndarray of shape (n_nodes,)
        Stage-A p-value of each split as its test reports it (the Monte Carlo p-value,
        compared with alpha / m, or the adjusted asymptotic p-value, compared with alpha)
        and stage B's permutation p-value (nan at leaves and after a ctree split).
    n_permutations_selector_, n_permutations_splitter_ : ndarray of shape (n_nodes,)
        Permutations those tests used (0 at leaves and for asymptotic tests).
    node_records_ : list of dict
        One per node: every tested feature's statistic, p-value and permutations, the
        levels used, stage B's candidate thresholds and their statistics (see the module
        docstring).
"""
