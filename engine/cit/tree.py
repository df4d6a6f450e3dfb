"""Conditional inference trees (docs/spec.md section 4): stage A (permutation-tested feature
selection) then stage B (permutation-tested threshold search) at every node.

Public API: :class:`ConditionalInferenceTreeClassifier`,
:class:`ConditionalInferenceTreeRegressor` and :func:`threshold_candidates`.

A fitted estimator has ``tree_`` (:class:`engine.tree.TreeArrays`, with ``p_value`` = the
stage-A p-value of each split, ``nan`` at leaves), ``feature_importances_`` (impurity
decrease per split, **not** weighted by the node size, normalised to sum 1; all zeros when
the root is a leaf), the per-node arrays ``p_value_selector_``, ``p_value_splitter_``,
``n_permutations_selector_``, ``n_permutations_splitter_`` (nan / 0 at leaves) and
``node_records_``: one dict per node with every tested feature's statistic, p-value and
permutations (``features``, ``statistics``, ``p_values``, ``n_permutations``, in test
order), the level ``alpha_selector`` used (after Bonferroni), the features drawn for the
node's stage A (``candidates``, ``n_tested`` = m_t of the Bonferroni division) with their raw
statistics (``candidate_statistics``; with feature scanning the test stops at the first
significant one, so later candidates have a statistic but no p-value), stage B's
candidate thresholds with the weighted child impurity of each (``candidate_thresholds``,
``candidate_threshold_statistics``; for a categorical feature the thresholds are positions
in ``category_order``, the node's categories sorted by mean target), the tested thresholds
(``thresholds``, ``threshold_statistics``, ``threshold_p_values``, ``alpha_splitter``) and
at a split the ``chosen_threshold`` (on that same scale), and with ``keep_null=True`` the
permutation null distributions (``nulls``: feature -> array; ``threshold_null``: the chosen
threshold's null).

Categorical features (``categorical_features``: mask or indices; integer codes 0..C-1):
stage A uses the plug-in mutual information of the codes (classification) or the
correlation ratio of ``y`` across the categories (regression); stage B orders the node's
categories by their mean target (classification: the fraction of the node's majority
class) and searches thresholds on that order; the split is stored as a category set
(``cat_offsets``/``cat_values`` of ``tree_``: listed categories go left).
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

from engine._numba import register_warmup
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
_SPLITTERS_CLF = {"gini": GINI, "entropy": ENTROPY}
_SPLITTERS_REG = {"mse": SQUARED_ERROR, "squared_error": SQUARED_ERROR}


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
    "min_impurity_decrease": [Interval(Real, 0, None, closed="left")],
    "categorical_features": ["array-like", None],
    "random_state": ["random_state"],
}
CLASSIFICATION_CONSTRAINTS: dict = {
    "selector": [StrOptions(set(CLASSIFICATION_SELECTORS)), None],
    "splitter": [StrOptions(set(_SPLITTERS_CLF)), None],
}
REGRESSION_CONSTRAINTS: dict = {
    "selector": [StrOptions(set(REGRESSION_SELECTORS)), None],
    "splitter": [StrOptions(set(_SPLITTERS_REG)), None],
}


class _BaseCIT(BaseEstimator):
    _task = "classification"

    def __init__(
        self,
        *,
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
        feature_muting=True,
        feature_scanning=True,
        threshold_scanning=True,
        threshold_method="exact",
        max_thresholds=None,
        max_features=None,
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_impurity_decrease=0.0,
        categorical_features=None,
        keep_null=False,
        random_state=None,
    ):
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
        self.min_impurity_decrease = min_impurity_decrease
        self.categorical_features = categorical_features
        self.keep_null = keep_null
        self.random_state = random_state

    # -- parameters ------------------------------------------------------------------

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
        """The validated selector, splitter, levels and early stopping as the kernels take
        them (None selector / splitter = the task's default: 'mc' / 'gini' for
        classification, 'pc' / 'mse' for regression)."""
        classif = self._task == "classification"
        sel = self.selector if self.selector is not None else ("mc" if classif else "pc")
        spl = self.splitter if self.splitter is not None else ("gini" if classif else "mse")
        table = CLASSIFICATION_SELECTORS if classif else REGRESSION_SELECTORS
        stable = _SPLITTERS_CLF if classif else _SPLITTERS_REG
        return dict(
            sel=table[sel],
            crit=stable[spl],
            a_sel=float(self.alpha_selector),
            a_spl=float(self.alpha_splitter),
            es_sel=_early(self.early_stopping_selector),
            es_spl=_early(self.early_stopping_splitter),
        )

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
            if np.any(col < 0) or np.any(col != np.round(col)):
                raise ValueError(f"categorical feature {j} must hold integer codes 0, 1, ...")
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
        classif = self._task == "classification"
        m = rows.size
        if m < self.min_samples_split or depth >= max_depth or m < 2 * self.min_samples_leaf:
            return None
        if node["impurity"] <= 1e-12:
            return None
        Xn = X[rows]
        # drop features constant at the node (for the whole subtree)
        nonconst = np.array(
            [f for f in pool if Xn[0, f] != Xn[:, f].min() or Xn[:, f].max() != Xn[0, f]],
            dtype=np.int64,
        )
        if nonconst.size == 0:
            return None
        k = self._n_features_node(nonconst.size)
        tested = (
            np.sort(rng.choice(nonconst, size=k, replace=False)) if k < nonconst.size else nonconst
        )
        m_t = tested.size
        a_sel = prm["a_sel"] / m_t if self.adjust_alpha_selector else prm["a_sel"]
        B = n_resamples(self.n_resamples_selector, a_sel)
        if self.adjust_alpha_selector and _is_int(self.n_resamples_selector):
            B *= m_t  # as citrees: an integer B is per test at the unadjusted level
        prepared = []
        stats = []
        for f in tested:
            x = np.ascontiguousarray(Xn[:, f])
            if is_cat[f]:
                a, n_a = bin_codes(x, categorical=True)
                code = MI if classif else ETA_REG
            elif prm["sel"] == MI:
                a, n_a = bin_codes(x)
                code = MI
            else:
                a, n_a = np.zeros(m, dtype=np.int64), 1
                code = prm["sel"]
            stats.append(statistic(code, x, a, n_a, yc, yv, n_classes))
            prepared.append((code, x, a, n_a))
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
            code, x, a, n_a = prepared[i]
            res = selector_test(
                code,
                x,
                a,
                n_a,
                yc,
                yv,
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
        node["p_sel"] = best_p
        node["b_sel"] = best_b
        # ---- stage B
        f = best_f
        x = np.ascontiguousarray(Xn[:, f])
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
            min_samples_leaf=self.min_samples_leaf,
        )
        if cand.size == 0:
            return None
        crit_name = {GINI: "gini", ENTROPY: "entropy", SQUARED_ERROR: "squared_error"}[prm["crit"]]
        gains, pos = threshold_gains(
            x, yc if classif else yv, cand, crit_name, n_classes=n_classes if classif else None
        )
        child = node["impurity"] - gains
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
        delta = float(gains[best_t])
        if delta < self.min_impurity_decrease or delta <= 0.0:
            return None
        thr = float(cand[best_t])
        rec["chosen_threshold"] = thr
        goes_left = x <= thr
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
        return f, goes_left, child_pool, delta

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
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
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
        # the trees do not route missing values (yet): NaN is refused with scikit-learn's
        # message; sparse X is refused (the statistics read dense columns)
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        return tags


def _selector_splitter_doc(task: str) -> str:
    if task == "classification":
        return """    selector : {'mc', 'mi'} or None, default=None
        Stage-A statistic: 'mc' the correlation ratio eta = sqrt(SSB / SST) of the feature
        across the classes, 'mi' the plug-in mutual information of the binned feature and
        the class; None = 'mc'.
    splitter : {'gini', 'entropy'} or None, default=None
        Stage-B impurity of the two children; None = 'gini'.
