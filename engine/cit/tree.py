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

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from engine._numba import register_warmup
from engine.cit.asymptotic import (
    TESTSTATS,
)
from engine.cit.parameters import (  # the tables and texts, re-exported for forest.py
    _MAXSTAT_IMPURITY,
    _SPLITTERS_CLF,
    _SPLITTERS_REG,
    _TREE_ATTRIBUTES_DOC,
    CLASSIFICATION_CONSTRAINTS,
    COMMON_PARAMETERS_DOC,
    MAXSTAT_SPLITTERS,
    MISSING_RULES,
    MISSING_VALUES_CAPTION,
    P_VALUE_METHODS,
    PAPER_SETTINGS,
    REGRESSION_CONSTRAINTS,
    SPLIT_TRIES,
    TREE_CONSTRAINTS,
    _early,
    _is_int,
    _selector_splitter_doc,
)
from engine.cit.stages import NodeTests, _ctree_order
from engine.cit.statistics import (
    CLASSIFICATION_SELECTORS,
    REGRESSION_SELECTORS,
)
from engine.cit.thresholds import (
    CONSTANT_ULPS,
    THRESHOLD_METHODS,
    column_ranges,
    is_constant,
    threshold_candidates,
)
from engine.compare import ModelSpec, ParamSpec, param_spec, register_model
from engine.criteria import (
    class_impurity,
    squared_error,
    weighted_class_counts,
)
from engine.tree import TreeArrays

#: Names importers have always found in this module (defined in the modules above).
__all__ = [
    "CLASSIFICATION_CONSTRAINTS",
    "COMMON_PARAMETERS_DOC",
    "CONSTANT_ULPS",
    "MISSING_RULES",
    "MISSING_VALUES_CAPTION",
    "PAPER_SETTINGS",
    "REGRESSION_CONSTRAINTS",
    "THRESHOLD_METHODS",
    "TREE_CONSTRAINTS",
    "ConditionalInferenceTreeClassifier",
    "ConditionalInferenceTreeRegressor",
    "_ctree_order",
    "_selector_splitter_doc",
    "threshold_candidates",
    "tree_param_specs",
]


class _BaseCIT(NodeTests, BaseEstimator):
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


#: The parameters both trees document after :data:`COMMON_PARAMETERS_DOC`.
_LAST_PARAMETERS_DOC = """    keep_null : bool, default=False
        Keep the permutation null distributions in ``node_records_``.
    random_state : None, int or numpy.random.RandomState, default=None
        Seeds the permutations, the feature draws and the tie breaks.
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
        + _LAST_PARAMETERS_DOC
        + """
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
        + _LAST_PARAMETERS_DOC
        + """
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
        tree_figure=True,
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
