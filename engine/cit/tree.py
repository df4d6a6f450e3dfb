"""Conditional inference trees (docs/spec.md section 4; Hothorn, Hornik & Zeileis 2006): at every
node a test of independence between each feature and the target selects the split
feature (stage A), then a split point is chosen on it (stage B).

Two procedures, chosen by parameters (:data:`PAPER_SETTINGS` holds the second):

* **ctree** (the default, as R partykit's ``ctree`` with its defaults): stage A computes
  every feature's *asymptotic* p-value of the linear statistic of Strasser & Weber (1999) in
  its quadratic (``teststat='quadratic'``, chi-square) or maximum (``'maximum'``,
  multivariate normal) form (:mod:`engine.cit.asymptotic`); the p-values are adjusted as
  partykit does (``1 - (1 - p)^m`` over the m features tested) and the node splits when the
  smallest is below ``alpha_selector``; stage B takes the cut point with the largest
  maximally selected two-sample statistic (``splitter='quadratic'`` / ``'maximum'``), no
  test; ``min_samples_split=20``, ``min_samples_leaf=7``, ``min_child_fraction=0.01`` are
  ctree's ``minsplit``, ``minbucket`` and ``minprob``; no feature muting.  Cost per node:
  linear in its rows for the tests, one sort of the chosen feature for the split.
* **the CIT paper** (Milletich et al., arXiv 2607.01417; ``p_value='permutation'`` with an
  impurity splitter): stage A's Monte Carlo permutation tests of the selector statistic
  (Bonferroni ``alpha / m``, adaptive stopping, feature scanning and muting), stage B's
  permutation test of the weighted child impurity of every candidate threshold
  (:mod:`engine.cit.permutation`).

Public API: :class:`ConditionalInferenceTreeClassifier`,
:class:`ConditionalInferenceTreeRegressor`, :func:`threshold_candidates`,
:data:`PAPER_SETTINGS`.

A fitted estimator has ``tree_`` (:class:`engine.tree.TreeArrays`, with ``p_value`` = the
stage-A p-value of each split as its test reports it, ``nan`` at leaves: the Monte Carlo
p-value, compared with ``alpha / m``, or partykit's adjusted asymptotic p-value, compared
with ``alpha``), ``feature_importances_`` (impurity decrease per split -- Gini or entropy /
squared error --, **not** weighted by the node size, normalised to sum 1; all zeros when
the root is a leaf), the per-node arrays ``p_value_selector_``, ``p_value_splitter_``,
``n_permutations_selector_``, ``n_permutations_splitter_`` (nan / 0 at leaves and where no
test ran) and ``node_records_``: one dict per node with ``p_value_method``
(``'asymptotic'`` / ``'permutation'``), every tested feature's statistic, p-value and
permutations (``features``, ``statistics``, ``p_values``, ``n_permutations``, in test
order; asymptotic tests add ``p_values_adjusted`` and ``degrees_of_freedom``), the level
``alpha_selector`` the p-values are compared with (permutation: after Bonferroni; asymptotic:
alpha, for the adjusted p-values), the features drawn for the node's stage A
(``candidates``, ``n_tested`` = m_t of the adjustment) with their raw statistics
(``candidate_statistics``; with feature scanning the permutation test stops at the first
significant one, so later candidates have a statistic but no p-value).  Stage B by
permutation records the candidate thresholds with the weighted child impurity of each
(``candidate_thresholds``, ``candidate_threshold_statistics``; for a categorical feature the
thresholds are positions in ``category_order``, the node's categories sorted by mean
target), the tested thresholds (``thresholds``, ``threshold_statistics``,
``threshold_p_values``, ``alpha_splitter``); stage B by maximally selected statistics records
``split_statistic`` (its form), ``split_features`` (the features whose cut points were
searched), for a numeric feature every admissible cut point (``candidate_thresholds``,
float64 array of midpoints) with its two-sample statistic
(``candidate_threshold_statistics``), for a categorical one the best statistic
(``split_statistic_value``); at a split ``chosen_threshold`` (on the threshold scale) or
``chosen_categories`` (the categories going left).  With ``keep_null=True`` the
permutation null distributions (``nulls``: feature -> array; ``threshold_null``: the chosen
threshold's null).

Categorical features (``categorical_features``: mask or indices; integer codes 0..C-1):
asymptotic tests use the level dummies (``P`` = levels) and the ctree split searches every
split of the node's levels into two groups (up to
:data:`engine.cit.asymptotic.MAX_EXHAUSTIVE_LEVELS` present levels; beyond, the levels
sorted by their mean influence); permutation tests use the plug-in mutual information of
the codes (classification) or the correlation ratio of ``y`` across the categories
(regression), and stage B by permutation orders the node's categories by their mean target
(classification: the fraction of the node's majority class) and searches thresholds on
that order; the split is stored as a category set (``cat_offsets``/``cat_values`` of
``tree_``: listed categories go left).

Missing values (NaN in ``X``), as R partykit's ``ctree`` (``maxsurrogate = 0``): a node's
stage-A test of a feature and its stage-B split search use only the node's rows where the
feature is observed (partykit's subset: the influence function's mean and covariance are
those rows'; a feature whose observed rows leave the target constant has no test and is not
counted in the adjustment), with ``min_samples_leaf`` / ``min_child_fraction`` computed on
all the node's rows; the rows the split cannot route follow ``missing_rule`` (``'random'``:
each goes left with probability the observed fraction going left, ctree's default
``majority = FALSE``; ``'majority'``: all to the child with more observed rows, ties to the
right child as partykit's ``.which.max``), and count in the children.  ``tree_.
missing_go_to_left`` holds the majority side of every split: prediction sends a missing
value there under both rules (partykit's ``predict`` draws at random again under
``majority = FALSE``; the majority side is its most likely outcome), so predictions are
deterministic.  ``node_records_[i]["n_missing_routed"]`` counts the training rows split
``i`` routed by the rule (``n_missing_left`` of them to the left).  The paper's permutation
tests likewise run on the observed rows (a feature with a constant target there gets p = 1).

Constant features (range at most a few ulps of their magnitude, relative to the column's
own scale) are not tested at a node; a feature on any scale that varies is.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from engine._numba import njit, register_warmup
from engine.cit.asymptotic import (
    MAX_EXHAUSTIVE_LEVELS,
    TESTSTATS,
    categorical_pvalue,
    level_sums,
    maxstat_ordered,
    maxstat_unordered,
    n_influence_columns,
    node_influence,
    numeric_pvalues,
    numeric_tests,
    pinv_sym,
)
from engine.cit.permutation import n_resamples, selector_test, splitter_test, splitter_tests
from engine.cit.statistics import (
    CLASSIFICATION_SELECTORS,
    ETA_REG,
    MI,
    REGRESSION_SELECTORS,
    bin_codes,
    statistic,
)
from engine.compare import ModelSpec, ParamSpec, param_spec, register_model
from engine.criteria import (
    ENTROPY,
    GINI,
    SQUARED_ERROR,
    class_impurity,
    squared_error,
    threshold_gains,
    weighted_class_counts,
)
from engine.tree import TreeArrays

THRESHOLD_METHODS = ("exact", "random", "percentile", "histogram")
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
#: A column (or a regression target) is constant when its range is at most this many ulps
#: of its magnitude.
CONSTANT_ULPS = 4.0

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


@njit
def column_ranges(X, rows, features):
    """``(low, high)`` float64 (f,) of the ``features`` (int64) of ``X`` over ``rows``."""
    nf = features.shape[0]
    low = np.full(nf, np.inf)
    high = np.full(nf, -np.inf)
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(nf):
            v = X[r, features[j]]
            if v < low[j]:
                low[j] = v
            if v > high[j]:
                high[j] = v
    return low, high


def is_constant(low, high):
    """Whether ranges ``[low, high]`` (arrays) are constant up to rounding: at most
    :data:`CONSTANT_ULPS` ulps of their magnitude (relative to each column's own scale)."""
    low = np.asarray(low, dtype=np.float64)
    high = np.asarray(high, dtype=np.float64)
    scale = np.maximum(np.abs(low), np.abs(high))
    return (high - low) <= CONSTANT_ULPS * np.finfo(np.float64).eps * scale


def _n_thresholds(max_thresholds, n_unique: int) -> int:
    """``k`` of :func:`threshold_candidates` for a node feature with ``n_unique`` distinct
    values (as citrees' ``calculate_max_value`` on the number of unique values, except
    ``None``: ours is 'sqrt', citrees' is every value); the caller caps it at the number of
    midpoints.  Raises ValueError on a bad ``max_thresholds``."""
    if max_thresholds is None or max_thresholds == "sqrt":
        return max(1, int(math.ceil(math.sqrt(n_unique))))
    if max_thresholds == "log2":
        return max(1, int(math.ceil(math.log2(max(n_unique, 2)))))
    if isinstance(max_thresholds, (int, np.integer)) and not isinstance(max_thresholds, bool):
        if max_thresholds < 1:
            raise ValueError(f"max_thresholds must be >= 1, got {max_thresholds}")
        return int(max_thresholds)
    if isinstance(max_thresholds, float) and 0.0 < max_thresholds <= 1.0:
        return max(1, int(math.ceil(max_thresholds * n_unique)))
    raise ValueError(
        "max_thresholds must be None, 'sqrt', 'log2', an int >= 1 or a fraction in "
        f"(0, 1], got {max_thresholds!r}"
    )


def threshold_candidates(
    x, method: str = "exact", max_thresholds=None, *, rng=None, min_samples_leaf: int = 1
) -> np.ndarray:
    """Stage-B candidate thresholds (sorted float64) of one feature at a node.

    From the midpoints ``m`` of the sorted unique values ``u`` of ``x``: ``exact`` all of
    them; ``random`` ``k`` distinct midpoints drawn without replacement; ``percentile``
    ``unique(percentile(m, linspace(0, 100, k)))``; ``histogram`` the unique edges of
    ``np.histogram(m, bins=k)`` (``k + 1`` equally spaced edges from ``min(m)`` to
    ``max(m)``).  All midpoints when ``x`` has at most 4 unique values.  ``k`` from
    ``max_thresholds`` on the number of unique values ``|u|`` (None/'sqrt':
    ceil(sqrt(|u|)), 'log2': ceil(log2(|u|)), an int, or ceil(fraction * |u|)), then capped
    at ``|m| = |u| - 1`` as in citrees: a histogram never has more bins than there are
    midpoints (``max_thresholds=256`` on 100 unique values gives 99 bins, 100 edges).
    Thresholds leaving fewer than ``min_samples_leaf`` rows on a side (left iff ``x <= t``)
    are dropped.  Raises ValueError on an unknown ``method`` or a bad ``max_thresholds``.
    """
    if method not in THRESHOLD_METHODS:
        raise ValueError(
            f"threshold_method must be one of {list(THRESHOLD_METHODS)}, got {method!r}"
        )
    x = np.asarray(x, dtype=np.float64)
    u = np.unique(x)
    mid = (u[:-1] + u[1:]) / 2.0
    if mid.size == 0:
        return mid
    if method != "exact" and u.size > 4:
        k = min(_n_thresholds(max_thresholds, u.size), mid.size)
        if method == "random":
            if k < mid.size:
                rng = check_random_state(rng)
                mid = np.sort(mid[rng.choice(mid.size, size=k, replace=False)])
        elif method == "percentile":
            mid = np.unique(np.percentile(mid, np.linspace(0.0, 100.0, k)))
        else:
            mid = np.unique(np.histogram(mid, bins=k)[1])
    if min_samples_leaf > 1:
        xs = np.sort(x)
        pos = np.searchsorted(xs, mid, side="right")
        mid = mid[(pos >= min_samples_leaf) & (x.size - pos >= min_samples_leaf)]
    return np.ascontiguousarray(mid, dtype=np.float64)


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


#: ``sqrt(.Machine$double.xmin)``: partykit's tolerance for tied criteria.
_TIE_CRITERION = math.sqrt(np.finfo(np.float64).tiny)


def _ctree_order(crit, stat, features):
    """Features' positions by partykit's criterion ``log(1 - adjusted p)`` (``crit``, float
    (f,)), best first, and the criterion as partykit ranks it: the criteria tied with the
    largest (within ``sqrt(DBL_MIN)``) get ``rank(log statistic) / (1000 sum(column))``
    added (``column`` = the feature's 1-based column in R's model frame, the response
    first), and equal criteria put the later column first (``rev(order(crit))``).
    Returns ``(order int64 (f,), ranked float64 (f,))``."""
    from scipy.stats import rankdata

    ranked = np.where(np.isnan(crit), -np.inf, np.asarray(crit, dtype=np.float64))
    top = ranked.max()
    if np.isfinite(top):
        ties = np.flatnonzero(np.abs(ranked - top) < _TIE_CRITERION)
        if ties.size > 1:
            logstat = np.log(np.maximum(np.asarray(stat)[ties], np.finfo(np.float64).eps))
            columns = np.asarray(features)[ties] + 2.0
            ranked[ties] = ranked[ties] + rankdata(logstat) / (columns.sum() * 1000.0)
    # descending criterion; among equal values the later column first
    order = np.lexsort((-np.arange(ranked.size), -ranked))
    return order.astype(np.int64), ranked


def _observed(X, rows, f, yc, yv):
    """The node's rows where feature ``f`` is observed: ``(rows int64, y codes, y values)``
    (``yc`` / ``yv`` are aligned with ``rows``)."""
    keep = ~np.isnan(X[rows, f])
    return rows[keep], np.ascontiguousarray(yc[keep]), np.ascontiguousarray(yv[keep])


def _constant_target(classif, yc, yv) -> bool:
    """Whether a target has no variation (fewer than 2 rows, one class, or a constant
    value): partykit's test is NA there (the influence variance is zero)."""
    if yc.size < 2:
        return True
    if classif:
        return bool(np.all(yc == yc[0]))
    return bool(is_constant(yv.min(), yv.max()))


def _impurity_decrease(classif, yc, yv, goes_left, n_classes, criterion, parent):
    """``parent - (n_L / n) i(L) - (n_R / n) i(R)`` of a split (Gini / entropy of the class
    counts, or the squared error)."""
    n = goes_left.size
    n_left = float(goes_left.sum())
    n_right = n - n_left
    if classif:
        left = np.bincount(yc[goes_left], minlength=n_classes).astype(np.float64)
        right = np.bincount(yc[~goes_left], minlength=n_classes).astype(np.float64)
        child = (n_left / n) * class_impurity(left, n_left, criterion) + (
            n_right / n
        ) * class_impurity(right, n_right, criterion)
    else:
        yl = yv[goes_left]
        yr = yv[~goes_left]
        child = (n_left / n) * squared_error(n_left, yl.sum(), (yl * yl).sum()) + (
            n_right / n
        ) * squared_error(n_right, yr.sum(), (yr * yr).sum())
    return float(parent - child)


class _BaseCIT(BaseEstimator):
    _task = "classification"

    def __init__(
        self,
        *,
        p_value="asymptotic",
        teststat="quadratic",
        selector=None,
        splitter=None,
        alpha_selector=0.05,
        alpha_splitter=0.05,
        adjust_alpha_selector=True,
        adjust_alpha_splitter=True,
        n_resamples_selector="auto",
        n_resamples_splitter="auto",
        early_stopping_selector="adaptive",
        early_stopping_splitter="adaptive",
        feature_muting=False,
        feature_scanning=True,
        threshold_scanning=True,
        threshold_method="exact",
        max_thresholds=None,
        max_features=None,
        max_depth=None,
        min_samples_split=20,
        min_samples_leaf=7,
        min_child_fraction=0.01,
        min_impurity_decrease=0.0,
        categorical_features=None,
        missing_rule="random",
        keep_null=False,
        random_state=None,
    ):
        self.p_value = p_value
        self.teststat = teststat
        self.selector = selector
        self.splitter = splitter
        self.alpha_selector = alpha_selector
        self.alpha_splitter = alpha_splitter
        self.adjust_alpha_selector = adjust_alpha_selector
        self.adjust_alpha_splitter = adjust_alpha_splitter
        self.n_resamples_selector = n_resamples_selector
        self.n_resamples_splitter = n_resamples_splitter
        self.early_stopping_selector = early_stopping_selector
        self.early_stopping_splitter = early_stopping_splitter
        self.feature_muting = feature_muting
        self.feature_scanning = feature_scanning
        self.threshold_scanning = threshold_scanning
        self.threshold_method = threshold_method
        self.max_thresholds = max_thresholds
        self.max_features = max_features
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_child_fraction = min_child_fraction
        self.min_impurity_decrease = min_impurity_decrease
        self.categorical_features = categorical_features
        self.missing_rule = missing_rule
        self.keep_null = keep_null
        self.random_state = random_state

    # -- parameters ------------------------------------------------------------------

    def n_features_tested(self, n_candidates: int) -> int:
        """How many of ``n_candidates`` candidate features stage A tests at a node (drawn
        at random when ``max_features`` is set; see :meth:`_n_features_node`).  The page
        shows it for the root before fitting."""
        return self._n_features_node(int(n_candidates))

    def _n_features_node(self, m: int) -> int:
        """Features drawn for stage A at a node with ``m`` candidate features (the
        validated ``max_features``: None = all, 'sqrt' / 'log2' rounded up, an int capped at
        ``m``, a fraction of ``m`` rounded up, at least 1)."""
        mf = self.max_features
        if mf is None:
            return m
        if mf == "sqrt":
            return max(1, int(math.ceil(math.sqrt(m))))
        if mf == "log2":
            return max(1, int(math.ceil(math.log2(max(m, 2)))))
        if _is_int(mf):
            return min(int(mf), m)
        return max(1, int(math.ceil(mf * m)))

    def _resolved(self) -> dict:
        """The validated parameters as the kernels take them: ``sel`` the permutation
        selector's code (None = 'mc' / 'pc'), ``crit`` the impurity of the nodes and of the
        importances (the splitter's; Gini / squared error with a ctree splitter),
        ``split_stat`` the ctree splitter's form (None with an impurity splitter; splitter
        None = 'quadratic'), ``asymptotic``, ``teststat``, the levels and early stopping."""
        classif = self._task == "classification"
        sel = self.selector if self.selector is not None else ("mc" if classif else "pc")
        spl = self.splitter if self.splitter is not None else "quadratic"
        table = CLASSIFICATION_SELECTORS if classif else REGRESSION_SELECTORS
        stable = _SPLITTERS_CLF if classif else _SPLITTERS_REG
        split_stat = TESTSTATS[spl] if spl in MAXSTAT_SPLITTERS else None
        return dict(
            sel=table[sel],
            crit=_MAXSTAT_IMPURITY[self._task] if split_stat is not None else stable[spl],
            split_stat=split_stat,
            split_stat_name=spl if split_stat is not None else None,
            asymptotic=self.p_value == "asymptotic",
            teststat=TESTSTATS[self.teststat],
            a_sel=float(self.alpha_selector),
            a_spl=float(self.alpha_splitter),
            es_sel=_early(self.early_stopping_selector),
            es_spl=_early(self.early_stopping_splitter),
        )

    def _min_leaf(self, m: int) -> int:
        """Fewest rows of a child of a node with ``m`` rows: ``max(min_samples_leaf,
        ceil(m * min_child_fraction))`` (ctree's minbucket and minprob)."""
        return max(int(self.min_samples_leaf), int(math.ceil(m * float(self.min_child_fraction))))

    def check_params(self):
        """Validate the parameters without fitting (the constraint table
        ``_parameter_constraints``, as ``fit`` does); returns ``self`` (so a page can check a
        configuration before starting a job).

        Raises
        ------
        sklearn.utils._param_validation.InvalidParameterError
            A ``ValueError`` naming the parameter, its allowed values and the value given.
        """
        self._validate_params()
        return self

    def _categorical_mask(self, p):
        cf = self.categorical_features
        mask = np.zeros(p, dtype=bool)
        if cf is None:
            return mask
        a = np.asarray(cf)
        if a.dtype == bool:
            if a.shape != (p,):
                raise ValueError(f"categorical_features mask must have {p} booleans")
            return a.copy()
        mask[a.astype(np.int64)] = True
        return mask

    # -- fit -------------------------------------------------------------------------

    def _fit(self, X, y_code, y_val, n_classes):
        prm = self._resolved()
        classif = self._task == "classification"
        n, p = X.shape
        self.n_features_in_ = p
        is_cat = self._categorical_mask(p)
        for j in np.flatnonzero(is_cat):
            col = X[:, j]
            col = col[~np.isnan(col)]
            if np.any(col < 0) or np.any(col != np.round(col)):
                raise ValueError(f"categorical feature {j} must hold integer codes 0, 1, ...")
        # features with a missing value somewhere: only they need per-node observed rows
        self._has_missing = np.isnan(X).any(axis=0)
        rng = check_random_state(self.random_state)
        max_depth = self.max_depth if self.max_depth is not None else np.iinfo(np.int64).max
        crit = prm["crit"]
        nodes = []  # dicts in preorder
        importances = np.zeros(p)
        # stack of (rows, depth, pool, parent, is_left)
        stack = [(np.arange(n), 0, np.arange(p), -1, False)]
        while stack:
            rows, depth, pool, parent, is_left = stack.pop()
            node_id = len(nodes)
            yc = np.ascontiguousarray(y_code[rows])
            yv = np.ascontiguousarray(y_val[rows])
            node = {"rows_n": rows.size}
            if classif:
                counts = weighted_class_counts(yc, np.ones(rows.size), n_classes)
                node["value"] = counts / counts.sum()
                node["impurity"] = class_impurity(counts, float(rows.size), crit)
            else:
                node["value"] = np.array([yv.mean()])
                node["impurity"] = squared_error(float(rows.size), yv.sum(), (yv * yv).sum())
            node.update(
                feature=-2,
                threshold=-2.0,
                left=-1,
                right=-1,
                cats=None,
                p_sel=np.nan,
                p_spl=np.nan,
                b_sel=0,
                b_spl=0,
                missing_left=0,
                record={"features": [], "statistics": [], "p_values": [], "n_permutations": []},
            )
            nodes.append(node)
            if parent >= 0:
                nodes[parent]["left" if is_left else "right"] = node_id
            split = self._split_node(
                X, rows, yc, yv, n_classes, depth, max_depth, pool, is_cat, prm, rng, node
            )
            if split is None:
                continue
            f, goes_left, child_pool, delta = split
            importances[f] += delta
            # push right first so the left child gets the next id (preorder)
            stack.append((rows[~goes_left], depth + 1, child_pool, node_id, False))
            stack.append((rows[goes_left], depth + 1, child_pool, node_id, True))
        self._store(nodes, importances, n_classes, p, is_cat)
        return self

    def _split_node(
        self, X, rows, yc, yv, n_classes, depth, max_depth, pool, is_cat, prm, rng, node
    ):
        """Stage A then stage B at one node; returns ``(feature, goes_left (bool (m,)),
        child_pool, impurity decrease)`` or None for a leaf (the reasons are in the
        node's record)."""
        classif = self._task == "classification"
        m = rows.size
        if m < self.min_samples_split or depth >= max_depth or m < 2 * self.min_samples_leaf:
            return None
        if classif and node["impurity"] <= 1e-12:
            return None
        if not classif and (node["impurity"] <= 1e-12 or is_constant(yv.min(), yv.max())):
            return None
        # drop features constant at the node (for the whole subtree)
        low, high = column_ranges(X, rows, np.ascontiguousarray(pool, dtype=np.int64))
        nonconst = np.ascontiguousarray(pool[~is_constant(low, high)], dtype=np.int64)
        if nonconst.size == 0:
            return None
        k = self._n_features_node(nonconst.size)
        tested = (
            np.sort(rng.choice(nonconst, size=k, replace=False)) if k < nonconst.size else nonconst
        )
        if prm["asymptotic"]:
            picked = self._stage_a_asymptotic(
                X, rows, yc, yv, n_classes, tested, nonconst, is_cat, prm, node
            )
        else:
            picked = self._stage_a_permutation(
                X, rows, yc, yv, n_classes, tested, nonconst, is_cat, prm, rng, node
            )
        if picked is None:
            return None
        candidates, child_pool = picked
        if prm["split_stat"] is None:  # the paper's stage B: permutation-tested thresholds
            f, p_sel, b_sel = candidates[0]
            node["p_sel"] = p_sel
            node["b_sel"] = b_sel
            split = self._stage_b_permutation(X, rows, yc, yv, n_classes, f, is_cat, prm, rng, node)
        else:  # ctree: the maximally selected statistic, the next feature if no cut point
            node["record"]["split_features"] = []
            split = None
            for f, p_sel, b_sel in candidates[:SPLIT_TRIES]:
                node["record"]["split_features"].append(int(f))
                split = self._stage_b_maxstat(X, rows, yc, yv, n_classes, f, is_cat, prm, rng, node)
                if split is not None:
                    node["p_sel"] = p_sel
                    node["b_sel"] = b_sel
                    break
        if split is None:
            return None
        f, goes_left, delta = split
        return f, goes_left, child_pool, delta

    def _route_missing(self, goes_left_obs, observed, rng, node):
        """Complete a split found on the observed rows (``goes_left_obs`` bool over the rows
        where ``observed``, bool (m,)) with the rule for the others (``missing_rule``):
        'majority' sends them to the child with more observed rows (ties: right, as
        partykit's ``.which.max``), 'random' draws each one's side with probability the
        observed fraction going left (partykit's default, our seeded ``rng``).  Records
        the prediction rule (the majority side) in ``node['missing_left']`` and the number
        of rows routed by the rule in the node's record; returns ``goes_left`` bool (m,)."""
        n_obs = goes_left_obs.size
        n_left = int(np.count_nonzero(goes_left_obs))
        node["missing_left"] = int(n_left > n_obs - n_left)
        n_missing = observed.size - n_obs
        node["record"]["n_missing_routed"] = int(n_missing)
        if n_missing == 0:
            return goes_left_obs
        goes_left = np.empty(observed.size, dtype=bool)
        goes_left[observed] = goes_left_obs
        if self.missing_rule == "majority":
            goes_left[~observed] = bool(node["missing_left"])
        else:
            goes_left[~observed] = rng.random_sample(n_missing) < n_left / n_obs
        node["record"]["n_missing_left"] = int(np.count_nonzero(goes_left[~observed]))
        return goes_left

    def _stage_a_permutation(
        self, X, rows, yc, yv, n_classes, tested, nonconst, is_cat, prm, rng, node
    ):
        """The paper's stage A (docs/spec.md section 4): Monte Carlo permutation tests of the
        selector statistic at the Bonferroni level alpha / m_t, feature scanning, feature
        muting.  Returns ``([(feature, p, permutations)], child_pool)`` or None."""
        classif = self._task == "classification"
        Xn = X[rows]
        m_t = tested.size
        a_sel = prm["a_sel"] / m_t if self.adjust_alpha_selector else prm["a_sel"]
        B = n_resamples(self.n_resamples_selector, a_sel)
        if self.adjust_alpha_selector and _is_int(self.n_resamples_selector):
            B *= m_t  # as citrees: an integer B is per test at the unadjusted level
        prepared = []
        stats = []
        for f in tested:
            x = np.ascontiguousarray(Xn[:, f])
            yc_f, yv_f = yc, yv
            if self._has_missing[f]:  # tested on the rows where f is observed
                keep = ~np.isnan(x)
                if not keep.all():
                    x = np.ascontiguousarray(x[keep])
                    yc_f = np.ascontiguousarray(yc[keep])
                    yv_f = np.ascontiguousarray(yv[keep])
                    if _constant_target(classif, yc_f, yv_f):
                        stats.append(0.0)  # no test: p = 1
                        prepared.append(None)
                        continue
            if is_cat[f]:
                a, n_a = bin_codes(x, categorical=True)
                code = MI if classif else ETA_REG
            elif prm["sel"] == MI:
                a, n_a = bin_codes(x)
                code = MI
            else:
                a, n_a = np.zeros(x.size, dtype=np.int64), 1
                code = prm["sel"]
            stats.append(statistic(code, x, a, n_a, yc_f, yv_f, n_classes))
            prepared.append((code, x, a, n_a, yc_f, yv_f))
        order = (
            np.argsort(-np.asarray(stats), kind="stable")
            if self.feature_scanning
            else rng.permutation(m_t)
        )
        rec = node["record"]
        rec["alpha_selector"] = a_sel
        rec["n_tested"] = int(m_t)
        rec["candidates"] = [int(f) for f in tested]
        rec["candidate_statistics"] = [float(s) for s in stats]
        if self.keep_null:
            rec["nulls"] = {}
        best_p = np.inf
        best_f = -1
        n_ties = 0
        muted = set()
        for i in order:
            f = int(tested[i])
            if prepared[i] is None:  # the target is constant where f is observed
                rec["features"].append(f)
                rec["statistics"].append(0.0)
                rec["p_values"].append(1.0)
                rec["n_permutations"].append(0)
                if self.feature_muting and nonconst.size > 1:
                    muted.add(f)
                continue
            code, x, a, n_a, yc_f, yv_f = prepared[i]
            res = selector_test(
                code,
                x,
                a,
                n_a,
                yc_f,
                yv_f,
                n_classes,
                B,
                int(rng.randint(0, 2**31 - 1)),
                alpha=a_sel,
                adaptive=prm["es_sel"],
                keep_null=self.keep_null,
            )
            rec["features"].append(f)
            rec["statistics"].append(res.statistic)
            rec["p_values"].append(res.p_value)
            rec["n_permutations"].append(res.n_permutations)
            if self.keep_null:
                rec["nulls"][f] = res.null
            if res.p_value < best_p:
                best_p, best_f, n_ties = res.p_value, f, 1
                best_b = res.n_permutations
            elif res.p_value == best_p:
                n_ties += 1
                if rng.randint(0, n_ties) == 0:
                    best_f = f
                    best_b = res.n_permutations
            if res.p_value >= a_sel and self.feature_muting and nonconst.size > 1:
                muted.add(f)
            if self.feature_scanning and res.p_value < a_sel:
                break
        if best_p >= a_sel:
            return None
        child_pool = np.array([f for f in nonconst if f not in muted], dtype=np.int64)
        if child_pool.size == 0:
            child_pool = nonconst
        return [(best_f, best_p, best_b)], child_pool

    def _stage_a_asymptotic(self, X, rows, yc, yv, n_classes, tested, nonconst, is_cat, prm, node):
        """ctree's stage A (:mod:`engine.cit.asymptotic`): every drawn feature's asymptotic
        p-value, adjusted as partykit does when ``adjust_alpha_selector``
        (``1 - (1 - p)^m``); features ranked by ``log(1 - adjusted p)`` with partykit's
        tie rule (ties broken by the statistic's rank, then by the later column).  Returns
        ``([(feature, adjusted p, 0)], child_pool)`` for the significant features, best
        first, or None when none is below ``alpha_selector``."""
        classif = self._task == "classification"
        n_q = n_influence_columns(classif, n_classes)
        mean_h, cov_h = node_influence(yc, yv, classif, n_q)
        node["influence"] = (n_q, mean_h, cov_h)
        m_t = tested.size
        stat = np.empty(m_t)
        p = np.empty(m_t)
        lower = np.empty(m_t)
        df = np.empty(m_t)
        # a feature missing on some of the node's rows is tested on the rows where it is
        # observed, with the influence function of those rows (partykit's subset); one
        # whose observed rows leave the target constant has no test (NA in partykit)
        partial = np.array([self._has_missing[f] and np.isnan(X[rows, f]).any() for f in tested])
        numeric = np.flatnonzero(~is_cat[tested] & ~partial)
        if numeric.size:
            D, vx = numeric_tests(
                X, rows, np.ascontiguousarray(tested[numeric]), yc, yv, classif, n_q, mean_h
            )
            stat[numeric], p[numeric], lower[numeric], df[numeric] = numeric_pvalues(
                D, vx, cov_h, prm["teststat"]
            )
        for i in np.flatnonzero(is_cat[tested] | partial):
            f = int(tested[i])
            if partial[i]:
                obs_rows, yc_f, yv_f = _observed(X, rows, f, yc, yv)
                if _constant_target(classif, yc_f, yv_f):
                    stat[i] = p[i] = lower[i] = df[i] = np.nan
                    continue
                mean_f, cov_f = node_influence(yc_f, yv_f, classif, n_q)
            else:
                obs_rows, yc_f, yv_f, mean_f, cov_f = rows, yc, yv, mean_h, cov_h
            if not is_cat[f]:
                D, vx = numeric_tests(X, obs_rows, np.array([f]), yc_f, yv_f, classif, n_q, mean_f)
                res = numeric_pvalues(D, vx, cov_f, prm["teststat"])
                stat[i], p[i], lower[i], df[i] = (float(v[0]) for v in res)
                continue
            codes = X[obs_rows, f].astype(np.int64)
            counts, sums = level_sums(codes, int(codes.max()) + 1, yc_f, yv_f, classif, n_q)
            stat[i], p[i], lower[i], df[i] = categorical_pvalue(
                counts, sums, mean_f, cov_f, prm["teststat"]
            )
        # partykit's Bonferroni counts the features with a test (non-NA p-values)
        m_t = int(np.count_nonzero(~np.isnan(lower)))
        crit = lower * m_t if self.adjust_alpha_selector else lower.copy()
        with np.errstate(over="ignore"):
            p_adj = -np.expm1(crit)
        alpha = prm["a_sel"]
        rec = node["record"]
        rec.update(
            p_value_method="asymptotic",
            teststat=self.teststat,
            alpha_selector=alpha,
            n_tested=int(m_t),
            candidates=[int(f) for f in tested],
            candidate_statistics=[float(v) for v in stat],
            features=[int(f) for f in tested],
            statistics=[float(v) for v in stat],
            p_values=[float(v) for v in p],
            p_values_adjusted=[float(v) for v in p_adj],
            degrees_of_freedom=[float(v) for v in df],
            n_permutations=[0] * int(m_t),
        )
        order, ranked = _ctree_order(crit, stat, tested)
        limit = math.log(1.0 - alpha)
        significant = [int(i) for i in order if ranked[i] > limit]
        if not significant:
            return None
        muted = set()
        if self.feature_muting and nonconst.size > 1:
            muted = {int(f) for f, pa in zip(tested, p_adj, strict=True) if not pa < alpha}
        child_pool = np.array([f for f in nonconst if f not in muted], dtype=np.int64)
        if child_pool.size == 0:
            child_pool = nonconst
        return [(int(tested[i]), float(p_adj[i]), 0) for i in significant], child_pool

    def _stage_b_maxstat(self, X, rows, yc, yv, n_classes, f, is_cat, prm, rng, node):
        """ctree's split point on feature ``f``: the cut point (numeric) or the split of
        the levels into two groups (categorical) with the largest two-sample statistic in
        the ``splitter`` form (:func:`engine.cit.asymptotic.maxstat_ordered` /
        ``maxstat_unordered``), both children holding at least :meth:`_min_leaf` rows.
        The search runs on the rows where ``f`` is observed (with their influence function,
        as partykit); the others are routed by :meth:`_route_missing`.  Returns ``(f,
        goes_left (over all the node's rows), impurity decrease)`` or None (no admissible
        cut point, or a decrease below ``min_impurity_decrease``)."""
        classif = self._task == "classification"
        rec = node["record"]
        m = rows.size
        min_leaf = self._min_leaf(m)  # partykit: minprob of all the node's rows
        all_yc, all_yv = yc, yv
        observed = np.ones(m, dtype=bool)
        if self._has_missing[f]:
            observed = ~np.isnan(X[rows, f])
        if observed.all():
            if "influence" not in node:
                n_q = n_influence_columns(classif, n_classes)
                mean_h, cov_h = node_influence(yc, yv, classif, n_q)
                node["influence"] = (n_q, mean_h, cov_h)
            n_q, mean_h, cov_h = node["influence"]
        else:
            rows, yc, yv = _observed(X, rows, f, yc, yv)
            if rows.size < 2 * min_leaf or _constant_target(classif, yc, yv):
                return None
            n_q = n_influence_columns(classif, n_classes)
            mean_h, cov_h = node_influence(yc, yv, classif, n_q)
        A, _ = pinv_sym(cov_h)
        var_h = np.ascontiguousarray(np.diag(cov_h))
        rec["split_statistic"] = prm["split_stat_name"]
        x = np.ascontiguousarray(X[rows, f])
        cats = None
        if is_cat[f]:
            codes = x.astype(np.int64)
            counts, sums = level_sums(codes, int(codes.max()) + 1, yc, yv, classif, n_q)
            present = np.flatnonzero(counts > 0)
            if present.size <= MAX_EXHAUSTIVE_LEVELS:
                group, best = maxstat_unordered(
                    counts[present],
                    np.ascontiguousarray(sums[present]),
                    mean_h,
                    A,
                    var_h,
                    prm["split_stat"],
                    float(min_leaf),
                )
                rec["split_statistic_value"] = float(best)
                if not best > 0.0:
                    return None
                cats = present[group == 0]
                goes_left = np.isin(codes, cats)
            else:  # many levels: ordered by their mean influence, then cut points
                if n_q == 1:
                    key = sums[present, 0] / counts[present]
                else:
                    key = sums[present, int(np.argmax(sums.sum(axis=0)))] / counts[present]
                rank = np.zeros(counts.size)
                rank[present[np.argsort(key, kind="stable")]] = np.arange(present.size)
                x = np.ascontiguousarray(rank[codes])
        order = np.argsort(x, kind="stable")
        if cats is None:
            xs = np.ascontiguousarray(x[order])
            n_left, stats_, best = maxstat_ordered(
                xs,
                np.ascontiguousarray(yc[order]),
                np.ascontiguousarray(yv[order]),
                classif,
                n_q,
                mean_h,
                A,
                var_h,
                prm["split_stat"],
                float(min_leaf),
            )
            if not is_cat[f]:
                mids = (xs[n_left - 1] + xs[n_left]) / 2.0
                # a midpoint of two adjacent floats may round up to the upper one
                mids = np.where(mids >= xs[n_left], xs[n_left - 1], mids)
                rec["candidate_thresholds"] = mids
                rec["candidate_threshold_statistics"] = stats_
            if best < 0:
                rec["split_statistic_value"] = 0.0
                return None
            rec["split_statistic_value"] = float(stats_[best])
            i = int(n_left[best])
            if is_cat[f]:
                cats = np.unique(codes[x <= xs[i - 1]])
                goes_left = np.isin(codes, cats)
            else:
                thr = float(mids[best])
                goes_left = x <= thr
        goes_left = self._route_missing(goes_left, observed, rng, node)
        delta = _impurity_decrease(
            classif, all_yc, all_yv, goes_left, n_classes, prm["crit"], node["impurity"]
        )
        if delta < self.min_impurity_decrease:
            rec.pop("n_missing_routed", None)
            rec.pop("n_missing_left", None)
            return None
        node["feature"] = int(f)
        if cats is not None:
            node["cats"] = np.sort(cats).astype(np.int64)
            node["threshold"] = np.nan
            rec["chosen_categories"] = [int(c) for c in node["cats"]]
        else:
            node["threshold"] = thr
            rec["chosen_threshold"] = thr
        return int(f), goes_left, delta

    def _stage_b_permutation(self, X, rows, yc, yv, n_classes, f, is_cat, prm, rng, node):
        """The paper's stage B (docs/spec.md section 4) on feature ``f``: a left-tailed permutation
        test of the weighted child impurity of every candidate threshold, threshold
        scanning, Bonferroni alpha / |C|.  Returns ``(f, goes_left, decrease)`` or None."""
        classif = self._task == "classification"
        rec = node["record"]
        m = rows.size
        parent_impurity = node["impurity"]
        all_yc, all_yv = yc, yv
        observed = np.ones(m, dtype=bool)
        if self._has_missing[f]:
            observed = ~np.isnan(X[rows, f])
        if not observed.all():  # thresholds searched and tested on the observed rows
            rows, yc, yv = _observed(X, rows, f, yc, yv)
            if rows.size < 2:
                return None
            if classif:
                counts = np.bincount(yc, minlength=n_classes).astype(np.float64)
                parent_impurity = class_impurity(counts, float(rows.size), prm["crit"])
            else:
                parent_impurity = squared_error(float(rows.size), yv.sum(), (yv * yv).sum())
        x = np.ascontiguousarray(X[rows, f])
        cat_order = None
        if is_cat[f]:
            cats = np.unique(x).astype(np.int64)
            if classif:
                target = (yc == int(np.argmax(node["value"]))).astype(np.float64)
            else:
                target = yv
            means = np.array([target[x == c].mean() for c in cats])
            cat_order = cats[np.argsort(means, kind="stable")]
            rank = np.empty(int(cats.max()) + 1)
            rank[cat_order] = np.arange(cat_order.size, dtype=np.float64)
            x = np.ascontiguousarray(rank[x.astype(np.int64)])
        cand = threshold_candidates(
            x,
            self.threshold_method,
            self.max_thresholds,
            rng=rng,
            min_samples_leaf=self._min_leaf(m),
        )
        if cand.size == 0:
            return None
        crit_name = {GINI: "gini", ENTROPY: "entropy", SQUARED_ERROR: "squared_error"}[prm["crit"]]
        gains, pos = threshold_gains(
            x, yc if classif else yv, cand, crit_name, n_classes=n_classes if classif else None
        )
        child = parent_impurity - gains
        a_spl = prm["a_spl"] / cand.size if self.adjust_alpha_splitter else prm["a_spl"]
        B2 = n_resamples(self.n_resamples_splitter, a_spl)
        if self.adjust_alpha_splitter and _is_int(self.n_resamples_splitter):
            B2 *= cand.size
        sort_idx = np.argsort(x, kind="stable")
        ycs = np.ascontiguousarray(yc[sort_idx])
        yvs = np.ascontiguousarray(yv[sort_idx])
        t_order = (
            np.argsort(child, kind="stable")
            if self.threshold_scanning
            else rng.permutation(cand.size)
        )
        rec["candidate_thresholds"] = [float(t) for t in cand]
        rec["candidate_threshold_statistics"] = [float(c) for c in child]
        if cat_order is not None:
            rec["category_order"] = [int(c) for c in cat_order]
        rec["thresholds"] = []
        rec["threshold_statistics"] = []
        rec["threshold_p_values"] = []
        rec["alpha_splitter"] = a_spl
        best_p2 = np.inf
        best_t = -1
        n_ties = 0
        seed_b = int(rng.randint(0, 2**31 - 1))
        kw = dict(alpha=a_spl, adaptive=prm["es_spl"], keep_null=self.keep_null)
        k_cls = n_classes if classif else 1
        # one seed per node: every threshold sees the same permutations, so testing the
        # first threshold alone and then the rest at once (one prefix scan per permutation)
        # gives the same p-values as testing them one by one.  With threshold scanning the
        # shared run stops once the thresholds up to the first significant one are decided
        # (testing every remaining candidate to its own decision spent most of some fits on
        # thresholds after the one that scanning stops at).
        first = splitter_test(
            classif, ycs, yvs, int(pos[t_order[0]]), prm["crit"], k_cls, B2, seed_b, **kw
        )
        results = [first]
        if not (self.threshold_scanning and first.p_value < a_spl) and t_order.size > 1:
            results += splitter_tests(
                classif,
                ycs,
                yvs,
                pos[t_order[1:]],
                prm["crit"],
                k_cls,
                B2,
                seed_b,
                stop_at_first=self.threshold_scanning,
                **kw,
            )
        for i, res in zip(t_order, results, strict=False):
            rec["thresholds"].append(float(cand[i]))
            rec["threshold_statistics"].append(res.statistic)
            rec["threshold_p_values"].append(res.p_value)
            rec.setdefault("threshold_n_permutations", []).append(res.n_permutations)
            if res.p_value < best_p2:
                best_p2, best_t, n_ties = res.p_value, int(i), 1
                best_b2, best_null = res.n_permutations, res.null
            elif res.p_value == best_p2:
                n_ties += 1
                if rng.randint(0, n_ties) == 0:
                    best_t, best_b2, best_null = int(i), res.n_permutations, res.null
            if self.threshold_scanning and res.p_value < a_spl:
                break
        if best_p2 >= a_spl:
            return None
        thr = float(cand[best_t])
        delta = float(gains[best_t])
        goes_left = x <= thr
        if not observed.all():
            goes_left = self._route_missing(goes_left, observed, rng, node)
            delta = _impurity_decrease(
                classif, all_yc, all_yv, goes_left, n_classes, prm["crit"], node["impurity"]
            )
        else:
            self._route_missing(goes_left, observed, rng, node)
        if delta < self.min_impurity_decrease or delta <= 0.0:
            rec.pop("n_missing_routed", None)
            rec.pop("n_missing_left", None)
            return None
        rec["chosen_threshold"] = thr
        node["feature"] = int(f)
        node["p_spl"] = best_p2
        node["b_spl"] = best_b2
        if self.keep_null:
            rec["threshold_null"] = best_null
        if cat_order is not None:
            node["cats"] = np.sort(cat_order[: int(math.floor(thr)) + 1])
            node["threshold"] = np.nan
        else:
            node["threshold"] = thr
        return f, goes_left, delta

    def _store(self, nodes, importances, n_classes, p, is_cat):
        classif = self._task == "classification"
        cat_offsets = cat_values = None
        if any(nd["cats"] is not None for nd in nodes):
            sizes = [0 if nd["cats"] is None else nd["cats"].size for nd in nodes]
            cat_offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
            cat_values = np.concatenate(
                [nd["cats"] for nd in nodes if nd["cats"] is not None]
            ).astype(np.int64)
        p_sel = np.array([nd["p_sel"] for nd in nodes])
        self.tree_ = TreeArrays(
            np.array([nd["left"] for nd in nodes]),
            np.array([nd["right"] for nd in nodes]),
            np.array([nd["feature"] for nd in nodes]),
            np.array([nd["threshold"] if nd["cats"] is None else 0.0 for nd in nodes]),
            np.array([nd["impurity"] for nd in nodes]),
            np.array([nd["rows_n"] for nd in nodes]),
            np.array([float(nd["rows_n"]) for nd in nodes]),
            np.stack([nd["value"] for nd in nodes])[:, None, :],
            task=self._task,
            n_features=p,
            classes_=self.classes_ if classif else None,
            p_value=p_sel,
            cat_offsets=cat_offsets,
            cat_values=cat_values,
            missing_go_to_left=np.array([nd["missing_left"] for nd in nodes], dtype=np.uint8),
        )
        self.p_value_selector_ = p_sel
        self.p_value_splitter_ = np.array([nd["p_spl"] for nd in nodes])
        self.n_permutations_selector_ = np.array([nd["b_sel"] for nd in nodes], dtype=np.int64)
        self.n_permutations_splitter_ = np.array([nd["b_spl"] for nd in nodes], dtype=np.int64)
        self.node_records_ = [nd["record"] for nd in nodes]
        total = importances.sum()
        self.feature_importances_ = importances / total if total > 0 else importances

    # -- predict ---------------------------------------------------------------------

    def _X(self, X):
        check_is_fitted(self, "tree_")
        X = validate_data(
            self, X, reset=False, dtype=np.float64, order="C", ensure_all_finite="allow-nan"
        )
        return self.tree_.check_X(X)

    def apply(self, X):
        """Leaf id (int64 ``(n,)``) of each row of ``X`` ``(n, n_features_in_)``."""
        X = self._X(X)
        return self.tree_.apply(X)

    def get_depth(self) -> int:
        """Depth of the fitted tree."""
        check_is_fitted(self, "tree_")
        return int(self.tree_.max_depth)

    def get_n_leaves(self) -> int:
        """Number of leaves of the fitted tree."""
        check_is_fitted(self, "tree_")
        return int(self.tree_.n_leaves)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # NaN is routed (missing_rule; module docstring); sparse X is refused (the
        # statistics read dense columns)
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = False
        return tags


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


class ConditionalInferenceTreeClassifier(ClassifierMixin, _BaseCIT):
    _task = "classification"
    __doc__ = (
        """Conditional inference tree classifier (Hothorn, Hornik & Zeileis 2006; the CIT
    paper's variant: Milletich et al., arXiv 2607.01417).

    At every node, stage A tests the independence of each feature and the class and
    selects the feature of smallest p-value; the node is a leaf unless it is below the
    level.  Stage B then chooses the split point on that feature.  By default both follow
    R partykit's ``ctree``: asymptotic p-values of the linear statistic (Strasser & Weber
    1999) adjusted for the m features tested, and the cut point with the largest
    maximally selected statistic; :data:`PAPER_SETTINGS` gives the CIT paper's procedure
    (Monte Carlo permutation tests in both stages).  Categorical features (integer codes)
    are split by category sets.

    Parameters
    ----------
"""
        + _selector_splitter_doc("classification")
        + COMMON_PARAMETERS_DOC.format(max_features="None")
        + """    keep_null : bool, default=False
        Keep the permutation null distributions in ``node_records_``.
    random_state : None, int or numpy.random.RandomState, default=None
        Seeds the permutations, the feature draws and the tie breaks.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.
    n_classes_ : int
        Number of classes.
"""
        + _TREE_ATTRIBUTES_DOC
        + """
    See Also
    --------
    ConditionalInferenceForestClassifier : a bootstrap forest of these trees.

    Notes
    -----
    Missing values (NaN in ``X``) are handled as R partykit's ``ctree`` (module
    docstring, ``missing_rule``); sparse ``X`` is refused.  Bad parameters raise
    :class:`sklearn.utils._param_validation.InvalidParameterError` (a ``ValueError``)
    naming the parameter and its allowed values.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from engine.cit import ConditionalInferenceTreeClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = ConditionalInferenceTreeClassifier(random_state=0).fit(X, y)
    >>> bool(clf.p_value_selector_[0] < 0.05), bool(clf.score(X, y) > 0.9)
    (True, True)
"""
    )
    _parameter_constraints: dict = {
        **CLASSIFICATION_CONSTRAINTS,
        **TREE_CONSTRAINTS,
        "keep_null": ["boolean"],
    }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Grow the tree on ``X`` (n, p) and class labels ``y`` (n,); returns ``self``.

        Raises ``InvalidParameterError`` (a ``ValueError``) for bad parameters and
        ``ValueError`` with scikit-learn's messages for bad data (NaN / inf, empty, a
        continuous target, mismatched lengths); ``TypeError`` for sparse ``X``.
        """
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", ensure_all_finite="allow-nan")
        check_classification_targets(y)
        self.classes_, y_code = np.unique(y, return_inverse=True)
        self.n_classes_ = self.classes_.size
        y_code = np.ascontiguousarray(y_code, dtype=np.int64)
        return self._fit(X, y_code, np.zeros(X.shape[0]), self.n_classes_)

    def predict_proba(self, X):
        """Class fractions of the reached leaf: float64 ``(n, n_classes)``."""
        X = self._X(X)
        return self.tree_.predict_proba(X)

    def predict(self, X):
        """Majority class of the reached leaf: ``(n,)``."""
        X = self._X(X)
        return self.tree_.predict(X)


class ConditionalInferenceTreeRegressor(RegressorMixin, _BaseCIT):
    _task = "regression"
    __doc__ = (
        """Conditional inference tree regressor (Milletich et al., arXiv 2607.01417).

    As :class:`ConditionalInferenceTreeClassifier` with a numeric target: by default
    ctree's asymptotic test of the linear statistic of each feature and y (for a numeric
    feature a chi-square test of (n - 1) r^2, r Pearson's correlation) and its maximally
    selected split point; with :data:`PAPER_SETTINGS` permutation tests of |Pearson r|
    (the correlation ratio for a categorical feature) and of the children's squared
    error.

    Parameters
    ----------