"""
    return """    selector : {'pc'} or None, default=None
        Stage-A statistic: 'pc' the absolute Pearson correlation of the feature and y;
        None = 'pc'.
    splitter : {'mse', 'squared_error'} or None, default=None
        Stage-B impurity of the two children (both names are the squared error); None =
        'mse'.
"""


#: numpydoc of the parameters shared by the trees and the forests, after selector and
#: splitter (``{max_features}`` is the default: None for a tree, 'sqrt' for a forest).
COMMON_PARAMETERS_DOC = """    alpha_selector : float in (0, 1), default=0.05
        Level of stage A's permutation test, divided by the number of features tested at
        the node when ``adjust_alpha_selector`` (Bonferroni).
    alpha_splitter : float in (0, 1), default=0.05
        Level of stage B's permutation test, divided by the number of candidate
        thresholds when ``adjust_alpha_splitter``.
    adjust_alpha_selector, adjust_alpha_splitter : bool, default=True
        Bonferroni adjustment of the two levels; with an int ``n_resamples_*`` the number
        of permutations is also multiplied by the number of tests (as citrees).
    n_resamples_selector, n_resamples_splitter : int >= 1 or \
{{'minimum', 'auto', 'maximum'}}, default='auto'
        Permutations B per test: an int, or a preset at the adjusted level a: 'minimum'
        ceil(1 / a), 'auto' max(ceil(1 / a), ceil(z^2 (1 - a) / a)) with z = Phi^-1(1 - a),
        'maximum' ceil(1 / (4 a^2)).
    early_stopping_selector, early_stopping_splitter : {{'adaptive', 'none'}}, bool or \