"""
        + _selector_splitter_doc("regression")
        + COMMON_PARAMETERS_DOC.format(max_features="None")
        + """    keep_null : bool, default=False
        Keep the permutation null distributions in ``node_records_``.
    random_state : None, int or numpy.random.RandomState, default=None
        Seeds the permutations, the feature draws and the tie breaks.

    Attributes
    ----------
"""
        + _TREE_ATTRIBUTES_DOC
        + """
    See Also
    --------
    ConditionalInferenceForestRegressor : a bootstrap forest of these trees.

    Notes
    -----
    Missing values (NaN in ``X``) are handled as R partykit's ``ctree`` (module
    docstring, ``missing_rule``); sparse ``X`` is refused.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.cit import ConditionalInferenceTreeRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = np.where(X[:, 1] > 0, 2.0, -2.0) + rng.normal(scale=0.1, size=200)
    >>> reg = ConditionalInferenceTreeRegressor(random_state=0).fit(X, y)
    >>> int(reg.tree_.feature[0])
    1
"""
    )
    _parameter_constraints: dict = {
        **REGRESSION_CONSTRAINTS,
        **TREE_CONSTRAINTS,
        "keep_null": ["boolean"],
    }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Grow the tree on ``X`` (n, p) and numeric ``y`` (n,); returns ``self``.

        Raises ``InvalidParameterError`` (a ``ValueError``) for bad parameters and
        ``ValueError`` with scikit-learn's messages for bad data; ``TypeError`` for sparse
        ``X``.
        """
        X, y = validate_data(
            self, X, y, dtype=np.float64, order="C", y_numeric=True, ensure_all_finite="allow-nan"
        )
        y_val = np.ascontiguousarray(y, dtype=np.float64)
        return self._fit(X, np.zeros(X.shape[0], dtype=np.int64), y_val, 1)

    def predict(self, X):
        """Mean target of the reached leaf: float64 ``(n,)``."""
        X = self._X(X)
        return self.tree_.predict(X)


# ---------------------------------------------------------------------------------------
# Compare page registration and warm-up
# ---------------------------------------------------------------------------------------


def _build_cit(task, random_state, **params):
    cls = (
        ConditionalInferenceTreeClassifier
        if task == "classification"
        else ConditionalInferenceTreeRegressor
    )
    return cls(random_state=random_state, **params)


def tree_param_specs(estimator) -> tuple[ParamSpec, ...]:
    """The Compare page's widgets for a conditional inference tree or forest
    ``estimator`` (class), their ranges and choices read from its constraint table."""
    return (
        param_spec(
            estimator,
            "p_value",
            "asymptotic",
            kind="choice",
            choices=P_VALUE_METHODS,
            help="Stage-A p-values: asymptotic (R partykit's ctree, exact to the chi-square "
            "limit) or Monte Carlo permutation tests (the CIT paper; floored at 1/(B+1)).",
        ),
        param_spec(
            estimator,
            "alpha_selector",
            0.05,
            low=0.001,
            high=0.5,
            help="Level of the stage-A test (adjusted for the features tested at the node).",
        ),
        param_spec(
            estimator,
            "n_resamples_selector",
            "auto",
            kind="choice",
            choices=("auto", "minimum", "maximum"),
            help="Permutation p-values only: permutations per stage-A test, presets at the "
            "adjusted level a (minimum ceil(1/a), auto, maximum ceil(1/(4 a^2))).",
        ),
        param_spec(
            estimator, "max_depth", 0, high=50, help="Maximum depth of the tree; 0 means unlimited."
        ),
        param_spec(
            estimator,
            "missing_rule",
            "random",
            kind="choice",
            choices=MISSING_RULES,
            help="Where a split sends rows whose split feature is missing: at random in "
            "proportion to the observed rows on each side (R partykit's ctree default) or "
            "all to the child with more observed rows (ctree's majority = TRUE).",
        ),
        param_spec(
            estimator,
            "min_samples_leaf",
            7,
            high=1000,
            help="Minimum number of training rows in a leaf (ctree's minbucket).",
        ),
    )


CIT_PARAMS = tree_param_specs(ConditionalInferenceTreeClassifier)

register_model(
    ModelSpec(
        key="treelab_cit",
        label="Conditional inference tree (TreeLab)",
        build=_build_cit,
        params=CIT_PARAMS,
        description="Splits only when a test of independence finds an association (stage A "
        "picks the feature, stage B the split point); defaults as R partykit's ctree "
        "(asymptotic p-values), the CIT paper's permutation tests as an option.",
        family="TreeLab",
    )
)


@register_warmup("cit.tree")
def _warmup() -> None:
    """Fit tiny trees through every code path (both tasks, mi selector, categorical)."""
    rng = np.random.RandomState(0)
    X = np.column_stack([np.arange(30.0), rng.randint(0, 3, 30).astype(np.float64)])
    y = (X[:, 0] > 14).astype(np.int64)
    for sel in ("mc", "mi"):
        for spl in ("gini", "entropy"):
            ConditionalInferenceTreeClassifier(
                selector=sel, splitter=spl, categorical_features=[1], random_state=0
            ).fit(X, y)
    ConditionalInferenceTreeRegressor(categorical_features=[1], random_state=0).fit(
        X, X[:, 0] * 1.0
    )