None, default='adaptive'
        Adaptive stopping: after at least ceil(1 / a) permutations with L exceedances, stop
        when S = BetaCDF(a; 1 + L, 1 + n - L) >= 0.95 or 1 - S >= 0.95; None, False or
        'none' run all B permutations.
    feature_muting : bool, default=True
        A feature not rejected at a node leaves the pool of that node's descendants.
    feature_scanning : bool, default=True
        Test features by descending raw statistic and stop at the first significant one.
    threshold_scanning : bool, default=True
        Test thresholds by ascending child impurity and stop at the first significant one.
    threshold_method : {{'exact', 'random', 'percentile', 'histogram'}}, default='exact'
        Stage-B candidate thresholds (:func:`threshold_candidates`).
    max_thresholds : int >= 1, float in (0, 1], {{'sqrt', 'log2'}} or None, default=None
        k of the non-exact threshold methods, on the number of unique values (None =
        'sqrt').
    max_features : int >= 1, float in (0, 1], {{'sqrt', 'log2'}} or None, \
default={max_features}
        Features drawn without replacement for stage A at each node (None = all).
    max_depth : int >= 0 or None, default=None
        Maximum depth (0 = the root is a leaf, None = unlimited).
    min_samples_split : int >= 2, default=2
        Fewest rows of a node that may be split.
    min_samples_leaf : int >= 1, default=1
        Fewest rows of a child; thresholds leaving fewer are dropped.
    min_impurity_decrease : float >= 0, default=0.0
        A significant split is kept only when its impurity decrease (node impurity minus
        the weighted impurity of the children) is at least this.
    categorical_features : array-like of int or of bool, or None, default=None
        Columns holding integer codes 0, 1, ...: column indices or a boolean mask of length
        n_features.
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
        Stage-A and stage-B p-values of each split (nan at leaves).
    n_permutations_selector_, n_permutations_splitter_ : ndarray of shape (n_nodes,)
        Permutations those tests used (0 at leaves).
    node_records_ : list of dict
        One per node: every tested feature's statistic, p-value and permutations, the
        levels used, stage B's candidate thresholds and their statistics (see the module
        docstring).
"""


class ConditionalInferenceTreeClassifier(ClassifierMixin, _BaseCIT):
    _task = "classification"
    __doc__ = (
        """Conditional inference tree classifier (Milletich et al., arXiv 2607.01417).

    At every node, stage A tests the association of each feature with the class by a
    Monte Carlo permutation test (p = (1 + #{T_b >= T}) / (B + 1)) and selects the feature
    of smallest p-value; the node is a leaf unless it is below the (Bonferroni-adjusted)
    level.  Stage B tests the candidate thresholds of that feature the same way on the
    children's impurity.  Categorical features (integer codes) are split by category sets.

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
    Missing values are not routed: NaN in ``X`` is refused (``allow_nan`` tag False), as
    is sparse ``X``.  Bad parameters raise
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
        X, y = validate_data(self, X, y, dtype=np.float64, order="C")
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

    As :class:`ConditionalInferenceTreeClassifier` with a continuous target: stage A tests
    the absolute Pearson correlation of each feature with y (the correlation ratio for a
    categorical feature), stage B the squared error of the children.

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
    Missing values are not routed: NaN in ``X`` is refused (``allow_nan`` tag False), as
    is sparse ``X``.

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
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=True)
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
            "alpha_selector",
            0.05,
            low=0.001,
            high=0.5,
            help="Level of the stage-A permutation test (Bonferroni-adjusted per node).",
        ),
        param_spec(
            estimator,
            "n_resamples_selector",
            "auto",
            kind="choice",
            choices=("auto", "minimum", "maximum"),
            help="Permutations per stage-A test: presets at the adjusted level "
            "(minimum ceil(1/a), auto, maximum ceil(1/(4 a^2))).",
        ),
        param_spec(
            estimator, "max_depth", 0, high=50, help="Maximum depth of the tree; 0 means unlimited."
        ),
        param_spec(
            estimator,
            "min_samples_leaf",
            1,
            high=1000,
            help="Minimum number of training rows in a leaf.",
        ),
    )


CIT_PARAMS = tree_param_specs(ConditionalInferenceTreeClassifier)

register_model(
    ModelSpec(
        key="treelab_cit",
        label="Conditional inference tree (TreeLab)",
        build=_build_cit,
        params=CIT_PARAMS,
        description="Splits only when a permutation test finds an association (stage A picks "
        "the feature, stage B the threshold); Milletich et al., arXiv 2607.01417.",
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
